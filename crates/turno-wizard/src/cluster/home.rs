//! A node's session home: the signup sessions as entities of one
//! [`EntityHost`] on PostgreSQL, joined to a turno-cluster node over NATS
//! as an [`EntityNode`], both driven by one thread of the node; and what a
//! page asks of them.
//!
//! **Routing.** A page's event is handed to the node's [`EntityNode`]:
//! when this node's host owns the session's shard the entity takes it
//! here; otherwise it is asked of the owner (the lease row names it) over
//! NATS, where that node's host delivers it. With no live lease (the owner
//! died and its lease has not run out yet), no answer, or a refused write,
//! it is tried again with the **same sequence** until a node took the shard
//! over or [`ROUTE_DEADLINE`] passed: an attempt that was applied but whose
//! answer was lost is acknowledged as a duplicate the next time, never
//! applied twice (see `turno_entity::cluster`).
//!
//! **Sequences.** The node that serves a page numbers its event: the
//! session's applied sequence (from the store) plus one, kept for every
//! retry of that event. Two pages of one session sending at the same time
//! through two nodes can draw the same number; the second is then
//! acknowledged as a duplicate and changes nothing (the user sends it
//! again).
//!
//! **The step check.** A form's step is checked by the node that serves
//! the page, against the session's committed snapshot, right before the
//! event is routed (one event of a session at a time on that node). Between
//! the check and the event, a timer, the gateway's answer or another
//! node's page may move the session; the chart ignores an event its state
//! has no transition for.
//!
//! **Membership.** Each node takes at most its share of the shards: their
//! number over the nodes it hears over NATS (its peers and itself), rounded
//! up. A node that stops (killed, paused, cut off) is declared down by the
//! others after [`DOWN_AFTER`]; their shares grow, and they take its shards
//! when its leases run out.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::oneshot;
use turno::{Context, LocalSystem, Response, ThreadedSystem};
use turno_chart::interpreter::{ChartActor, ChartMsg, Running, Service, Started};
use turno_chart::persist::Persist;
use turno_chart::{Event, Machine, Snapshot};
use turno_cluster::nats::{NatsOptions, NatsTransport};
use turno_cluster::node::{fresh_incarnation, Node, NodeConfig};
use turno_cluster::transport::Transport;
use turno_entity::cluster::{EntityNode, Outcome, RouteConfig};
use turno_entity::{Ack, Delivery, EntityExt, EntityHost, HostConfig, Routed};
use turno_store::{shard_for, Store};

use super::{node_of, LEASE_TTL, SHARDS};
use crate::client::{self, Faults, Lookup};
use crate::machine::{self, step_of};
use crate::session::View;
use crate::steps::Step;

/// How often the host renews its leases, passivates and wakes timers.
const TICK: Duration = Duration::from_millis(200);
/// How often a node says it is alive over NATS.
const HEARTBEAT: Duration = Duration::from_millis(100);
/// A peer silent this long is taken for down.
pub(crate) const DOWN_AFTER: Duration = Duration::from_millis(1_000);
/// How long a routed event keeps trying before it gives up.
pub(crate) const ROUTE_DEADLINE: Duration = Duration::from_secs(12);
/// How long one attempt at the owner may take (a paused owner answers
/// nothing).
const ATTEMPT: Duration = Duration::from_millis(1_000);
/// How long a node waits for the gateway's answer to a charge: longer than
/// a lease, so that an owner that dies or stops while the gateway holds a
/// charge's reply is taken over before its own wait would have ended.
pub(crate) const CHARGE_TIMEOUT: Duration = Duration::from_secs(5);
/// Where a session's armed faults are kept (any node arms them, the owner
/// charges with them).
const FAULTS: &str = "wizard-faults";
/// How long armed faults are kept.
const FAULTS_TTL: Duration = Duration::from_secs(24 * 3600);
/// The event that wakes a session on its owner (the chart has no
/// transition for it: only the entity's sequence moves).
const WAKE: &str = "WAKE";

type Host = EntityHost<ThreadedSystem, Value>;
type Entities = EntityNode<LocalSystem, NatsTransport, ThreadedSystem, Value>;

/// An event for a session.
#[derive(Clone, Debug)]
pub(crate) struct Op {
    /// The session.
    pub sid: String,
    /// The event's sequence for the session.
    pub seq: u64,
    /// The event.
    pub event: Event,
    /// The step the session must be at.
    pub guard: Option<String>,
}

