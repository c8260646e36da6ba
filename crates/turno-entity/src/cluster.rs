//! Routing between nodes (feature `cluster`): an [`EntityNode`] is an
//! [`EntityHost`] joined to a turno-cluster [`Node`], so that **any node
//! accepts a message for any key** and the message reaches the shard's
//! owner, with one outcome for the caller.
//!
//! [`EntityNode::deliver`] takes a message for a key with a deadline on
//! the node's clock. Each attempt goes through the local host first:
//!
//! - the host owns the key's shard: the entity takes it here;
//! - the host answers [`Routed::NotOwner`] with the lease row's owner: the
//!   message is asked of that node's `/entities` actor over the transport
//!   (a remote ask with a deadline), where its host delivers it in turn;
//! - no live lease, or its owner is not a peer this node believes up (it
//!   died; its lease has not yet expired): the attempt waits
//!   [`RouteConfig::retry_every`] and starts over, reading the lease row
//!   again, until another node took the shard over.
//!
//! An attempt ends acknowledged ([`Ack::Applied`], [`Ack::Duplicate`]),
//! or is retried: the owner answered `NotOwner` (it lost the shard since
//! the lease row was read), the write was fenced or failed, the activation
//! ended before it took the message, or no answer came in time. A retry
//! carries the same sequence, so a message applied by an attempt whose
//! answer was lost is acknowledged as a duplicate, never applied twice.
//! At the deadline the caller hears [`Outcome::Unknown`]: the message may
//! or may not have been applied, and sending it again with the same
//! sequence is safe.
//!
//! The caller drives the node: [`EntityNode::pump`] often (it pumps the
//! transport, takes the requests of other nodes, retries and answers), and
//! [`EntityNode::tick`] several times per lease time (the host's leases,
//! passivation and timers). Outcomes are handed to their callbacks inside
//! `pump`, on the caller's thread.
//!
//! A host's owner name is `<node name>/<suffix>` (the node's name, then
//! anything that tells its starts apart, e.g. its incarnation): the lease
//! row's owner names the node to route to.
//!
//! ```
//! use std::cell::RefCell;
//! use std::rc::Rc;
//! use std::sync::Arc;
//! use std::time::Duration;
//! use turno::DetSystem;
//! use turno_chart::{load_json, stdlib, Event};
//! use turno_cluster::node::{Node, NodeConfig};
//! use turno_cluster::sim::{Faults, SimBroker};
//! use turno_entity::cluster::{EntityNode, Outcome, RouteConfig};
//! use turno_entity::{Ack, EntityHost, HostConfig};
//! use turno_store::{ManualClock, Store};
//!
//! let machine = Arc::new(load_json::<serde_json::Value>(
//!     r#"{"id": "door", "initial": "closed", "states": {
//!         "closed": {"on": {"OPEN": "open"}}, "open": {"on": {"CLOSE": "closed"}}}}"#,
//!     &stdlib::implementations(),
//! ).unwrap());
//! let store = Store::memory().with_clock(ManualClock::new(1_767_225_600_000));
//! let broker = SimBroker::new(1, Faults::none());
//! let config = HostConfig { shards: 4, ..HostConfig::default() };
//! let mut nodes: Vec<_> = ["a", "b"]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, name)| {
//!         let node = Node::new(name, 1, DetSystem::new(i as u64),
//!             broker.transport(name, Duration::ZERO), NodeConfig::default()).unwrap();
//!         let host = EntityHost::new(DetSystem::new(10 + i as u64), store.clone(),
//!             format!("{name}/1"), machine.clone(), config.clone());
//!         EntityNode::new(node, host, RouteConfig::default()).unwrap()
//!     })
//!     .collect();
//! nodes[0].tick().unwrap(); // a takes every shard: b holds none
//! nodes[1].tick().unwrap();
//! assert!(nodes[1].host().held().is_empty());
//!
//! // b accepts the message and routes it to a, the owner.
//! let got = Rc::new(RefCell::new(None));
//! let g = got.clone();
//! nodes[1].deliver("door-1", 1, Event::new("OPEN"), Duration::from_secs(2),
//!     move |o| *g.borrow_mut() = Some(o));
//! while got.borrow().is_none() {
//!     broker.advance(Duration::from_millis(1));
//!     for n in &mut nodes {
//!         n.pump();
//!         n.host_mut().system_mut().run_until_idle().unwrap();
//!     }
//! }
//! assert_eq!(*got.borrow(), Some(Outcome::Acked { ack: Ack::Applied, owner: "a/1".into() }));
//! assert_eq!(store.get_entity("door", "door-1").unwrap().unwrap().applied, 1);
//! ```

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use turno::{Actor, Context, Props, System};
use turno_chart::Event;
use turno_cluster::node::{Node, RemoteAddr, RemoteReplyTo, RemoteResponse};
use turno_cluster::transport::Transport;

