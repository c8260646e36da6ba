//! `turno-bench cluster`: turno-cluster nodes over a real nats-server
//! against raw async-nats, between two processes on loopback.
//!
//! The bench starts one nats-server (`$TURNO_NATS_SERVER`, else
//! `nats-server` on the `PATH`) on a free loopback port and one peer
//! process (this binary, `cluster-peer`), which holds both receivers: a
//! turno node `b` (a counting sink at `/sink`, its count asked at
//! `/count`, an echo at `/echo`) and a raw async-nats client on a
//! connection of its own (`raw.tell` counted, `raw.count` and `raw.echo`
//! answered). Both receivers decode the same payload ([`Payload`], postcard)
//! and the raw sender publishes the bytes turno's codec makes of it.
//!
//! In each round, alternated, this process measures:
//!
//! - **tell throughput**: `--n` tells to `/sink` against `--n` raw
//!   publishes to `raw.tell`, timed until the receiver counted them all
//!   (its count is asked until it stops growing; a count short of `--n` is
//!   reported as lost). A tell the client's bounded buffer refused is
//!   tried again (the retries are reported).
//! - **round trips**, one request at a time: a send with a verdict to
//!   `/sink` and an ask to `/echo`, against a raw request/reply to
//!   `raw.echo`; p50 and p99.
//!
//! Then **failure detection**: `--kills` times, a fresh peer process
//! (node `v`) starts, this node learns it from its heartbeats and watches
//! its `/sink`, the peer is SIGKILLed, and the time from the kill to the
//! watch's node-down notice is recorded (heartbeat every 100 ms, down
//! after 500 ms: the defaults). p50, p99 and the largest.
//!
//! Figures are printed per round and as medians; `--json` prints one
//! object. Build with `--release`.

use std::cell::{Cell, RefCell};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use turno::{Actor, Context, LocalSystem, Policy, Props, System};
use turno_cluster::nats::{NatsOptions, NatsTransport};
use turno_cluster::node::{
    fresh_incarnation, Node, NodeConfig, RemoteAddr, RemoteReplyTo, RemoteResponse,
};
use turno_cluster::transport::Transport as _;
use turno_cluster::wire::{Codec, RemoteExit};

use crate::Args;

/// What every sender sends: a sequence number and 64 bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Payload {
    /// The sender's sequence number.
    pub seq: u64,
    /// Filler.
    pub body: Vec<u8>,
}

fn payload(seq: u64) -> Payload {
    Payload {
        seq,
        body: vec![7u8; 64],
    }
}

/// The peer's environment: the server's URL and the node's name.
const URL_VAR: &str = "TURNO_BENCH_NATS_URL";
const NAME_VAR: &str = "TURNO_BENCH_NODE";

type N = Node<LocalSystem, NatsTransport>;