/// What became of an [`Op`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Answer {
    /// Committed (now, or by an earlier attempt), by node `by`.
    Applied {
        /// The node that owns the session.
        by: String,
    },
    /// Refused: the session is at another step.
    Stale {
        /// The step it is at.
        current: String,
    },
}

enum Cmd {
    Op(Op, oneshot::Sender<Result<Answer, String>>),
    Wake(String, u64),
}

/// A session's committed state, as [`Home::seen`] reads it.
pub(crate) struct Seen {
    /// As a page shows it.
    pub view: View,
    /// The chart's snapshot.
    pub snapshot: Snapshot<Value>,
    /// The node whose live lease covers the session's shard.
    pub owner: Option<String>,
    /// The sequence of the last event it applied.
    pub applied: u64,
}

/// A node's sessions: its entity thread, the store.
pub(crate) struct Home {
    /// The node's name.
    pub name: String,
    /// Its lease owner name (`<name>/<incarnation>`).
    pub owner: String,
    pub store: Store,
    pub machine: Arc<Machine<Value>>,
    cmds: Mutex<Option<mpsc::Sender<Cmd>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// One event of a session at a time from this node.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The node's host's fenced writes so far (shown in `/api/state`).
    pub fenced: Arc<std::sync::atomic::AtomicU64>,
    /// Page events this node sent to another node over NATS, and other
    /// nodes' events its host took (shown in `/api/state`).
    pub routed: Arc<[std::sync::atomic::AtomicU64; 2]>,
}

