//! A node's session home: the signup sessions as entities of one
//! [`EntityHost`] on PostgreSQL, driven by one thread, and the routing of a
//! page's event to the node that owns the session's shard.
//!
//! **Routing.** A page's event is delivered to the local host first. When
//! the host does not own the session's shard it answers with the lease
//! row's owner, and the event is forwarded to that node (its `/_node/op`,
//! over loopback HTTP), whose host delivers it in turn and answers with
//! the entity's acknowledgement. With no live lease (the owner died and its
//! lease has not run out yet), or no answer from the owner, the event is
//! tried again every [`RETRY`] with the **same sequence**, until a node
//! took the shard over or [`ROUTE_DEADLINE`] passed: an attempt that was
//! applied but whose answer was lost is acknowledged as a duplicate the
//! next time, never applied twice.
//!
//! **Sequences.** The node that serves a page numbers its event: the
//! session's applied sequence (from the store) plus one, kept for every
//! retry of that event. Two pages of one session sending at the same time
//! through two nodes can draw the same number; the second is then
//! acknowledged as a duplicate and changes nothing (the user sends it
//! again).
//!
//! **The step check.** A form's step is checked on the owner, against the
//! session's committed snapshot, right before the event is delivered, one
//! event of a session at a time on the owner. A timer or the gateway's
//! answer may still move the session between the check and the event; the
//! chart ignores an event its state has no transition for.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use turno::{Context, Response, ThreadedSystem};
use turno_chart::interpreter::{ChartActor, ChartMsg, Running, Service, Started};
use turno_chart::persist::Persist;
use turno_chart::{Event, Machine, Snapshot};
use turno_entity::{Ack, Delivery, EntityExt, EntityHost, HostConfig, Reply, Routed};
use turno_store::{shard_for, Store};

use super::{node_of, LEASE_TTL, SHARDS};
use crate::client::{self, Faults, Lookup};
use crate::machine::{self, step_of};
use crate::session::View;
use crate::steps::Step;

/// How often the host renews its leases, passivates and wakes timers.
const TICK: Duration = Duration::from_millis(200);
/// How long a routed event keeps trying before it gives up.
pub(crate) const ROUTE_DEADLINE: Duration = Duration::from_secs(12);
/// The pause between two attempts of a routed event.
const RETRY: Duration = Duration::from_millis(150);
/// How long one attempt at the owner may take (a paused owner answers
/// nothing).
const ATTEMPT: Duration = Duration::from_millis(1500);
/// How long a node waits for the gateway's answer to a charge: longer than
/// a lease, so that an owner that dies or stops while the gateway holds a
/// charge's reply is taken over before its own wait would have ended.
pub(crate) const CHARGE_TIMEOUT: Duration = Duration::from_secs(5);
/// Where a session's armed faults are kept (any node arms them, the owner
/// charges with them).
const FAULTS: &str = "wizard-faults";
/// How long armed faults are kept.
const FAULTS_TTL: Duration = Duration::from_secs(24 * 3600);

type Host = EntityHost<ThreadedSystem, Value>;

/// An event (or a wake-up) for a session, as one node asks another.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Op {
    /// The session.
    pub sid: String,
    /// The event's sequence for the session (ignored for a wake-up).
    pub seq: u64,
    /// The event (`None`: wake the session up, no event).
    pub event: Option<Event>,
    /// The step the session must be at, checked on the owner.
    pub guard: Option<String>,
}

/// What an attempt at a node came to.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "outcome", rename_all = "snake_case")]
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
    /// That node does not own the session's shard; the lease row names
    /// `owner` (`<node>/<incarnation>`), if a lease is live.
    NotOwner {
        /// The live lease's owner.
        owner: Option<String>,
    },
    /// Not committed (fenced, failed, no answer): try again.
    Retry {
        /// Why.
        why: String,
    },
}

enum Cmd {
    Op(Op, oneshot::Sender<Local>),
    Share(u32),
}

