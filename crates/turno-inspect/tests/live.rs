//! Live mode's exposure rules: loopback by default; any other address only
//! with a token, and with a token the WebSocket only for a page that
//! presents it.
#![cfg(feature = "live")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use turno_inspect::live::{start, LiveOptions};
use turno_inspect::Error;

/// The status line of a WebSocket upgrade request for `path`.
fn upgrade_status(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    head.lines().next().unwrap_or_default().to_owned()
}

fn addr_of(url: &str) -> SocketAddr {
    let rest = url.strip_prefix("http://").unwrap();
    rest[..rest.find('/').unwrap()].parse().unwrap()
}

#[test]
fn live_mode_binds_loopback_by_default_and_needs_no_token_there() {
    let (live, _sink) = start(LiveOptions::default()).unwrap();
    let addr = addr_of(live.url());
    assert!(addr.ip().is_loopback(), "{}", live.url());
    assert_eq!(live.url(), format!("http://{addr}/?live"));
    assert!(upgrade_status(addr, "/api/live").contains(" 101 "));
}

#[test]
fn an_address_that_is_not_loopback_is_refused_without_a_token() {
    let opts = LiveOptions {
        addr: "0.0.0.0:0".parse().unwrap(),
        ..LiveOptions::default()
    };
    match start(opts) {
        Err(e @ Error::TokenRequired(_)) => {
            assert_eq!(
                e.to_string(),
                "live mode on 0.0.0.0:0 (not loopback) needs a token"
            )
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("bound 0.0.0.0 without a token"),
    }
}

#[test]
fn with_a_token_the_websocket_needs_it() {
    let opts = LiveOptions {
        token: Some("s3cret-token".into()),
        ..LiveOptions::default()
    };
    let (live, _sink) = start(opts).unwrap();
    let addr = addr_of(live.url());
    assert_eq!(
        live.url(),
        format!("http://{addr}/?live&token=s3cret-token")
    );
    assert!(upgrade_status(addr, "/api/live").contains(" 401 "));
    assert!(upgrade_status(addr, "/api/live?token=s3cret-tokeN").contains(" 401 "));
    assert!(upgrade_status(addr, "/api/live?token=s3cret").contains(" 401 "));
    assert!(upgrade_status(addr, "/api/live?token=s3cret-token").contains(" 101 "));
}

/// `GET path` on the live server: the status line and the body.
fn get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// Sends `burst` messages at once every `period`.
struct Flood {
    to: turno::Addr<u32>,
    burst: u32,
    period: Duration,
}

impl turno::Actor for Flood {
    type Msg = ();
    fn started(&mut self, ctx: &mut turno::Context<'_, Self>) {
        ctx.send_after(Duration::ZERO, ());
    }
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, _tick: ()) {
        for i in 0..self.burst {
            let _ = ctx.send(&self.to, i);
        }
        ctx.send_after(self.period, ());
    }
}

struct Slow;

impl turno::Actor for Slow {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, _n: u32) {
        ctx.simulate_work(Duration::from_millis(10));
    }
}

/// A keep-newest(5) mailbox sent 8 messages every 100 ms and taking 10 ms
/// a message: full at every burst, three evicted each time.
fn flooded(sink: turno_inspect::live::LiveSink, seconds: u64) {
    use turno::{DetSystem, Policy, Props, System};
    let mut sys = DetSystem::builder().trace(sink).metrics(false).build();
    let slow = sys
        .spawn(
            Props::new().name("slow").mailbox(Policy::KeepNewest(5)),
            || Slow,
        )
        .unwrap();
    sys.spawn(Props::new().name("flood"), move || Flood {
        to: slow.clone(),
        burst: 8,
        period: Duration::from_millis(100),
    })
    .unwrap();
    sys.advance(Duration::from_secs(seconds)).unwrap();
}

#[test]
fn live_queue_plots_follow_the_running_system() {
    let (live, sink) = start(LiveOptions::default()).unwrap();
    let addr = addr_of(live.url());
    flooded(sink, 3);
    let (status, body) = get(addr, "/api/queues?px=300");
    assert!(status.contains(" 200 "), "{status}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["t0"], 0);
    assert_eq!(v["t1"], live.world().t_ns);
    assert_eq!(v["window_ns"], 60_000_000_000u64);
    let plots = v["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 1, "{body}");
    let p = &plots[0];
    assert_eq!(p["name"], "slow");
    assert_eq!(p["policy"], "keep-newest(5)");
    // The deepest the system's mailbox got, as its world counts it: a
    // whole burst lands within the sender's turn, and keep-newest makes the
    // evictions it owes when the consumer next takes.
    let world = live.world();
    let reached = world
        .actors
        .values()
        .find(|a| a.name == "slow")
        .unwrap()
        .max_depth;
    assert_eq!(reached, 8);
    assert_eq!(p["max_depth"], reached);
    let buckets = p["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 300);
    let drawn = buckets.iter().map(|b| b["depth"].as_u64().unwrap()).max();
    assert_eq!(drawn, Some(reached as u64));
    // 31 bursts of 8 (at 0 s to 3 s): every message evicted, taken, or
    // still queued at the end.
    let evicted: u64 = buckets.iter().map(|b| b["evicted"].as_u64().unwrap()).sum();
    let taken: u64 = buckets.iter().map(|b| b["taken"].as_u64().unwrap()).sum();
    let queued = world
        .actors
        .values()
        .find(|a| a.name == "slow")
        .unwrap()
        .user
        .depth() as u64;
    assert_eq!(
        evicted + taken + queued,
        31 * 8,
        "{evicted} evicted, {taken} taken, {queued} queued"
    );
    assert!(evicted > 0);
}

#[test]
fn live_queue_plots_keep_a_window_of_the_latest_time() {
    let opts = LiveOptions {
        window: Duration::from_secs(1),
        ..LiveOptions::default()
    };
    let (live, sink) = start(opts).unwrap();
    let addr = addr_of(live.url());
    flooded(sink, 10);
    let end = live.world().t_ns;
    let since = live.queues().since();
    // Trimmed an eighth of the window at a time: never more than that
    // beyond the window is held, and nothing inside it is lost.
    assert!(
        since <= end - 1_000_000_000 && since + 1_125_000_000 >= end,
        "{since} for an end at {end}"
    );
    let (_, body) = get(addr, "/api/queues?px=50");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["t0"], since);
    assert_eq!(v["t1"], end);
    // Ten bursts a second: the window still shows a whole burst queued.
    let buckets = v["plots"][0]["buckets"].as_array().unwrap();
    let drawn = buckets.iter().map(|b| b["depth"].as_u64().unwrap()).max();
    assert_eq!(drawn, Some(8));
}

#[test]
fn with_a_token_the_queue_plots_need_it() {
    let opts = LiveOptions {
        token: Some("s3cret-token".into()),
        ..LiveOptions::default()
    };
    let (live, _sink) = start(opts).unwrap();
    let addr = addr_of(live.url());
    assert!(get(addr, "/api/queues?px=10").0.contains(" 401 "));
    assert!(get(addr, "/api/queues?px=10&token=s3cret")
        .0
        .contains(" 401 "));
    let (status, body) = get(addr, "/api/queues?px=10&token=s3cret-token");
    assert!(status.contains(" 200 "), "{status}");
    assert!(body.contains("\"plots\":[]"), "{body}");
}