struct Sink(Arc<AtomicU64>);
impl Actor for Sink {
    type Msg = Payload;
    fn handle(&mut self, _: &mut Context<'_, Self>, _: Payload) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

struct Count(Arc<AtomicU64>);
impl Actor for Count {
    type Msg = RemoteReplyTo<u64>;
    fn handle(&mut self, _: &mut Context<'_, Self>, r: RemoteReplyTo<u64>) {
        let _ = r.reply(self.0.load(Ordering::Relaxed));
    }
}

struct Echo;
impl Actor for Echo {
    type Msg = (Payload, RemoteReplyTo<Payload>);
    fn handle(&mut self, _: &mut Context<'_, Self>, (p, r): Self::Msg) {
        let _ = r.reply(p);
    }
}

/// The processes this bench started and has not stopped yet: `fail` exits
/// without running destructors, so it stops them itself.
static CHILDREN: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn fail(what: impl std::fmt::Display) -> ! {
    eprintln!("turno-bench cluster: {what}");
    let pids = CHILDREN.lock().map(|v| v.clone()).unwrap_or_default();
    for pid in pids {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    std::process::exit(2);
}

fn register(node: &mut N) {
    if let Err(e) = node
        .register::<Payload>("payload")
        .and_then(|_| node.register::<u64>("u64"))
    {
        fail(e);
    }
}

fn connect_node(url: &str, name: &str) -> N {
    let t = NatsTransport::connect(&[url], NatsOptions::default()).unwrap_or_else(|e| fail(e));
    let mut node = Node::new(
        name,
        fresh_incarnation(),
        LocalSystem::new(),
        t,
        NodeConfig::default(),
    )
    .unwrap_or_else(|e| fail(e));
    register(&mut node);
    node
}

/// The peer process: node `$TURNO_BENCH_NODE` and the raw receivers, until
/// killed or its server goes away.
pub fn peer() {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| fail(format!("{URL_VAR} is not set")));
    let name = std::env::var(NAME_VAR).unwrap_or_else(|_| "b".into());
    // The raw receiver, on a runtime and connection of its own.
    let raw_url = url.clone();
    std::thread::spawn(move || raw_peer(&raw_url));
    let mut node = connect_node(&url, &name);
    let count = Arc::new(AtomicU64::new(0));
    let sys = node.system();
    let c = count.clone();
    let sink = sys
        .spawn(
            Props::new()
                .name("sink")
                .mailbox(Policy::KeepOldest(1 << 20)),
            move || Sink(c.clone()),
        )
        .unwrap_or_else(|e| fail(e));
    let c = count.clone();
    let counter = sys
        .spawn(Props::new().name("count"), move || Count(c.clone()))
        .unwrap_or_else(|e| fail(e));
    let echo = sys
        .spawn(Props::new().name("echo"), || Echo)
        .unwrap_or_else(|e| fail(e));
    node.export(&sink).unwrap_or_else(|e| fail(e));
    node.export_ask(&counter, |_: u64, r| r)
        .unwrap_or_else(|e| fail(e));
    node.export_ask(&echo, |p: Payload, r| (p, r))
        .unwrap_or_else(|e| fail(e));
    loop {
        node.pump();
        node.system_mut().settle(Duration::from_millis(20));
        node.pump();
        node.transport_mut().wait(Duration::from_millis(2));
    }
}

fn raw_peer(url: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(e));
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap_or_else(|e| fail(e));
        let count = Arc::new(AtomicU64::new(0));
        let mut tells = client
            .subscribe("raw.tell")
            .await
            .unwrap_or_else(|e| fail(e));
        let mut counts = client
            .subscribe("raw.count")
            .await
            .unwrap_or_else(|e| fail(e));
        let mut echoes = client
            .subscribe("raw.echo")
            .await
            .unwrap_or_else(|e| fail(e));
        let c = count.clone();
        tokio::spawn(async move {
            while let Some(m) = tells.next().await {
                if Codec::Postcard.decode::<Payload>(&m.payload).is_ok() {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let cl = client.clone();
        tokio::spawn(async move {
            while let Some(m) = counts.next().await {
                if let Some(r) = m.reply {
                    let n = count.load(Ordering::Relaxed);
                    let _ = cl.publish(r, n.to_le_bytes().to_vec().into()).await;
                }
            }
        });
        while let Some(m) = echoes.next().await {
            let (Some(r), Ok(p)) = (m.reply, Codec::Postcard.decode::<Payload>(&m.payload)) else {
                continue;
            };
            if let Ok(b) = Codec::Postcard.encode(&p) {
                let _ = client.publish(r, b.into()).await;
            }
        }
    });
}

fn nats_server_bin() -> String {
    std::env::var("TURNO_NATS_SERVER").unwrap_or_else(|_| "nats-server".into())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| fail(format!("no free port: {e}")))
}

struct Killed(Child);
impl Killed {
    fn new(child: Child) -> Killed {
        if let Ok(mut v) = CHILDREN.lock() {
            v.push(child.id());
        }
        Killed(child)
    }
}
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let id = self.0.id();
        if let Ok(mut v) = CHILDREN.lock() {
            v.retain(|&p| p != id);
        }
    }
}

