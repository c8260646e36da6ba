//! A turno-cluster node process over real NATS: the actors the integration
//! tests (and `docs/cluster.md`'s three-node walk-through) talk to.
//!
//! ```text
//! turno-cluster-node --name n1 --servers nats://127.0.0.1:4222,nats://127.0.0.1:4223 [--turn-every-ms 0] [--heartbeat-ms 100] [--down-after-ms 500] [--only-given-servers]
//! ```
//!
//! Exports, for messages of type `u64` (registered as `u64`):
//! `/keep-oldest`, `/keep-newest`, `/reject`, `/suspend` (capacity 2 each),
//! `/open` (capacity 100,000), `/mortal` (stops after its first message),
//! and `/echo`, which answers an ask with twice its number.
//!
//! `--trace FILE`: records the node's trace in `FILE` (its header names
//! the node and incarnation; `turno inspect` merges several nodes' files
//! into one cluster trace).
//!
//! `--only-given-servers`: never connect to the servers the cluster
//! advertises (a test puts a proxy between the node and its server).
//!
//! `--ledger FILE [--replicas N]`: also `/ledger`, an actor with a durable
//! mailbox (reject at 1,000 stored, ack wait 1 s, 5 deliveries, `N`
//! replicas, default 3) taking `(id, amount)` pairs of `u64`. Its state is
//! `FILE`: one line `seq id amount` per applied message, written and
//! synced before the ack, so the last line's `seq` is its applied
//! sequence and a restarted process (same file) applies each message once.
//!
//! With `--turn-every-ms N` the actors run only every N ms, so mailboxes
//! fill between (the tests use it to meet every policy). Every 50 ms, and
//! when they change, the node prints its books as one JSON line on stdout
//! (the last line a killed node printed is what it had accounted for).

use std::io::Write as _;
use std::time::Duration;

use turno::{Actor, Context, LocalSystem, Policy, Props, System};
use turno_cluster::durable::{Durable, DurableMailbox, DurablePolicy, DurableSpec};
use turno_cluster::nats::{NatsOptions, NatsTransport};
use turno_cluster::node::{fresh_incarnation, Node, NodeConfig, NodeStats, RemoteReplyTo};
use turno_cluster::transport::Transport as _;

struct Sink;
impl Actor for Sink {
    type Msg = u64;
    fn handle(&mut self, _: &mut Context<'_, Self>, _: u64) {}
}

struct Mortal;
impl Actor for Mortal {
    type Msg = u64;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _: u64) {
        ctx.stop();
    }
}

struct Echo;
impl Actor for Echo {
    type Msg = (u64, RemoteReplyTo<u64>);
    fn handle(&mut self, _: &mut Context<'_, Self>, (n, r): Self::Msg) {
        let _ = r.reply(n * 2);
    }
}

/// The durable account: its state is a file of applied lines.
struct Ledger {
    file: std::fs::File,
    applied: u64,
}

impl Ledger {
    fn open(path: &str) -> std::io::Result<Ledger> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // A line cut short by a crash was not committed (nor acked).
        let applied = text
            .split_inclusive('\n')
            .rev()
            .filter(|l| l.ends_with('\n') && l.split(' ').count() == 3)
            .find_map(|l| l.split(' ').next()?.parse::<u64>().ok())
            .unwrap_or(0);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        if !text.is_empty() && !text.ends_with('\n') {
            file.write_all(b"\n")?;
        }
        Ok(Ledger { file, applied })
    }
}

