//! `turno-entity-node`: one node of a cluster of durable charts, as a
//! process that can be killed, paused and cut off.
//!
//! ```text
//! turno-entity-node --name n1 --servers nats://127.0.0.1:4222[,URL...]
//!     --postgres postgres://... --gateway 127.0.0.1:PORT --http-port PORT
//!     [--kind submit|reminder] [--shards 8] [--lease-ms 1500] [--tick-ms 100]
//!     [--heartbeat-ms 100] [--down-after-ms 1000] [--attempt-ms 1000]
//!     [--charge-timeout-ms 4000] [--uncertain-ms 10000] [--drain-ms 500]
//!     [--only-given-servers]
//! ```
//!
//! The node is a [`turno_entity::cluster::EntityNode`]: an entity host whose
//! state and shard leases live in PostgreSQL, joined to a turno-cluster
//! node over NATS, so that a message for any key sent to any node reaches
//! the key's owner. Its charts are one kind:
//!
//! - `submit` (the default): turno-chart's idempotent submit, charging
//!   through the payment gateway's HTTP service at `--gateway` (a key's
//!   charge and lookup carry the faults the key asks for after an `@`:
//!   `latency=MS`, `fault=timeout|lost|error|decline`, `lookup=down`);
//! - `reminder`: `ARM` starts a 1.5 s timer whose firing counts
//!   `context.fired` and ends in `done` (a durable timer to lose a node
//!   under).
//!
//! Its HTTP front on `127.0.0.1:--http-port`:
//!
//! - `POST /entities/{key}` with `{"seq": N, "event": {"type": ...},
//!   "within_ms": 5000}`: routed to the owner; 200 `{"outcome": "applied" |
//!   "duplicate", "owner", "served_by"}`, 504 `{"outcome": "unknown",
//!   "last"}` at the deadline, 422 `{"outcome": "refused", "why"}`;
//! - `GET /entities/{key}`: 200 `{"applied", "state", "owner"}` (the stored
//!   snapshot and the shard's live lease owner, read from PostgreSQL), 404
//!   when never stored;
//! - `GET /stats`: the node's counters (as printed).
//!
//! Every 100 ms, when they changed, the node prints its counters as one
//! JSON line on stdout: `{"node", "owner", "held", "activations",
//! "restored", "commits", "duplicates", "fenced", "failed", "timer_wakes",
//! "skipped_effects", "route": {...}}`. On SIGTERM it drains its
//! activations, releases its leases (the other nodes take its shards at
//! once), prints `{"released": N}` and exits 0.
//!
//! Each tick the node takes at most its share of the shards: their number
//! over the number of live nodes (its peers and itself), rounded up; its
//! first tick waits three heartbeats, to know its peers.

mod gateway;

use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use turno::{LocalSystem, Response as Piped, ThreadedSystem};
use turno_chart::interpreter::{Running, Service, Started};
use turno_chart::submit::{self, Submit, CHARGE, LOOKUP};
use turno_chart::{load_json, stdlib, Event, Machine};
use turno_cluster::nats::{NatsOptions, NatsTransport};
use turno_cluster::node::{fresh_incarnation, Node, NodeConfig};
use turno_cluster::transport::Transport as _;
use turno_entity::cluster::{EntityNode, Outcome, RouteConfig};
use turno_entity::{EntityExt, EntityHost, HostConfig};
use turno_store::{shard_for, Store};

use gateway::Asked;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn die(why: impl std::fmt::Display) -> ! {
    eprintln!("turno-entity-node: {why}");
    std::process::exit(1)
}

/// A message from the HTTP front for the node's loop.
struct Deliver {
    key: String,
    seq: u64,
    event: Event,
    within: Duration,
    answer: tokio::sync::oneshot::Sender<Outcome>,
}

#[derive(Clone)]
struct Front {
    name: String,
    kind: String,
    shards: u32,
    store: Store,
    tx: mpsc::Sender<Deliver>,
    stats: Arc<Mutex<String>>,
}

type Services = HashMap<String, Service<Value, EntityExt>>;