fn spawn_peer(url: &str, name: &str) -> Killed {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(e));
    Command::new(exe)
        .arg("cluster-peer")
        .env(URL_VAR, url)
        .env(NAME_VAR, name)
        .stdout(Stdio::null())
        .spawn()
        .map(Killed::new)
        .unwrap_or_else(|e| fail(format!("cannot start the peer: {e}")))
}

/// Pumps `node` until `done` or `max` passes; false on the latter.
fn pump_until(node: &mut N, max: Duration, mut done: impl FnMut(&mut N) -> bool) -> bool {
    let end = Instant::now() + max;
    loop {
        node.pump();
        if done(node) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        node.transport_mut().wait(Duration::from_millis(1));
    }
}

fn ask_count(node: &mut N, to: &RemoteAddr<u64>) -> Option<u64> {
    let got = Rc::new(Cell::new(None));
    let g = got.clone();
    let done = Rc::new(Cell::new(false));
    let d = done.clone();
    node.ask(to, &0u64, Duration::from_secs(2), move |r| {
        d.set(true);
        if let RemoteResponse::Reply(n) = r {
            g.set(Some(n));
        }
    })
    .ok()?;
    pump_until(node, Duration::from_secs(3), |_| done.get());
    got.get()
}

/// Asks `count` until it reaches `want` or stops growing for a second.
fn wait_count(mut count: impl FnMut() -> Option<u64>, want: u64) -> u64 {
    let mut last = 0;
    let mut since = Instant::now();
    loop {
        let n = count().unwrap_or(last);
        if n >= want {
            return n;
        }
        if n > last {
            last = n;
            since = Instant::now();
        } else if since.elapsed() > Duration::from_secs(1) {
            return last;
        }
    }
}

struct Tells {
    secs: f64,
    delivered: u64,
    retries: u64,
}

fn turno_tells(node: &mut N, n: u64) -> Tells {
    let sink = RemoteAddr::<Payload>::new("b", "/sink");
    let count = RemoteAddr::<u64>::new("b", "/count");
    let before =
        ask_count(node, &count).unwrap_or_else(|| fail("the peer's count is not answered"));
    let msgs: Vec<Payload> = (0..n).map(payload).collect();
    let start = Instant::now();
    let mut retries = 0;
    for (i, m) in msgs.iter().enumerate() {
        // A node's loop pumps between its sends (heartbeats, answers).
        if i % 1024 == 0 {
            node.pump();
        }
        loop {
            match node.tell(&sink, m) {
                Ok(true) => break,
                Ok(false) if node.peer("b").is_none() => {
                    fail("the peer was declared down during the tells")
                }
                Ok(false) => {
                    retries += 1;
                    node.pump();
                    std::thread::yield_now();
                }
                Err(e) => fail(e),
            }
        }
    }
    let got = wait_count(|| ask_count(node, &count).map(|c| c - before), n);
    let secs = start.elapsed().as_secs_f64();
    Tells {
        secs,
        delivered: got,
        retries,
    }
}