impl Actor for Ledger {
    type Msg = Durable<(u64, u64)>;
    fn handle(&mut self, _: &mut Context<'_, Self>, d: Durable<(u64, u64)>) {
        if let Some(&(id, amount)) = d.fresh(self.applied) {
            let line = format!("{} {id} {amount}\n", d.seq());
            if self
                .file
                .write_all(line.as_bytes())
                .and_then(|_| self.file.sync_data())
                .is_err()
            {
                // Not committed: not acked, delivered again.
                return;
            }
            self.applied = d.seq();
        }
        d.ack();
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn books(s: &NodeStats, peers: &[(String, u64)]) -> String {
    let node = s
        .node
        .as_ref()
        .map(|n| (n.name.clone(), n.inc))
        .unwrap_or_default();
    let tells_in: Vec<_> = s
        .tells_in
        .iter()
        .map(|(k, v)| (k.name.clone(), k.inc, *v))
        .collect();
    serde_json::json!({
        "node": node.0,
        "inc": node.1,
        "peers": peers,
        "tells_in": tells_in,
        "tells_decided": s.tells_decided,
        "tells_lost": s.tells_lost,
        "tells_duplicate": s.tells_duplicate,
        "sends_decided": s.sends_decided,
        "asks_decided": s.asks_decided,
        "undecodable": s.undecodable,
        "sends_waited": s.sends_waited,
    })
    .to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(name) = arg(&args, "--name") else {
        eprintln!(
            "usage: turno-cluster-node --name NAME --servers URL[,URL...] [--turn-every-ms N]"
        );
        std::process::exit(2);
    };
    let servers = arg(&args, "--servers").unwrap_or_else(|| "nats://127.0.0.1:4222".into());
    let turn_every = Duration::from_millis(
        arg(&args, "--turn-every-ms")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
    );
    let urls: Vec<&str> = servers.split(',').collect();
    let options = NatsOptions {
        only_given_servers: args.iter().any(|a| a == "--only-given-servers"),
        ..NatsOptions::default()
    };
    let transport = match NatsTransport::connect(&urls, options) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("turno-cluster-node: cannot connect to {servers}: {e}");
            std::process::exit(1);
        }
    };
    let ms = |flag: &str, default: Duration| {
        arg(&args, flag)
            .and_then(|s| s.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(default)
    };
    let defaults = NodeConfig::default();
    let config = NodeConfig {
        heartbeat_every: ms("--heartbeat-ms", defaults.heartbeat_every),
        down_after: ms("--down-after-ms", defaults.down_after),
        ..defaults
    };
    let inc = fresh_incarnation();
    let system = match arg(&args, "--trace") {
        None => LocalSystem::new(),
        // Unbuffered: a killed node's file holds every event it recorded.
        Some(path) => match std::fs::File::create(&path) {
            Ok(f) => LocalSystem::builder()
                .trace(turno::trace::JsonLinesSink::for_node(f, &name, inc))
                .build(),
            Err(e) => {
                eprintln!("turno-cluster-node: cannot write the trace {path}: {e}");
                std::process::exit(1);
            }
        },
    };
    let mut node = match Node::new(&name, inc, system, transport, config) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("turno-cluster-node: cannot subscribe: {e}");
            std::process::exit(1);
        }
    };
    let setup = |node: &mut Node<LocalSystem, NatsTransport>| -> Result<(), String> {
        node.register::<u64>("u64").map_err(|e| e.to_string())?;
        let sys = node.system();
        let mut addrs = Vec::new();
        for (n, p) in [
            ("keep-oldest", Policy::KeepOldest(2)),
            ("keep-newest", Policy::KeepNewest(2)),
            ("reject", Policy::Reject(2)),
            ("suspend", Policy::Suspend(2)),
            ("open", Policy::KeepOldest(100_000)),
        ] {
            addrs.push(
                sys.spawn(Props::new().name(n).mailbox(p), || Sink)
                    .map_err(|e| e.to_string())?,
            );
        }
        addrs.push(
            sys.spawn(Props::new().name("mortal"), || Mortal)
                .map_err(|e| e.to_string())?,
        );
        let echo = sys
            .spawn(Props::new().name("echo"), || Echo)
            .map_err(|e| e.to_string())?;
        for a in &addrs {
            node.export(a).map_err(|e| e.to_string())?;
        }
        node.export_ask(&echo, |n: u64, r| (n, r))
            .map_err(|e| e.to_string())?;
        Ok(())
    };
    if let Err(e) = setup(&mut node) {
        eprintln!("turno-cluster-node: {e}");
        std::process::exit(1);
    }
    let mut ledger = None;
    if let Some(path) = arg(&args, "--ledger") {
        let replicas = arg(&args, "--replicas")
            .and_then(|s| s.parse().ok())
            .unwrap_or(3);
        // The state is read from the file at every (re)start of the actor.
        let opened = Ledger::open(&path)
            .map_err(|e| e.to_string())
            .and_then(|_| {
                node.system()
                    .spawn(Props::new().name("ledger"), move || {
                        Ledger::open(&path).expect("the ledger file opened once already")
                    })
                    .map_err(|e| e.to_string())
            })
            .and_then(|addr| {
                let spec = DurableSpec::new(&name, "/ledger", DurablePolicy::Reject(1_000))
                    .replicas(replicas)
                    .ack_wait(Duration::from_secs(1))
                    .max_deliver(5);
                // A cluster just started elects its JetStream leaders
                // first: the stream may not be creatable for a few seconds.
                let t0 = std::time::Instant::now();
                loop {
                    match DurableMailbox::open(node.transport_mut(), spec.clone(), addr.clone()) {
                        Ok(m) => return Ok(m),
                        Err(e) if t0.elapsed() > Duration::from_secs(30) => {
                            return Err(e.to_string())
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(200)),
                    }
                }
            });
        match opened {
            Ok(m) => ledger = Some(m),
            Err(e) => {
                eprintln!("turno-cluster-node: the ledger: {e}");
                std::process::exit(1);
            }
        }
    }
    let mut out = std::io::stdout();
    let mut last = String::new();
    let mut next_print = Duration::ZERO;
    let mut next_turns = Duration::ZERO;
    loop {
        node.pump();
        if let Some(m) = ledger.as_mut() {
            m.pump(node.transport_mut());
        }
        let now = node.now();
        if now >= next_turns {
            node.system_mut().settle(Duration::from_millis(20));
            next_turns = now + turn_every;
        }
        node.pump();
        if now >= next_print {
            let peers = node.peers();
            let line = books(node.stats(), &peers);
            if line != last {
                if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                    return;
                }
                last = line;
            }
            next_print = now + Duration::from_millis(50);
        }
        node.transport_mut().wait(Duration::from_millis(2));
    }
}