impl Home {
    /// Starts the entity thread of node `name` on `store`, over the NATS
    /// servers `nats`, its charges going to `gateway`. Call inside a tokio
    /// runtime.
    pub(crate) fn start(
        name: &str,
        store: Store,
        gateway: SocketAddr,
        nats: &[String],
        nodes: usize,
    ) -> Result<Arc<Home>, String> {
        let inc = fresh_incarnation();
        let owner = format!("{name}/{inc}");
        let machine = machine::signup();
        let system = ThreadedSystem::builder()
            .threads(2)
            .tokio(tokio::runtime::Handle::current())
            .build();
        let fenced = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let f = fenced.clone();
        let config = HostConfig {
            shards: SHARDS,
            lease_ttl: LEASE_TTL,
            idle: Duration::from_secs(60),
            due_batch: 100,
        };
        let host = EntityHost::new(
            system,
            store.clone(),
            owner.clone(),
            machine.clone(),
            config,
        )
        .with_sanitizer(machine::sanitizer())
        .with_services(services(store.clone(), gateway))
        .on_commit(move |c| {
            if c.outcome == Ack::Fenced {
                f.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let routed: Arc<[std::sync::atomic::AtomicU64; 2]> = Arc::default();
        let r = routed.clone();
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let (n, st, m, urls) = (
            name.to_string(),
            store.clone(),
            machine.clone(),
            nats.to_vec(),
        );
        // The NATS client runs a runtime of its own: it is made on this
        // thread, outside the node's tokio runtime.
        let thread = std::thread::Builder::new()
            .name(format!("turno-wizard-{name}"))
            .spawn(move || {
                let en = match join(&n, inc, host, &urls) {
                    Ok(en) => {
                        let _ = ready_tx.send(Ok(()));
                        en
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                entity_loop(en, rx, &st, &m, nodes, &r);
            })
            .map_err(|e| format!("the entity thread: {e}"))?;
        ready_rx
            .recv()
            .map_err(|_| "the entity thread ended".to_string())??;
        Ok(Arc::new(Home {
            name: name.to_string(),
            owner,
            store,
            machine,
            cmds: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            locks: Mutex::default(),
            fenced,
            routed,
        }))
    }

    /// A clean stop: the host lets its sessions finish what they hold,
    /// stops them and releases its leases, so other nodes take the shards
    /// over at once. Blocking.
    pub(crate) fn shutdown(&self) {
        drop(self.cmds.lock().expect("lock").take());
        if let Some(t) = self.thread.lock().expect("lock").take() {
            let _ = t.join();
        }
    }

    fn lock_for(&self, sid: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().expect("lock");
        // Locks nobody holds or waits for are dropped as the table grows.
        if locks.len() > 4096 {
            locks.retain(|_, l| Arc::strong_count(l) > 1);
        }
        locks.entry(sid.to_string()).or_default().clone()
    }

    fn send(&self, cmd: Cmd) -> bool {
        match self.cmds.lock().expect("lock").as_ref() {
            Some(cmds) => cmds.send(cmd).is_ok(),
            None => false,
        }
    }

    /// Delivers `op` to the session's owner, wherever it is (see the
    /// [module docs](self)): `Applied` or `Stale`, or why not by the
    /// deadline.
    pub(crate) async fn route(&self, op: Op) -> Result<Answer, String> {
        let lock = self.lock_for(&op.sid);
        let _one = lock.lock().await;
        let (tx, rx) = oneshot::channel();
        if !self.send(Cmd::Op(op, tx)) {
            return Err("the node is stopping".into());
        }
        match tokio::time::timeout(ROUTE_DEADLINE + ATTEMPT * 2, rx).await {
            Ok(Ok(answer)) => answer,
            _ => Err("the node's entity thread did not answer".into()),
        }
    }

    /// Wakes the session on its owner (restored from its snapshot if it is
    /// not in memory there), without waiting: a submit whose owner died
    /// with its charge in flight resumes on the node that took the shard
    /// over. `applied`: the session's applied sequence, as last read.
    pub(crate) fn wake(&self, sid: &str, applied: u64) {
        self.send(Cmd::Wake(sid.to_string(), applied));
    }

    /// The session's committed state (`None`: no such session), read from
    /// the store by whichever node asks. Blocking.
    pub(crate) fn seen(&self, sid: &str) -> Result<Option<Seen>, String> {
        let Some(e) = self
            .store
            .get_entity(self.machine.id(), sid)
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let text = std::str::from_utf8(&e.data).map_err(|e| e.to_string())?;
        let snapshot = Persist::new(&self.machine)
            .read(text)
            .map_err(|e| format!("session {sid}: {e}"))?;
        let faults = self.faults(sid)?;
        let owner = self
            .store
            .shard_owner(shard_for(sid, SHARDS))
            .map_err(|e| e.to_string())?
            .map(|l| node_of(&l.owner).to_string());
        // The page's revision is the time of the session's last commit: a
        // timer's or an invocation's commit moves it too, not only a
        // message's.
        let rev = u64::try_from(e.updated_at).unwrap_or(0);
        Ok(Some(Seen {
            view: view_of(&self.machine, &snapshot, sid, rev, faults),
            snapshot,
            owner,
            applied: e.applied,
        }))
    }

    /// The faults armed for the session's next charge. Blocking.
    pub(crate) fn faults(&self, sid: &str) -> Result<Faults, String> {
        load_faults(&self.store, sid)
    }

    /// Arms faults for the session's next charge. Blocking.
    pub(crate) fn set_faults(&self, sid: &str, f: &Faults) -> Result<(), String> {
        self.store
            .put_snapshot_json(FAULTS, sid, None, f, Some(FAULTS_TTL))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

fn load_faults(store: &Store, sid: &str) -> Result<Faults, String> {
    Ok(store
        .get_snapshot_json::<Faults>(FAULTS, sid)
        .map_err(|e| e.to_string())?
        .map(|(_, f)| f)
        .unwrap_or_default())
}

/// The page's view of a committed snapshot.
fn view_of(m: &Machine<Value>, s: &Snapshot<Value>, sid: &str, rev: u64, faults: Faults) -> View {
    let value = s.value(m).to_json();
    let step = step_of(&value);
    View {
        sid: sid.to_string(),
        rev,
        url: Step::named(&step).map_or_else(|| "/".into(), Step::url),
        step,
        value,
        active: s.active_ids(m).iter().map(|x| x.to_string()).collect(),
        taken: Vec::new(),
        status: if machine::is_done(m, s) {
            "done"
        } else {
            "active"
        },
        context: s.context.clone(),
        key: s.context["key"].as_str().map(str::to_owned),
        faults,
        link: String::new(),
    }
}

/// Connects to NATS and joins the host to a turno-cluster node there.
fn join(name: &str, inc: u64, host: Host, nats: &[String]) -> Result<Entities, String> {
    let urls: Vec<&str> = nats.iter().map(String::as_str).collect();
    let options = NatsOptions {
        only_given_servers: true,
        ..NatsOptions::default()
    };
    let transport = NatsTransport::connect(&urls, options)
        .map_err(|e| format!("cannot connect to NATS ({}): {e}", nats.join(", ")))?;
    let config = NodeConfig {
        heartbeat_every: HEARTBEAT,
        down_after: DOWN_AFTER,
        ..NodeConfig::default()
    };
    let node = Node::new(name, inc, LocalSystem::new(), transport, config)
        .map_err(|e| format!("cannot join the cluster: {e}"))?;
    let route = RouteConfig {
        attempt_timeout: ATTEMPT,
        retry_every: Duration::from_millis(100),
    };
    EntityNode::new(node, host, route).map_err(|e| e.to_string())
}

/// The node's entity thread: NATS pumped, commands in, a tick every
/// [`TICK`]; when the command channel closes, a clean shutdown.
fn entity_loop(
    mut en: Entities,
    rx: mpsc::Receiver<Cmd>,
    store: &Store,
    machine: &Machine<Value>,
    nodes: usize,
    routed: &[std::sync::atomic::AtomicU64; 2],
) {
    let mut next_tick = Instant::now();
    // The first tick waits for the peers' first heartbeats, so that a node
    // started beside others does not take every shard.
    let startup = Instant::now() + HEARTBEAT * 3;
    let shards_for = |live: usize| SHARDS.div_ceil(u32::try_from(live.max(1)).unwrap_or(1));
    loop {
        en.pump();
        loop {
            match rx.try_recv() {
                Ok(Cmd::Op(op, answer)) => take(&mut en, store, machine, op, answer),
                Ok(Cmd::Wake(sid, applied)) => wake(&mut en, &sid, applied),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    if let Err(e) = en.shutdown(Duration::from_secs(2)) {
                        eprintln!("turno demo cluster: {}: shutdown: {e}", en.host().owner());
                    }
                    return;
                }
            }
        }
        let now = Instant::now();
        if now >= next_tick && now >= startup {
            let live = en.node().peers().len() + 1;
            // At first, before the heartbeats of all are heard, the nodes
            // the supervisor started.
            let live = if now < startup + HEARTBEAT * 10 {
                live.max(nodes)
            } else {
                live
            };
            en.host_mut().set_share(shards_for(live));
            // A store that cannot be reached is no reason to stop: the
            // leases lapse and other nodes take the shards over.
            if let Err(e) = en.tick() {
                eprintln!("turno demo cluster: {}: tick: {e}", en.host().owner());
            }
            next_tick = now + TICK;
            let stats = en.stats();
            routed[0].store(stats.forwarded, std::sync::atomic::Ordering::Relaxed);
            routed[1].store(stats.served, std::sync::atomic::Ordering::Relaxed);
        }
        en.node_mut().transport_mut().wait(Duration::from_millis(2));
    }
}

/// One page event: its step checked against the committed snapshot, then
/// routed to the owner; the answer comes from inside a later pump.
fn take(
    en: &mut Entities,
    store: &Store,
    machine: &Machine<Value>,
    op: Op,
    answer: oneshot::Sender<Result<Answer, String>>,
) {
    if let Some(guard) = &op.guard {
        match current_step(store, machine, &op.sid) {
            Ok(Some(current)) if current != *guard => {
                let _ = answer.send(Ok(Answer::Stale { current }));
                return;
            }
            Ok(_) => {}
            Err(why) => {
                let _ = answer.send(Err(why));
                return;
            }
        }
    }
    en.deliver(&op.sid, op.seq, op.event, ROUTE_DEADLINE, move |o| {
        let _ = answer.send(match o {
            Outcome::Acked { owner, .. } => Ok(Answer::Applied {
                by: node_of(&owner).to_string(),
            }),
            Outcome::Unknown { last } => Err(last),
            Outcome::Refused(why) => Err(why),
        });
    });
}

/// Wakes a session: here if this node owns its shard (no write), else by
/// an event the chart ignores, routed to the owner.
fn wake(en: &mut Entities, sid: &str, applied: u64) {
    match en.host_mut().activate(sid) {
        Ok(Routed::Delivered) => {}
        Ok(Routed::NotOwner { .. }) | Err(_) => {
            en.deliver(sid, applied + 1, Event::new(WAKE), ROUTE_DEADLINE, |_| {});
        }
    }
}

fn current_step(store: &Store, m: &Machine<Value>, sid: &str) -> Result<Option<String>, String> {
    let Some(e) = store.get_entity(m.id(), sid).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&e.data).map_err(|e| e.to_string())?;
    let snap = Persist::new(m).read(text).map_err(|e| e.to_string())?;
    Ok(Some(step_of(&snap.value(m).to_json())))
}

type EntityActor = ChartActor<Value, EntityExt>;

/// The invocations the chart names, for a session as an entity: the
/// charge and the lookup, over HTTP to the gateway, with the faults armed
/// in the store.
fn services(store: Store, gateway: SocketAddr) -> Arc<HashMap<String, Service<Value, EntityExt>>> {
    let s = store.clone();
    let charge = Service::custom(move |ctx, ext: &mut EntityExt, snap, started| {
        charge(ctx, ext, snap, started, s.clone(), gateway)
    });
    let lookup = Service::custom(move |ctx, ext: &mut EntityExt, _snap, started| {
        lookup(ctx, ext, started, store.clone(), gateway)
    });
    Arc::new(HashMap::from([
        (machine::CHARGE.to_string(), charge),
        (machine::LOOKUP.to_string(), lookup),
    ]))
}

/// The invocation's result as the chart's message; a future lost on the
/// way is an unknown outcome.
fn on_done(
    s: &Started,
) -> impl Fn(Response<Result<Value, Value>>) -> ChartMsg<Delivery> + Send + Sync + 'static {
    let s = Started {
        path: s.path.clone(),
        id: s.id.clone(),
        generation: s.generation,
        input: Value::Null,
    };
    move |r| {
        s.done(match r {
            Response::Reply(r) => r,
            Response::TimedOut => Err(json!({"kind": "timeout", "known": false})),
        })
    }
}

fn piped(
    ctx: &mut Context<'_, EntityActor>,
    s: &Started,
    r: Result<turno::RequestId, impl std::fmt::Display>,
) -> Running {
    match r {
        Ok(req) => Running::Request(req),
        Err(e) => {
            let me = ctx.addr();
            let _ = ctx.send(
                &me,
                s.done(Err(json!({"kind": e.to_string(), "known": true}))),
            );
            Running::Nothing
        }
    }
}

fn charge(
    ctx: &mut Context<'_, EntityActor>,
    ext: &mut EntityExt,
    snap: &Snapshot<Value>,
    s: Started,
    store: Store,
    gateway: SocketAddr,
) -> Running {
    // The interpreter carries a macrostep's effects out after its write,
    // landed or not: an activation whose write was refused charges nothing.
    if !ext.live() {
        return Running::Nothing;
    }
    let sid = ext.key().to_string();
    let key = s.input["key"].as_str().unwrap_or_default().to_owned();
    let c = &snap.context;
    let body = json!({
        "amount_cents": s.input["amount"],
        "plan": c["plan"]["id"],
        "token": c["payment"]["token"],
        "last4": c["payment"]["last4"],
        "email": c["personal"]["email"],
    });
    let r = ctx.pipe(
        async move {
            // The charge faults are one-shot: taken here, the retry goes
            // through.
            let faults = tokio::task::spawn_blocking(move || {
                let f = load_faults(&store, &sid).unwrap_or_default();
                if !f.charge.is_empty() {
                    let mut rest = f.clone();
                    rest.charge.clear();
                    let _ = store.put_snapshot_json(FAULTS, &sid, None, &rest, Some(FAULTS_TTL));
                }
                f
            })
            .await
            .unwrap_or_default();
            let r = client::charge_within(gateway, &key, &body, &faults, CHARGE_TIMEOUT).await;
            r.map(|v| v["receipt"].clone()).map_err(|e| {
                if e["known"] == json!(true) {
                    json!({"rejected": e["message"], "kind": e["kind"], "message": e["message"]})
                } else {
                    e
                }
            })
        },
        None,
        on_done(&s),
    );
    piped(ctx, &s, r)
}

fn lookup(
    ctx: &mut Context<'_, EntityActor>,
    ext: &mut EntityExt,
    s: Started,
    store: Store,
    gateway: SocketAddr,
) -> Running {
    if !ext.live() {
        return Running::Nothing;
    }
    let sid = ext.key().to_string();
    let key = s.input["key"].as_str().unwrap_or_default().to_owned();
    let r = ctx.pipe(
        async move {
            let faults = tokio::task::spawn_blocking(move || load_faults(&store, &sid))
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            match client::query(gateway, &key, &faults, client::TIMEOUT).await {
                Ok(Lookup::Charged(receipt)) => Ok(json!({"found": receipt})),
                Ok(Lookup::Unknown) => Ok(json!({"found": null})),
                Err(e) => Err(json!({"kind": "lookup failed", "message": e})),
            }
        },
        None,
        on_done(&s),
    );
    piped(ctx, &s, r)
}