use crate::activation::{Ack, Reply};
use crate::host::{EntityError, EntityHost, HostTick, Routed};

/// The path of the actor that takes other nodes' messages on every node.
pub const ENTITIES_PATH: &str = "/entities";
/// The wire name of [`EntityRequest`].
pub const REQUEST_TYPE: &str = "turno.entity.request";

/// How a node routes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteConfig {
    /// The longest one attempt at another node waits for its answer (cut
    /// to what is left of the message's deadline).
    pub attempt_timeout: Duration,
    /// How long an attempt that could not be made (no live lease, the
    /// owner down, the write fenced) waits before the next.
    pub retry_every: Duration,
}

impl Default for RouteConfig {
    fn default() -> Self {
        RouteConfig {
            attempt_timeout: Duration::from_millis(1_000),
            retry_every: Duration::from_millis(50),
        }
    }
}

/// What the caller of [`EntityNode::deliver`] hears: once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The shard's owner committed the message ([`Ack::Applied`]) or had
    /// before ([`Ack::Duplicate`]). `owner` is the host that answered (its
    /// owner name).
    Acked {
        /// Applied or Duplicate.
        ack: Ack,
        /// The answering host's owner name.
        owner: String,
    },
    /// The deadline passed without an acknowledgement: the message may or
    /// may not have been applied. `last` says what the last attempt met.
    /// Sending it again with the same sequence is safe.
    Unknown {
        /// The last attempt's fate, in words.
        last: String,
    },
    /// The owner cannot take the message at all (its event does not
    /// decode, the entity's stored state cannot be restored): retrying
    /// does not help. The words say why.
    Refused(String),
}

/// A message for an entity, as it crosses the wire to the shard's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityRequest {
    /// The entity's key.
    pub key: String,
    /// The sender's sequence for the key.
    pub seq: u64,
    /// The event, as XState's JSON (`{"type": ..., ...}`) in text: the
    /// wire's codec need not describe JSON values itself.
    pub event: String,
}

/// What the owner's node answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntityAnswer {
    /// [`Ack::Applied`], by the named host.
    Applied(String),
    /// [`Ack::Duplicate`], by the named host.
    Duplicate(String, u64),
    /// Not committed (fenced, failed, unanswered): the words say why.
    NotApplied(String),
    /// That node does not own the shard; the lease row's owner, if live.
    NotOwner(Option<String>),
    /// The message cannot be taken (see [`Outcome::Refused`]).
    Refused(String),
}

/// Why an [`EntityNode`] could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The host's owner name does not start with `<node name>/`.
    #[error("the host's owner {owner:?} must be the node's name {node:?}, a slash and a suffix")]
    OwnerName {
        /// The host's owner name.
        owner: String,
        /// The node's name.
        node: String,
    },
    /// The request type could not be registered or exported.
    #[error("entity routing: {0}")]
    Wire(String),
    /// The actor taking other nodes' requests could not be spawned.
    #[error("entity routing: spawn {ENTITIES_PATH}: {0}")]
    Spawn(String),
}