/// An invocation whose future is built from its input and the faults its
/// entity's key asks for. A chart whose write was refused (fenced) or
/// failed starts nothing: its state is not in the store, so what it would
/// do must not happen (counted in `skipped`).
fn piped_service<F>(
    skipped: Arc<AtomicU64>,
    make: impl Fn(Value, Asked) -> F + Send + Sync + 'static,
) -> Service<Value, EntityExt>
where
    F: std::future::Future<Output = Result<Value, Value>> + Send + 'static,
{
    Service::custom(move |ctx, ext: &mut EntityExt, _, s: Started| {
        if !ext.live() {
            skipped.fetch_add(1, Ordering::Relaxed);
            return Running::Nothing;
        }
        let fut = make(s.input.clone(), Asked::from_key(ext.key()));
        let back = Started {
            path: s.path.clone(),
            id: s.id.clone(),
            generation: s.generation,
            input: Value::Null,
        };
        let piped = ctx.pipe(fut, None, move |r| {
            back.done(match r {
                Piped::Reply(r) => r,
                Piped::TimedOut => Err(json!({"unknown": "the task ended"})),
            })
        });
        match piped {
            Ok(req) => Running::Request(req),
            Err(e) => {
                let me = ctx.addr();
                let _ = ctx.send(&me, s.done(Err(json!({ "unknown": e.to_string() }))));
                Running::Nothing
            }
        }
    })
}

fn reminder() -> Machine<Value> {
    load_json::<Value>(
        r#"{"id": "reminder", "initial": "idle", "context": {"fired": 0},
            "states": {
              "idle": {"on": {"ARM": "armed"}},
              "armed": {"after": {"1500": {"target": "done",
                         "actions": [{"type": "inc", "params": {"key": "fired"}}]}}},
              "done": {"type": "final"}}}"#,
        &stdlib::implementations(),
    )
    .unwrap_or_else(|e| die(format!("the reminder chart: {e}")))
}

async fn post_entity(
    State(f): State<Front>,
    Path(key): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let Some(seq) = body["seq"].as_u64() else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "\"seq\" must be a whole number"})),
        )
            .into_response();
    };
    let event = match Event::from_json(&body["event"]) {
        Ok(e) => e,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": format!("\"event\": {e}")})),
            )
                .into_response()
        }
    };
    let within = Duration::from_millis(body["within_ms"].as_u64().unwrap_or(5_000));
    let (answer, rx) = tokio::sync::oneshot::channel();
    let sent = f.tx.send(Deliver {
        key,
        seq,
        event,
        within,
        answer,
    });
    if sent.is_err() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": "the node is stopping"})),
        )
            .into_response();
    }
    let Ok(outcome) = rx.await else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": "the node stopped"})),
        )
            .into_response();
    };
    let by = f.name.clone();
    match outcome {
        Outcome::Acked { ack, owner } => {
            let word = if ack == turno_entity::Ack::Applied {
                "applied"
            } else {
                "duplicate"
            };
            Json(json!({"outcome": word, "owner": owner, "served_by": by})).into_response()
        }
        Outcome::Unknown { last } => (
            StatusCode::GATEWAY_TIMEOUT,
            Json(json!({"outcome": "unknown", "last": last, "served_by": by})),
        )
            .into_response(),
        Outcome::Refused(why) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"outcome": "refused", "why": why, "served_by": by})),
        )
            .into_response(),
    }
}

async fn get_entity(State(f): State<Front>, Path(key): Path<String>) -> Response {
    let read = tokio::task::spawn_blocking(move || {
        let e = f.store.get_entity(&f.kind, &key)?;
        let owner = f.store.shard_owner(shard_for(&key, f.shards))?;
        Ok::<_, turno_store::StoreError>((e, owner))
    })
    .await;
    match read {
        Ok(Ok((Some(e), owner))) => {
            let state: Value = serde_json::from_slice(&e.data).unwrap_or(Value::Null);
            Json(json!({
                "applied": e.applied,
                "state": state,
                "owner": owner.map(|l| l.owner),
            }))
            .into_response()
        }
        Ok(Ok((None, _))) => StatusCode::NOT_FOUND.into_response(),
        Ok(Err(e)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": e.to_string()})),
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": e.to_string()})),
        )
            .into_response(),
    }
}