enum Local {
    Pending(oneshot::Receiver<Ack>),
    Done(Answer),
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

/// A node's sessions: its host thread, the store, and its peers.
pub(crate) struct Home {
    /// The node's name.
    pub name: String,
    /// Its lease owner name (`<name>/<incarnation>`).
    pub owner: String,
    pub store: Store,
    pub machine: Arc<Machine<Value>>,
    peers: BTreeMap<String, SocketAddr>,
    cmds: Mutex<Option<mpsc::Sender<Cmd>>>,
    host_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// One event of a session at a time on this node (as its owner).
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The node's host's fenced writes so far (shown on the page).
    pub fenced: Arc<std::sync::atomic::AtomicU64>,
}

impl Home {
    /// Starts the host thread of node `name` on `store`, its charges going
    /// to `gateway`. Call inside a tokio runtime.
    pub(crate) fn start(
        name: &str,
        store: Store,
        gateway: SocketAddr,
        peers: BTreeMap<String, SocketAddr>,
    ) -> Result<Arc<Home>, String> {
        let owner = format!("{name}/{}", crate::ids::random_hex(4));
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
        let mut host = EntityHost::new(
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
        host.set_share(share(peers.len()));
        let (tx, rx) = mpsc::channel();
        let m = machine.clone();
        let st = store.clone();
        let thread = std::thread::Builder::new()
            .name(format!("turno-wizard-{name}-host"))
            .spawn(move || host_loop(host, rx, st, m))
            .map_err(|e| format!("the host thread: {e}"))?;
        Ok(Arc::new(Home {
            name: name.to_string(),
            owner,
            store,
            machine,
            peers,
            cmds: Mutex::new(Some(tx)),
            host_thread: Mutex::new(Some(thread)),
            locks: Mutex::default(),
            fenced,
        }))
    }

    /// A clean stop: the host lets its sessions finish what they hold,
    /// stops them and releases its leases, so other nodes take the shards
    /// over at once. Blocking.
    pub(crate) fn shutdown(&self) {
        drop(self.cmds.lock().expect("lock").take());
        if let Some(t) = self.host_thread.lock().expect("lock").take() {
            let _ = t.join();
        }
    }

    /// Sets how many shards this node takes (from the live nodes).
    pub(crate) fn set_live(&self, live: usize) {
        if let Some(tx) = self.cmds.lock().expect("lock").as_ref() {
            let _ = tx.send(Cmd::Share(share(live)));
        }
    }

    /// The peers (name, address), this node among them.
    pub(crate) fn peers(&self) -> &BTreeMap<String, SocketAddr> {
        &self.peers
    }

    fn lock_for(&self, sid: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().expect("lock");
        // Locks nobody holds or waits for are dropped as the table grows.
        if locks.len() > 4096 {
            locks.retain(|_, l| Arc::strong_count(l) > 1);
        }
        locks.entry(sid.to_string()).or_default().clone()
    }

    /// One attempt of `op` at this node's host (the owner side of
    /// routing): never forwarded further.
    pub(crate) async fn local(&self, op: Op) -> Answer {
        let lock = self.lock_for(&op.sid);
        let _one = lock.lock().await;
        let (tx, rx) = oneshot::channel();
        let sent = match self.cmds.lock().expect("lock").as_ref() {
            Some(cmds) => cmds.send(Cmd::Op(op, tx)).is_ok(),
            None => false,
        };
        if !sent {
            return Answer::Retry {
                why: "the node is stopping".into(),
            };
        }
        let local = match tokio::time::timeout(ATTEMPT, rx).await {
            Ok(Ok(l)) => l,
            _ => {
                return Answer::Retry {
                    why: "the host did not answer".into(),
                }
            }
        };
        match local {
            Local::Done(a) => a,
            Local::Pending(ack) => match tokio::time::timeout(ATTEMPT, ack).await {
                Ok(Ok(ack)) if ack.is_acknowledged() => Answer::Applied {
                    by: self.name.clone(),
                },
                Ok(Ok(ack)) => Answer::Retry {
                    why: format!("{ack:?}"),
                },
                _ => Answer::Retry {
                    why: "the session did not answer".into(),
                },
            },
        }
    }

    /// Delivers `op` to the session's owner, wherever it is (see the
    /// [module docs](self)): `Applied` or `Stale`, or why not by the
    /// deadline.
    pub(crate) async fn route(&self, op: Op) -> Result<Answer, String> {
        let deadline = Instant::now() + ROUTE_DEADLINE;
        let mut at: Option<String> = None;
        let mut last;
        loop {
            let answer = match at.as_deref() {
                Some(n) if n != self.name => self.forward(n, &op).await,
                _ => self.local(op.clone()).await,
            };
            match answer {
                a @ (Answer::Applied { .. } | Answer::Stale { .. }) => return Ok(a),
                Answer::NotOwner { owner: Some(o) } => {
                    let n = node_of(&o).to_string();
                    if at.as_deref() != Some(n.as_str()) && self.peers.contains_key(&n) {
                        at = Some(n);
                        continue;
                    }
                    last = format!("{n} owns the session but does not take it");
                    at = None;
                }
                Answer::NotOwner { owner: None } => {
                    last = "no node owns the session's shard now".into();
                    at = None;
                }
                Answer::Retry { why } => {
                    last = why;
                    at = None;
                }
            }
            if Instant::now() + RETRY > deadline {
                return Err(last);
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// One attempt of `op` at node `name`.
    async fn forward(&self, name: &str, op: &Op) -> Answer {
        let Some(addr) = self.peers.get(name) else {
            return Answer::Retry {
                why: format!("no node {name}"),
            };
        };
        let body = serde_json::to_value(op).unwrap_or(Value::Null);
        match client::post_json(*addr, "/_node/op", &body, ATTEMPT).await {
            Ok((200, v)) => serde_json::from_value(v).unwrap_or_else(|e| Answer::Retry {
                why: format!("{name} answered {e}"),
            }),
            Ok((status, v)) => Answer::Retry {
                why: format!("{name} answered {status}: {v}"),
            },
            Err(e) => Answer::Retry {
                why: format!("{name}: {e}"),
            },
        }
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

    /// The number of nodes holding a live shard lease, this one counted
    /// even if it holds none. Blocking.
    pub(crate) fn live_nodes(&self) -> Result<usize, String> {
        let mut names = std::collections::BTreeSet::from([self.name.clone()]);
        for shard in 0..SHARDS {
            if let Some(l) = self.store.shard_owner(shard).map_err(|e| e.to_string())? {
                names.insert(node_of(&l.owner).to_string());
            }
        }
        Ok(names.len())
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

/// The shards a node takes when `live` nodes share them.
fn share(live: usize) -> u32 {
    let live = u32::try_from(live.max(1)).unwrap_or(1);
    SHARDS.div_ceil(live)
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

/// The host's thread: commands in, ticks every [`TICK`]; when the
/// command channel closes, a clean shutdown.
fn host_loop(mut host: Host, rx: mpsc::Receiver<Cmd>, store: Store, machine: Arc<Machine<Value>>) {
    let mut next_tick = Instant::now();
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Cmd::Share(n)) => host.set_share(n),
            Ok(Cmd::Op(op, answer)) => {
                let local = take(&mut host, &store, &machine, op);
                let _ = answer.send(local);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Err(e) = host.shutdown(Duration::from_secs(2)) {
                    eprintln!("turno demo cluster: {}: shutdown: {e}", host.owner());
                }
                return;
            }
        }
        if Instant::now() >= next_tick {
            if let Err(e) = host.tick() {
                eprintln!("turno demo cluster: {}: tick: {e}", host.owner());
            }
            next_tick = Instant::now() + TICK;
        }
    }
}

/// One op at the host.
fn take(host: &mut Host, store: &Store, machine: &Machine<Value>, op: Op) -> Local {
    let not_owner = |r: Routed| match r {
        Routed::NotOwner { owner, .. } => Some(Local::Done(Answer::NotOwner {
            owner: owner.map(|l| l.owner),
        })),
        Routed::Delivered => None,
    };
    let failed = |e: turno_entity::EntityError| Local::Done(Answer::Retry { why: e.to_string() });
    let Some(event) = op.event else {
        return match host.activate(&op.sid) {
            Ok(r) => not_owner(r).unwrap_or_else(|| {
                Local::Done(Answer::Applied {
                    by: host.owner().to_string(),
                })
            }),
            Err(e) => failed(e),
        };
    };
    let shard = shard_for(&op.sid, SHARDS);
    let owned = host.held().iter().any(|l| l.shard == shard);
    if let (true, Some(guard)) = (owned, &op.guard) {
        match current_step(store, machine, &op.sid) {
            Ok(Some(current)) if current != *guard => {
                return Local::Done(Answer::Stale { current });
            }
            Ok(_) => {}
            Err(why) => return Local::Done(Answer::Retry { why }),
        }
    }
    let (tx, rx) = oneshot::channel();
    let reply = Reply::new(move |ack| {
        let _ = tx.send(ack);
    });
    match host.deliver(&op.sid, op.seq, event, reply) {
        Ok(r) => not_owner(r).unwrap_or(Local::Pending(rx)),
        Err(e) => failed(e),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_are_shared_out_among_the_live_nodes_rounding_up() {
        assert_eq!(share(3), SHARDS.div_ceil(3));
        assert_eq!(share(2), SHARDS.div_ceil(2));
        assert_eq!(share(1), SHARDS);
        assert_eq!(share(0), SHARDS, "a node alone takes every shard");
    }
}