/// The node named in an owner name (`<node>/<suffix>`).
pub fn node_of(owner: &str) -> &str {
    owner.rsplit_once('/').map_or(owner, |(node, _)| node)
}

type Incoming = (EntityRequest, RemoteReplyTo<EntityAnswer>);
type Queue<T> = Arc<Mutex<VecDeque<T>>>;

/// The actor at [`ENTITIES_PATH`]: it queues other nodes' requests for the
/// node's loop, which owns the host.
struct Inbox(Queue<Incoming>);

impl Actor for Inbox {
    type Msg = Incoming;
    fn handle(&mut self, _: &mut Context<'_, Self>, msg: Incoming) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(msg);
    }
}

/// How one attempt ended.
enum Attempt {
    Answer(EntityAnswer),
    Local(Ack, String),
    NoAnswer(String),
}

type OnOutcome = Box<dyn FnOnce(Outcome)>;

struct Pending {
    key: String,
    seq: u64,
    event: Event,
    deadline: Duration,
    next_try: Duration,
    /// The number of the attempt in flight (answers of others are stale).
    attempt: u64,
    in_flight: bool,
    last: String,
    on_outcome: OnOutcome,
}

/// Routing statistics of one node (see [`EntityNode::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteStats {
    /// Messages accepted by [`EntityNode::deliver`].
    pub accepted: u64,
    /// Attempts made (local and remote).
    pub attempts: u64,
    /// Attempts asked of another node.
    pub forwarded: u64,
    /// Messages acknowledged to their caller.
    pub acked: u64,
    /// Messages answered [`Outcome::Unknown`].
    pub unknown: u64,
    /// Messages answered [`Outcome::Refused`].
    pub refused: u64,
    /// Requests of other nodes taken.
    pub served: u64,
}

/// An [`EntityHost`] joined to a [`Node`]: see the [module docs](self).
pub struct EntityNode<N: System, T: Transport, S: System, C>
where
    C: Clone + Send + Sync + Serialize + 'static,
{
    node: Node<N, T>,
    host: EntityHost<S, C>,
    config: RouteConfig,
    inbox: Queue<Incoming>,
    /// Local answers (from the host's system, any thread).
    local: Queue<(u64, u64, Ack)>,
    /// Other nodes' requests being served, by serving id.
    serving: HashMap<u64, RemoteReplyTo<EntityAnswer>>,
    /// The host's answers to them (from the host's system, any thread).
    served_acks: Queue<(u64, Ack)>,
    /// Remote answers (from the node's pump).
    remote: Rc<RefCell<Vec<(u64, u64, Attempt)>>>,
    pending: BTreeMap<u64, Pending>,
    next_id: u64,
    stats: RouteStats,
}