async fn get_stats(State(f): State<Front>) -> Response {
    let s = f.stats.lock().map(|s| s.clone()).unwrap_or_default();
    let v: Value = serde_json::from_str(&s).unwrap_or(Value::Null);
    Json(v).into_response()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let need = |flag: &str| {
        arg(&args, flag).unwrap_or_else(|| die(format!("{flag} is required (see the crate docs)")))
    };
    let ms = |flag: &str, default: u64| {
        let v = arg(&args, flag).map_or(Ok(default), |s| s.parse::<u64>());
        Duration::from_millis(
            v.unwrap_or_else(|_| die(format!("{flag}: a whole number of milliseconds"))),
        )
    };
    let name = need("--name");
    let servers = need("--servers");
    let pg = need("--postgres");
    let http_port: u16 = need("--http-port")
        .parse()
        .unwrap_or_else(|_| die("--http-port: a port number"));
    let kind = arg(&args, "--kind").unwrap_or_else(|| "submit".into());
    let gateway: Option<SocketAddr> = arg(&args, "--gateway").map(|g| {
        g.parse()
            .unwrap_or_else(|_| die(format!("--gateway {g:?}: an address like 127.0.0.1:8080")))
    });
    let shards: u32 = arg(&args, "--shards")
        .map_or(Ok(8), |s| s.parse())
        .unwrap_or_else(|_| die("--shards: a whole number"));
    let lease = ms("--lease-ms", 1_500);
    let tick_every = ms("--tick-ms", 100);
    let drain = ms("--drain-ms", 500);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(format!("the tokio runtime: {e}")));
    let store = Store::postgres(&pg).unwrap_or_else(|e| die(format!("--postgres: {e}")));
    let inc = fresh_incarnation();
    let owner = format!("{name}/{inc}");
    let skipped = Arc::new(AtomicU64::new(0));
    let sys = ThreadedSystem::builder()
        .threads(1)
        .tokio(rt.handle().clone())
        .build();
    let config = HostConfig {
        shards,
        lease_ttl: lease,
        idle: Duration::from_secs(30),
        due_batch: 64,
    };
    let host = match kind.as_str() {
        "submit" => {
            let gw = gateway.unwrap_or_else(|| die("--gateway is required for --kind submit"));
            let n = Arc::new(AtomicU64::new(0));
            let prefix = owner.replace('/', "-");
            let keys: submit::KeySource =
                Arc::new(move || format!("{prefix}-{}", n.fetch_add(1, Ordering::Relaxed)));
            let mut spec = Submit::new(42_00, keys);
            spec.deadline_ms = ms("--uncertain-ms", 10_000).as_millis() as u64;
            let machine = spec
                .machine()
                .unwrap_or_else(|e| die(format!("the submit chart: {e}")));
            let charge_timeout = ms("--charge-timeout-ms", 4_000);
            let mut services = Services::new();
            services.insert(
                CHARGE.into(),
                piped_service(skipped.clone(), move |input, asked| {
                    gateway::charge(gw, input, asked, charge_timeout)
                }),
            );
            services.insert(
                LOOKUP.into(),
                piped_service(skipped.clone(), move |input, asked| {
                    gateway::lookup(gw, input, asked, Duration::from_millis(1_000))
                }),
            );
            EntityHost::new(sys, store.clone(), owner.clone(), Arc::new(machine), config)
                .with_sanitizer(submit::sanitizer("submit"))
                .with_services(Arc::new(services))
        }
        "reminder" => EntityHost::new(
            sys,
            store.clone(),
            owner.clone(),
            Arc::new(reminder()),
            config,
        ),
        other => die(format!("--kind {other:?}: submit or reminder")),
    };

    let urls: Vec<&str> = servers.split(',').collect();
    let options = NatsOptions {
        only_given_servers: args.iter().any(|a| a == "--only-given-servers"),
        ..NatsOptions::default()
    };
    let transport = NatsTransport::connect(&urls, options)
        .unwrap_or_else(|e| die(format!("cannot connect to {servers}: {e}")));
    let node_heartbeat = ms("--heartbeat-ms", 100);
    let node_config = NodeConfig {
        heartbeat_every: node_heartbeat,
        down_after: ms("--down-after-ms", 1_000),
        ..NodeConfig::default()
    };
    let node = Node::new(&name, inc, LocalSystem::new(), transport, node_config)
        .unwrap_or_else(|e| die(format!("cannot subscribe: {e}")));
    let route = RouteConfig {
        attempt_timeout: ms("--attempt-ms", 1_000),
        retry_every: Duration::from_millis(50),
    };
    let mut en = EntityNode::new(node, host, route).unwrap_or_else(|e| die(e));

    let (tx, rx) = mpsc::channel::<Deliver>();
    let stats = Arc::new(Mutex::new(String::from("{}")));
    let front = Front {
        name: name.clone(),
        kind: kind.clone(),
        shards,
        store,
        tx,
        stats: stats.clone(),
    };
    let app = Router::new()
        .route("/entities/{key}", get(get_entity).post(post_entity))
        .route("/stats", get(get_stats))
        .with_state(front);
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(("127.0.0.1", http_port)))
        .unwrap_or_else(|e| die(format!("cannot listen on 127.0.0.1:{http_port}: {e}")));
    rt.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let term = Arc::new(AtomicBool::new(false));
    let t = term.clone();
    rt.spawn(async move {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
            t.store(true, Ordering::SeqCst);
        }
    });

    let mut out = std::io::stdout();
    let mut last = String::new();
    let mut next_tick = Duration::ZERO;
    let startup = en.node().now() + node_heartbeat * 3;
    let mut next_print = Duration::ZERO;
    let mut last_tick_error = String::new();
    loop {
        en.pump();
        while let Ok(d) = rx.try_recv() {
            let answer = d.answer;
            en.deliver(&d.key, d.seq, d.event, d.within, move |o| {
                let _ = answer.send(o);
            });
        }
        let now = en.node().now();
        // The first tick waits for the peers' first heartbeats, so that a
        // node started beside others does not take every shard.
        if now >= next_tick && now >= startup {
            let live = u32::try_from(en.node().peers().len() + 1).unwrap_or(u32::MAX);
            en.host_mut().set_share(shards.div_ceil(live));
            // A store that cannot be reached is not a reason to stop: the
            // leases lapse and other nodes take the shards; writes made
            // meanwhile fail or are fenced.
            let mut tick_ok = true;
            match en.tick() {
                Ok(t) => {
                    if !t.acquired.is_empty() || !t.lost.is_empty() || !t.unrestorable.is_empty() {
                        eprintln!(
                            "turno-entity-node {name}: took {:?}, lost {:?}, woke {}, unrestorable {:?}",
                            t.acquired, t.lost, t.woken, t.unrestorable
                        );
                    }
                }
                Err(e) => {
                    // The first error of a streak only: a cut-off store
                    // fails every tick.
                    if last_tick_error.is_empty() {
                        eprintln!("turno-entity-node {name}: tick: {e} (again until it recovers)");
                    }
                    last_tick_error = e.to_string();
                    tick_ok = false;
                }
            }
            if tick_ok && !last_tick_error.is_empty() {
                eprintln!("turno-entity-node {name}: tick: the store answers again");
                last_tick_error.clear();
            }
            next_tick = now + tick_every;
        }
        if now >= next_print {
            let line = counters(&en, &skipped);
            if line != last {
                if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                    return;
                }
                if let Ok(mut s) = stats.lock() {
                    s.clone_from(&line);
                }
                last = line;
            }
            next_print = now + Duration::from_millis(100);
        }
        if term.load(Ordering::SeqCst) {
            let released = en.shutdown(drain);
            let line = counters(&en, &skipped);
            let released = released.map_or_else(|e| json!({"error": e.to_string()}), |n| json!(n));
            let _ = writeln!(out, "{line}");
            let _ = writeln!(out, "{}", json!({ "released": released }));
            let _ = out.flush();
            std::process::exit(0);
        }
        en.node_mut().transport_mut().wait(Duration::from_millis(2));
    }
}

type Entities = EntityNode<LocalSystem, NatsTransport, ThreadedSystem, Value>;

fn counters(en: &Entities, skipped: &AtomicU64) -> String {
    let h = en.host().stats();
    let r = en.stats();
    let held: Vec<u32> = en.host().held().iter().map(|l| l.shard).collect();
    json!({
        "node": en.node().me().name,
        "owner": en.host().owner(),
        "held": held,
        "activations": h.activations,
        "restored": h.restored,
        "commits": h.commits,
        "duplicates": h.duplicates,
        "fenced": h.fenced,
        "failed": h.failed,
        "timer_wakes": h.timer_wakes,
        "skipped_effects": skipped.load(Ordering::Relaxed),
        "route": {
            "accepted": r.accepted,
            "forwarded": r.forwarded,
            "served": r.served,
            "acked": r.acked,
            "unknown": r.unknown,
            "refused": r.refused,
        },
    })
    .to_string()
}