fn raw_tells(
    rt: &tokio::runtime::Runtime,
    client: &async_nats::Client,
    node: &mut N,
    n: u64,
) -> Tells {
    let ask = |client: &async_nats::Client| {
        rt.block_on(async {
            let m = client.request("raw.count", Vec::new().into()).await.ok()?;
            Some(u64::from_le_bytes(m.payload.as_ref().try_into().ok()?))
        })
    };
    let before = ask(client).unwrap_or_else(|| fail("raw.count is not answered"));
    let msgs: Vec<Vec<u8>> = (0..n)
        .map(|s| Codec::Postcard.encode(&payload(s)).unwrap_or_default())
        .collect();
    let start = Instant::now();
    // The turno node's loop keeps running (a pump every 4,096 publishes,
    // timed with raw: a few microseconds each), so that a long raw phase
    // does not leave it unpumped past its failure detector's patience.
    let mut msgs = msgs.into_iter().peekable();
    while msgs.peek().is_some() {
        node.pump();
        rt.block_on(async {
            for m in msgs.by_ref().take(4096) {
                if let Err(e) = client.publish("raw.tell", m.into()).await {
                    fail(e);
                }
            }
        });
    }
    let got = wait_count(
        || {
            node.pump();
            ask(client).map(|c| c - before)
        },
        n,
    );
    Tells {
        secs: start.elapsed().as_secs_f64(),
        delivered: got,
        retries: 0,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e6
}

#[derive(Debug, Clone, Copy, Serialize)]
struct Latency {
    p50_us: f64,
    p99_us: f64,
}

fn latency(mut v: Vec<Duration>) -> Latency {
    v.sort();
    Latency {
        p50_us: percentile(&v, 0.50),
        p99_us: percentile(&v, 0.99),
    }
}

/// Why the node's incarnation ended, if it did (a send or ask pending then
/// ends `Unknown` or timed out).
fn ended_note(node: &N) -> String {
    match node.retired_stats().last() {
        Some(s) => format!(
            " ({} earlier incarnation(s) of this node; the last ended {:?})",
            node.retired_stats().len(),
            s.ended
        ),
        None => String::new(),
    }
}

fn turno_sends(node: &mut N, n: usize) -> Latency {
    let sink = RemoteAddr::<Payload>::new("b", "/sink");
    let mut times = Vec::with_capacity(n);
    for s in 0..n {
        let got = Rc::new(Cell::new(None));
        let g = got.clone();
        let start = Instant::now();
        node.send(
            &sink,
            &payload(s as u64),
            Duration::from_secs(2),
            move |v| g.set(Some(v)),
        )
        .unwrap_or_else(|e| fail(e));
        pump_until(node, Duration::from_secs(3), |_| got.get().is_some());
        match got.get() {
            Some(v) if v.is_enqueued() => times.push(start.elapsed()),
            other => fail(format!(
                "a verdict send ended {other:?}{}",
                ended_note(node)
            )),
        }
    }
    latency(times)
}

fn turno_asks(node: &mut N, n: usize) -> Latency {
    let echo = RemoteAddr::<Payload>::new("b", "/echo");
    let mut times = Vec::with_capacity(n);
    for s in 0..n {
        let got: Rc<RefCell<Option<RemoteResponse<Payload>>>> = Rc::new(RefCell::new(None));
        let g = got.clone();
        let start = Instant::now();
        node.ask(
            &echo,
            &payload(s as u64),
            Duration::from_secs(2),
            move |r| *g.borrow_mut() = Some(r),
        )
        .unwrap_or_else(|e| fail(e));
        pump_until(node, Duration::from_secs(3), |_| got.borrow().is_some());
        let end = got.borrow_mut().take();
        match end {
            Some(RemoteResponse::Reply(p)) if p.seq == s as u64 => times.push(start.elapsed()),
            other => fail(format!("an ask ended {other:?}{}", ended_note(node))),
        }
    }
    latency(times)
}

fn raw_requests(
    rt: &tokio::runtime::Runtime,
    client: &async_nats::Client,
    node: &mut N,
    n: usize,
) -> Latency {
    let mut times = Vec::with_capacity(n);
    for chunk in 0..n.div_ceil(50) {
        // The turno node's loop keeps running between raw requests (not
        // timed): a node left without a pump for longer than its failure
        // detector's patience takes itself for paused.
        node.pump();
        rt.block_on(async {
            for s in chunk * 50..((chunk + 1) * 50).min(n) {
                let b = Codec::Postcard
                    .encode(&payload(s as u64))
                    .unwrap_or_default();
                let start = Instant::now();
                match client.request("raw.echo", b.into()).await {
                    Ok(m) => match Codec::Postcard.decode::<Payload>(&m.payload) {
                        Ok(p) if p.seq == s as u64 => times.push(start.elapsed()),
                        other => fail(format!("a raw request came back {other:?}")),
                    },
                    Err(e) => fail(e),
                }
            }
        });
    }
    latency(times)
}

/// Starts a fresh peer `v`, waits until `node` knows it, watches its sink,
/// kills it and times the node-down notice.
fn one_kill(node: &mut N, url: &str) -> Duration {
    let before = node.peer("v");
    let mut child = spawn_peer(url, "v");
    let known = pump_until(node, Duration::from_secs(10), |n| {
        n.peer("v").is_some_and(|inc| Some(inc) != before)
    });
    if !known {
        fail("the victim peer was not heard from in 10 s");
    }
    // Its actors are exported once it is heard: give its setup a moment.
    pump_until(node, Duration::from_millis(50), |_| false);
    let notice: Rc<RefCell<Option<(Instant, RemoteExit)>>> = Rc::new(RefCell::new(None));
    let nt = notice.clone();
    node.watch(&RemoteAddr::<Payload>::new("v", "/sink"), move |r| {
        *nt.borrow_mut() = Some((Instant::now(), r))
    });
    pump_until(node, Duration::from_millis(20), |_| false);
    let killed = Instant::now();
    let _ = child.0.kill();
    let _ = child.0.wait();
    drop(child);
    if !pump_until(node, Duration::from_secs(10), |_| notice.borrow().is_some()) {
        fail("a killed peer was not declared down in 10 s");
    }
    let (at, why) = notice
        .borrow_mut()
        .take()
        .unwrap_or_else(|| fail("no notice"));
    if !matches!(why, RemoteExit::NodeDown(_)) {
        fail(format!("a killed peer's watch ended {why:?}"));
    }
    at.saturating_duration_since(killed)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[derive(Debug, Serialize)]
struct Round {
    turno_tells_per_sec: f64,
    raw_tells_per_sec: f64,
    turno_tell_retries: u64,
    turno_tells_lost: u64,
    raw_tells_lost: u64,
    send: Latency,
    ask: Latency,
    raw_request: Latency,
}

/// Runs the bench and prints its report.
pub fn run(args: &Args) {
    let n = args.n.unwrap_or(200_000);
    let rounds = args.runs.max(1);
    let trips = 2_000;
    let kills = args.kills.unwrap_or(100);
    let port = free_port();
    let url = format!("nats://127.0.0.1:{port}");
    let server = Command::new(nats_server_bin())
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Killed::new)
        .unwrap_or_else(|e| {
            fail(format!(
                "cannot start nats-server ({}): {e}; set TURNO_NATS_SERVER",
                nats_server_bin()
            ))
        });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(e));
    let client = {
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            match rt.block_on(async_nats::connect(url.as_str())) {
                Ok(c) => break c,
                Err(e) if Instant::now() >= end => fail(format!("cannot connect to {url}: {e}")),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    };
    let _peer = spawn_peer(&url, "b");
    let mut node = connect_node(&url, "a");
    if !pump_until(&mut node, Duration::from_secs(10), |n| {
        n.peer("b").is_some()
    }) {
        fail("the peer was not heard from in 10 s");
    }
    let count = RemoteAddr::<u64>::new("b", "/count");
    if ask_count(&mut node, &count).is_none() {
        fail("the peer's actors do not answer");
    }
    // The raw receiver is up when it answers.
    let end = Instant::now() + Duration::from_secs(5);
    while rt
        .block_on(client.request("raw.count", Vec::new().into()))
        .is_err()
    {
        if Instant::now() >= end {
            fail("the raw receiver does not answer");
        }
    }
    // Warm-up, not counted.
    turno_tells(&mut node, n / 10);
    raw_tells(&rt, &client, &mut node, n / 10);
    let mut all = Vec::new();
    for r in 0..rounds {
        // Alternated: which goes first changes each round.
        let (t, w) = if r % 2 == 0 {
            let t = turno_tells(&mut node, n);
            (t, raw_tells(&rt, &client, &mut node, n))
        } else {
            let w = raw_tells(&rt, &client, &mut node, n);
            (turno_tells(&mut node, n), w)
        };
        let (send, ask, raw_request) = if r % 2 == 0 {
            let s = turno_sends(&mut node, trips);
            let a = turno_asks(&mut node, trips);
            (s, a, raw_requests(&rt, &client, &mut node, trips))
        } else {
            let q = raw_requests(&rt, &client, &mut node, trips);
            let s = turno_sends(&mut node, trips);
            (s, turno_asks(&mut node, trips), q)
        };
        let round = Round {
            turno_tells_per_sec: t.delivered as f64 / t.secs,
            raw_tells_per_sec: w.delivered as f64 / w.secs,
            turno_tell_retries: t.retries,
            turno_tells_lost: n - t.delivered,
            raw_tells_lost: n - w.delivered,
            send,
            ask,
            raw_request,
        };
        if !args.json {
            eprintln!(
                "round {r}: tells/s turno {:.0} raw {:.0} ({:.2}x; retries {}, lost {} / {}); round trip p50/p99 us: send {:.0}/{:.0} ask {:.0}/{:.0} raw {:.0}/{:.0}",
                round.turno_tells_per_sec,
                round.raw_tells_per_sec,
                round.turno_tells_per_sec / round.raw_tells_per_sec,
                round.turno_tell_retries,
                round.turno_tells_lost,
                round.raw_tells_lost,
                send.p50_us,
                send.p99_us,
                ask.p50_us,
                ask.p99_us,
                raw_request.p50_us,
                raw_request.p99_us
            );
        }
        all.push(round);
    }
    let mut detect = Vec::with_capacity(kills);
    for k in 0..kills {
        detect.push(one_kill(&mut node, &url));
        if !args.json && (k + 1) % 10 == 0 {
            eprintln!("kills: {} of {kills}", k + 1);
        }
    }
    let largest = detect.iter().max().copied().unwrap_or_default();
    let detection = latency(detect);
    drop(server);
    let m = |f: &dyn Fn(&Round) -> f64| median(all.iter().map(f).collect());
    let turno_tps = m(&|r| r.turno_tells_per_sec);
    let raw_tps = m(&|r| r.raw_tells_per_sec);
    let summary = serde_json::json!({
        "n": n,
        "rounds": rounds,
        "round_trips": trips,
        "kills": kills,
        "turno_tells_per_sec": turno_tps,
        "raw_tells_per_sec": raw_tps,
        "tell_ratio": turno_tps / raw_tps,
        "send_p50_us": m(&|r| r.send.p50_us),
        "send_p99_us": m(&|r| r.send.p99_us),
        "ask_p50_us": m(&|r| r.ask.p50_us),
        "ask_p99_us": m(&|r| r.ask.p99_us),
        "raw_request_p50_us": m(&|r| r.raw_request.p50_us),
        "raw_request_p99_us": m(&|r| r.raw_request.p99_us),
        "detection_p50_ms": detection.p50_us / 1e3,
        "detection_p99_ms": detection.p99_us / 1e3,
        "detection_max_ms": largest.as_secs_f64() * 1e3,
        "rounds_detail": all,
    });
    if args.json {
        println!("{summary}");
        return;
    }
    let g = |k: &str| summary[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "| measure | turno-cluster | raw async-nats | ratio | target |\n|---|---:|---:|---:|---|"
    );
    println!(
        "| tells/s, {n} of 64-byte payloads (median of {rounds}) | {:.0} | {:.0} | {:.2}x | >= 0.8x |",
        turno_tps,
        raw_tps,
        turno_tps / raw_tps
    );
    for (what, p) in [("p50", "p50"), ("p99", "p99")] {
        let raw = g(&format!("raw_request_{p}_us"));
        for kind in ["send", "ask"] {
            let v = g(&format!("{kind}_{p}_us"));
            println!(
                "| {kind} round trip {what}, us ({trips} one at a time) | {v:.0} | {raw:.0} | {:.2}x | <= 1.2x |",
                v / raw
            );
        }
    }
    println!(
        "| failure detection over {kills} kills, ms | p50 {:.0}, p99 {:.0}, max {:.0} | | | |",
        g("detection_p50_ms"),
        g("detection_p99_ms"),
        g("detection_max_ms")
    );
}