impl<N: System, T: Transport, S: System, C> EntityNode<N, T, S, C>
where
    C: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
{
    /// Joins `host` to `node`: registers the request type, spawns the actor
    /// at [`ENTITIES_PATH`] on the node's system and exports it. The host's
    /// owner name must be the node's name, a slash and a suffix.
    pub fn new(
        mut node: Node<N, T>,
        host: EntityHost<S, C>,
        config: RouteConfig,
    ) -> Result<Self, RouteError> {
        let name = node.me().name.clone();
        if node_of(host.owner()) != name || !host.owner().contains('/') {
            return Err(RouteError::OwnerName {
                owner: host.owner().to_string(),
                node: name,
            });
        }
        node.register::<EntityRequest>(REQUEST_TYPE)
            .map_err(|e| RouteError::Wire(e.to_string()))?;
        let inbox: Queue<Incoming> = Arc::default();
        let q = inbox.clone();
        let addr = node
            .system()
            .spawn(Props::new().name(&ENTITIES_PATH[1..]), move || {
                Inbox(q.clone())
            })
            .map_err(|e| RouteError::Spawn(e.to_string()))?;
        node.export_ask(&addr, |q: EntityRequest, r| (q, r))
            .map_err(|e| RouteError::Wire(e.to_string()))?;
        Ok(EntityNode {
            node,
            host,
            config,
            inbox,
            local: Arc::default(),
            remote: Rc::default(),
            serving: HashMap::new(),
            served_acks: Arc::default(),
            pending: BTreeMap::new(),
            next_id: 1,
            stats: RouteStats::default(),
        })
    }

    /// The cluster node.
    pub fn node(&self) -> &Node<N, T> {
        &self.node
    }

    /// The cluster node, to drive its system or transport.
    pub fn node_mut(&mut self) -> &mut Node<N, T> {
        &mut self.node
    }

    /// The entity host.
    pub fn host(&self) -> &EntityHost<S, C> {
        &self.host
    }

    /// The entity host, to drive its system.
    pub fn host_mut(&mut self) -> &mut EntityHost<S, C> {
        &mut self.host
    }

    /// This node's routing counters.
    pub fn stats(&self) -> RouteStats {
        self.stats
    }

    /// Messages accepted and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// The host's periodic work ([`EntityHost::tick`]): call it several
    /// times per lease time.
    pub fn tick(&mut self) -> Result<HostTick, EntityError> {
        self.host.tick()
    }

    /// Accepts message `seq` (the caller's sequence for `key`, see
    /// [`EntityHost::deliver`]) carrying `event` for entity `key`, and
    /// routes it to the shard's owner, retrying until `within` has passed
    /// on the node's clock. `on_outcome` is called once, from a later
    /// [`EntityNode::pump`]. Returns the message's id on this node.
    pub fn deliver(
        &mut self,
        key: &str,
        seq: u64,
        event: Event,
        within: Duration,
        on_outcome: impl FnOnce(Outcome) + 'static,
    ) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.stats.accepted += 1;
        let now = self.node.now();
        self.pending.insert(
            id,
            Pending {
                key: key.to_string(),
                seq,
                event,
                deadline: now + within,
                next_try: now,
                attempt: 0,
                in_flight: false,
                last: "not tried yet".into(),
                on_outcome: Box::new(on_outcome),
            },
        );
        self.try_one(id);
        id
    }

    /// Runs the node's side once: pumps the transport, takes other nodes'
    /// requests (delivered to the local host, or answered `NotOwner`),
    /// takes the answers of attempts, retries what is due and answers what
    /// is decided or past its deadline. Returns how many messages were
    /// answered to their callers.
    pub fn pump(&mut self) -> usize {
        self.node.pump();
        self.node.system_mut().settle(Duration::ZERO);
        self.serve();
        self.node.pump();
        let mut answered = 0;
        let local: Vec<_> = self
            .local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        let owner = self.host.owner().to_string();
        let mut done: Vec<(u64, u64, Attempt)> = local
            .into_iter()
            .map(|(id, n, ack)| (id, n, Attempt::Local(ack, owner.clone())))
            .collect();
        done.append(&mut self.remote.borrow_mut());
        for (id, n, attempt) in done {
            answered += usize::from(self.settle_attempt(id, n, attempt));
        }
        let now = self.node.now();
        let due: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| !p.in_flight && (p.next_try <= now || p.deadline <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if self.pending.get(&id).is_some_and(|p| p.deadline <= now) {
                answered += 1;
                self.finish(id, None);
            } else {
                self.try_one(id);
            }
        }
        // A local attempt has no deadline of its own: the message's is it.
        let late: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.in_flight && p.deadline + self.config.attempt_timeout <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            answered += 1;
            self.finish(id, None);
        }
        answered
    }

    /// A clean shutdown of the host ([`EntityHost::shutdown`]): drains its
    /// activations and releases its leases. Messages still being routed by
    /// this node are answered [`Outcome::Unknown`].
    pub fn shutdown(&mut self, drain: Duration) -> Result<usize, EntityError> {
        let released = self.host.shutdown(drain);
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        for id in ids {
            if let Some(p) = self.pending.get_mut(&id) {
                p.last = "this node shut down".into();
            }
            self.finish(id, None);
        }
        released
    }

    /// Serves other nodes' requests.
    fn serve(&mut self) {
        let incoming: Vec<Incoming> = self
            .inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for (req, reply) in incoming {
            self.stats.served += 1;
            let event = match serde_json::from_str::<Event>(&req.event) {
                Ok(e) => e,
                Err(e) => {
                    reply.reply(EntityAnswer::Refused(format!(
                        "entity {}: message {}: the event does not decode: {e}",
                        req.key, req.seq
                    )));
                    continue;
                }
            };
            let sid = self.next_id;
            self.next_id += 1;
            let acks = self.served_acks.clone();
            let r = Reply::new(move |ack| {
                acks.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_back((sid, ack));
            });
            self.serving.insert(sid, reply);
            let answer = match self.host.deliver(&req.key, req.seq, event, r) {
                Ok(Routed::Delivered) => continue,
                Ok(Routed::NotOwner { owner, .. }) => {
                    EntityAnswer::NotOwner(owner.map(|l| l.owner))
                }
                Err(e @ (EntityError::Restore { .. } | EntityError::NotText { .. })) => {
                    EntityAnswer::Refused(e.to_string())
                }
                Err(e) => EntityAnswer::NotApplied(e.to_string()),
            };
            // The reply dropped unused answered `Unanswered` to the queue;
            // with its handle gone from `serving`, that answer is skipped.
            if let Some(reply) = self.serving.remove(&sid) {
                reply.reply(answer);
            }
        }
        let acks: Vec<(u64, Ack)> = self
            .served_acks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        let owner = self.host.owner().to_string();
        for (sid, ack) in acks {
            if let Some(reply) = self.serving.remove(&sid) {
                reply.reply(answer_of(ack, owner.clone()));
            }
        }
    }

    /// Makes one attempt for message `id`.
    fn try_one(&mut self, id: u64) {
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        p.attempt += 1;
        p.in_flight = true;
        self.stats.attempts += 1;
        let n = p.attempt;
        let (key, seq, event) = (p.key.clone(), p.seq, p.event.clone());
        let local = self.local.clone();
        let reply = Reply::new(move |ack| {
            local
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_back((id, n, ack));
        });
        let owner = match self.host.deliver(&key, seq, event.clone(), reply) {
            Ok(Routed::Delivered) => return,
            Ok(Routed::NotOwner { owner, .. }) => owner,
            Err(e) => {
                let refused =
                    matches!(e, EntityError::Restore { .. } | EntityError::NotText { .. });
                let why = e.to_string();
                if refused {
                    self.finish(id, Some(Outcome::Refused(why)));
                } else {
                    self.wait_retry(id, why);
                }
                return;
            }
        };
        // `deliver` answered the reply `Unanswered` as it dropped it: that
        // answer is for this attempt, which goes on remotely: skip it.
        self.local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(i, a, _)| !(*i == id && *a == n));
        let Some(lease) = owner else {
            self.wait_retry(id, "the shard has no live lease".into());
            return;
        };
        let to = node_of(&lease.owner).to_string();
        if to == self.node.me().name || self.node.peer(&to).is_none() {
            let why = format!("the shard's owner {} is not reachable", lease.owner);
            self.wait_retry(id, why);
            return;
        }
        let Ok(text) = serde_json::to_string(&event) else {
            self.finish(
                id,
                Some(Outcome::Refused("the event does not encode".into())),
            );
            return;
        };
        let now = self.node.now();
        let Some(p) = self.pending.get(&id) else {
            return;
        };
        let timeout = self
            .config
            .attempt_timeout
            .min(p.deadline.saturating_sub(now))
            .max(Duration::from_millis(1));
        let request = EntityRequest {
            key,
            seq,
            event: text,
        };
        let remote = self.remote.clone();
        let target = lease.owner.clone();
        self.stats.forwarded += 1;
        let sent = self.node.ask(
            &RemoteAddr::<EntityRequest>::new(to, ENTITIES_PATH),
            &request,
            timeout,
            move |r: RemoteResponse<EntityAnswer>| {
                let attempt = match r {
                    RemoteResponse::Reply(a) => Attempt::Answer(a),
                    RemoteResponse::TimedOut => {
                        Attempt::NoAnswer(format!("{target} did not answer in time"))
                    }
                    RemoteResponse::NotDelivered(v) => {
                        Attempt::NoAnswer(format!("{target} did not take it: {v:?}"))
                    }
                    RemoteResponse::Undecodable(e) => {
                        Attempt::NoAnswer(format!("{target}'s answer does not decode: {e}"))
                    }
                };
                remote.borrow_mut().push((id, n, attempt));
            },
        );
        if let Err(e) = sent {
            self.finish(id, Some(Outcome::Refused(e.to_string())));
        }
    }

    /// Takes an attempt's end; true when the message was answered.
    fn settle_attempt(&mut self, id: u64, n: u64, attempt: Attempt) -> bool {
        match self.pending.get(&id) {
            Some(p) if p.attempt == n && p.in_flight => {}
            _ => return false,
        }
        let retry = match attempt {
            Attempt::Local(ack, owner) if ack.is_acknowledged() => {
                self.finish(id, Some(Outcome::Acked { ack, owner }));
                return true;
            }
            Attempt::Local(ack, owner) => format!("{owner}: {ack:?}"),
            Attempt::Answer(EntityAnswer::Applied(owner)) => {
                let ack = Ack::Applied;
                self.finish(id, Some(Outcome::Acked { ack, owner }));
                return true;
            }
            Attempt::Answer(EntityAnswer::Duplicate(owner, applied)) => {
                let ack = Ack::Duplicate { applied };
                self.finish(id, Some(Outcome::Acked { ack, owner }));
                return true;
            }
            Attempt::Answer(EntityAnswer::Refused(why)) => {
                self.finish(id, Some(Outcome::Refused(why)));
                return true;
            }
            Attempt::Answer(EntityAnswer::NotApplied(why)) => why,
            Attempt::Answer(EntityAnswer::NotOwner(owner)) => format!(
                "the node asked no longer owns the shard (lease row: {})",
                owner.as_deref().unwrap_or("none")
            ),
            Attempt::NoAnswer(why) => why,
        };
        self.wait_retry(id, retry);
        false
    }

    fn wait_retry(&mut self, id: u64, why: String) {
        let next = self.node.now() + self.config.retry_every;
        if let Some(p) = self.pending.get_mut(&id) {
            p.in_flight = false;
            p.next_try = next;
            p.last = why;
        }
    }

    /// Answers message `id`: `outcome`, or `Unknown` with its last fate.
    fn finish(&mut self, id: u64, outcome: Option<Outcome>) {
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        let outcome = outcome.unwrap_or(Outcome::Unknown { last: p.last });
        match &outcome {
            Outcome::Acked { .. } => self.stats.acked += 1,
            Outcome::Unknown { .. } => self.stats.unknown += 1,
            Outcome::Refused(_) => self.stats.refused += 1,
        }
        (p.on_outcome)(outcome);
    }
}

/// The wire answer of a host's [`Ack`].
fn answer_of(ack: Ack, owner: String) -> EntityAnswer {
    match ack {
        Ack::Applied => EntityAnswer::Applied(owner),
        Ack::Duplicate { applied } => EntityAnswer::Duplicate(owner, applied),
        other => EntityAnswer::NotApplied(format!("{owner}: {other:?}")),
    }
}
