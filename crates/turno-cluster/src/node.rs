//! A node: a turno system joined to a [`Transport`] under a name and an
//! incarnation.
//!
//! The node is a loop the caller drives: [`Node::pump`] takes what the
//! transport delivered (messages for exported actors, verdicts, replies,
//! heartbeats, watch notices), publishes what actors replied, expires
//! deadlines on the node's clock, sends heartbeats and declares silent
//! peers down. Between pumps the caller runs the turno system
//! ([`Node::system_mut`]): `settle` on a real node, the simulator's steps
//! on a simulated one.
//!
//! Three kinds of remote send (the table in `docs/cluster.md`):
//!
//! - [`Node::tell`]: fire and forget, at most once, ordered per sender
//!   (a receiver discards a message older than one it already took);
//!   losses are counted by the receiver from the gaps in each sender's
//!   sequence numbers, and at the tail from the marker the sender
//!   publishes with each heartbeat on the receiver's tail subject (under
//!   the same wildcard as the tells, so it arrives behind them).
//! - [`Node::send`]: the receiving node applies the mailbox's policy and
//!   answers with the verdict ([`RemoteVerdict`]); nobody listening is
//!   [`RemoteVerdict::Closed`] at once; no answer before the deadline is
//!   [`RemoteVerdict::Unknown`]: the message may or may not be queued.
//! - [`Node::ask`]: request/reply correlated by (incarnation, request id),
//!   the deadline on the asker's clock; a reply after the deadline, for a
//!   superseded request or for an earlier incarnation is discarded and
//!   counted ([`NodeStats::stale_replies`]).
//!
//! ```
//! use std::time::Duration;
//! use turno::{Actor, Context, DetSystem, Policy, Props, System};
//! use turno_cluster::node::{Node, NodeConfig, RemoteAddr, RemoteVerdict};
//! use turno_cluster::sim::{SimBroker, Faults};
//!
//! struct Sink;
//! impl Actor for Sink {
//!     type Msg = u32;
//!     fn handle(&mut self, _: &mut Context<'_, Self>, _: u32) {}
//! }
//!
//! let broker = SimBroker::new(1, Faults::none());
//! let mut a = Node::new("a", 1, DetSystem::new(1), broker.transport("a", Duration::ZERO), NodeConfig::default()).unwrap();
//! let mut b = Node::new("b", 1, DetSystem::new(2), broker.transport("b", Duration::ZERO), NodeConfig::default()).unwrap();
//! let sink = b.system().spawn(Props::new().name("sink").mailbox(Policy::Reject(1)), || Sink).unwrap();
//! b.register::<u32>("u32").unwrap();
//! b.export(&sink).unwrap();
//! a.register::<u32>("u32").unwrap();
//!
//! let to = RemoteAddr::<u32>::new("b", "/sink");
//! let got = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
//! for n in 0..2 {
//!     let got = got.clone();
//!     a.send(&to, &n, Duration::from_secs(1), move |v| got.borrow_mut().push(v)).unwrap();
//! }
//! for _ in 0..10 {
//!     broker.advance(Duration::from_millis(1));
//!     a.pump();
//!     b.pump();
//! }
//! assert_eq!(*got.borrow(), [RemoteVerdict::Enqueued { remaining: Some(0) }, RemoteVerdict::Rejected]);
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use turno::{Actor, ActorId, Addr, Context, ExitReason, Props, System, VerdictKind};

use crate::subject::{SubjectError, Subjects};
use crate::transport::{Delivery, Transport, TransportError};
use crate::wire::{Body, Codec, Envelope, NodeRef, Registry, RemoteExit, WireError, WireVerdict};

mod trace;
use turno::trace::{RemoteReceived, RemoteSendKind};

/// A node's settings.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The subjects (and their prefix).
    pub subjects: Subjects,
    /// The codec of what this node publishes.
    pub codec: Codec,
    /// How often the node publishes a heartbeat.
    pub heartbeat_every: Duration,
    /// A peer silent this long (on this node's clock) is declared down.
    /// Detection takes between `down_after` and `down_after +
    /// heartbeat_every` plus the pump interval after the peer's last
    /// heartbeat; a peer paused longer than this is declared down even
    /// though it comes back (a false positive by design: it comes back as
    /// a new incarnation).
    pub down_after: Duration,
    /// How many recent request ids per sender a receiver remembers to
    /// answer a duplicated request with its first verdict instead of
    /// applying it twice.
    pub dedup_window: usize,
    /// The most deliveries one [`Node::pump`] takes. A flood of messages
    /// then cannot hold the node's loop: each pump still answers,
    /// expires deadlines and heartbeats, and the caller's actors run
    /// between two pumps. What is left waits for the next pump.
    pub pump_batch: usize,
    /// How long a verdict send that meets a full suspend mailbox waits on
    /// the receiving node for room (the room freed is granted to the
    /// waiting senders in their order of arrival) before it is answered
    /// `Full`. A sender's deadline shorter than this may end `Unknown`
    /// while its message still waits. Zero: `Full` at once.
    pub suspend_wait: Duration,
    /// How many verdict sends wait for room per actor on the receiving
    /// node; one more is answered `Full` at once (the waiting is bounded).
    pub suspend_waiters: usize,
    /// Requests (sends and asks) this node awaits answers for, at most:
    /// past it a send is [`RemoteVerdict::Unsent`] and an ask
    /// `NotDelivered(Unsent)` at once (the client's own buffer is bounded).
    pub max_pending: usize,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            subjects: Subjects::default(),
            codec: Codec::Postcard,
            heartbeat_every: Duration::from_millis(100),
            down_after: Duration::from_millis(500),
            dedup_window: 1024,
            pump_batch: 1024,
            suspend_wait: Duration::from_secs(1),
            suspend_waiters: 64,
            max_pending: 65_536,
        }
    }
}

/// The address of an actor on some node: its node's name and its path.
/// `M` is the message type it takes (registered on both nodes).
pub struct RemoteAddr<M> {
    node: String,
    path: String,
    _m: PhantomData<fn(M)>,
}

impl<M> RemoteAddr<M> {
    /// The actor at `path` (e.g. `/orders`) on the node named `node`.
    pub fn new(node: impl Into<String>, path: impl Into<String>) -> Self {
        RemoteAddr {
            node: node.into(),
            path: path.into(),
            _m: PhantomData,
        }
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The actor's path.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl<M> Clone for RemoteAddr<M> {
    fn clone(&self) -> Self {
        RemoteAddr::new(self.node.clone(), self.path.clone())
    }
}

impl<M> std::fmt::Debug for RemoteAddr<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.node, self.path)
    }
}

/// The outcome of a [`Node::send`]: the receiving mailbox's verdict, or
/// what the sender knows instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemoteVerdict {
    /// Queued; `remaining` is the room left (`None`: unbounded).
    Enqueued {
        /// Room left.
        remaining: Option<u64>,
    },
    /// Queued into a full keep-newest mailbox, which evicts its oldest.
    Evicting,
    /// Lost to a keep-oldest policy.
    Dropped,
    /// Refused by a reject policy.
    Rejected,
    /// Refused by a full suspend mailbox: try again later.
    Full,
    /// No actor took it: stopped, no actor at that path, a type it does not
    /// take, or nobody listening on the subject at all (answered at once).
    Closed,
    /// No answer before the deadline: **the message may or may not have
    /// been enqueued**. The network, the broker or the receiving node may
    /// have lost the request or the answer, or the receiver is paused.
    Unknown,
    /// Not sent: the client's own bounded buffer was full or the
    /// connection closed. Decided at once, on this node.
    Unsent,
}

impl RemoteVerdict {
    /// True when the receiver queued the message (enqueued or evicting).
    pub fn is_enqueued(self) -> bool {
        matches!(
            self,
            RemoteVerdict::Enqueued { .. } | RemoteVerdict::Evicting
        )
    }
}

impl From<WireVerdict> for RemoteVerdict {
    fn from(v: WireVerdict) -> Self {
        match v {
            WireVerdict::Enqueued { remaining } => RemoteVerdict::Enqueued { remaining },
            WireVerdict::Evicting => RemoteVerdict::Evicting,
            WireVerdict::Dropped => RemoteVerdict::Dropped,
            WireVerdict::Rejected => RemoteVerdict::Rejected,
            WireVerdict::Full => RemoteVerdict::Full,
            WireVerdict::Closed => RemoteVerdict::Closed,
        }
    }
}

/// What an asker receives for one remote request: exactly one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteResponse<R> {
    /// The fresh reply.
    Reply(R),
    /// No reply before the deadline (on the asker's clock).
    TimedOut,
    /// The request was not queued: the verdict says why (`Closed` also when
    /// nobody listened).
    NotDelivered(RemoteVerdict),
    /// A reply came that does not decode as `R`.
    Undecodable(WireError),
}

/// Why a remote send was refused before anything was published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The message type (or the actor path) cannot cross the wire.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The path does not map to a subject.
    #[error(transparent)]
    Subject(#[from] SubjectError),
}

/// The counts of one kind of decision per verdict kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Kinds {
    /// Enqueued.
    pub enqueued: u64,
    /// Evicting.
    pub evicting: u64,
    /// Dropped.
    pub dropped: u64,
    /// Rejected.
    pub rejected: u64,
    /// Full.
    pub full: u64,
    /// Closed (dead letters: stopped, no such actor, a type it does not
    /// take, undecodable).
    pub closed: u64,
}

impl Kinds {
    fn add(&mut self, k: VerdictKind) {
        match k {
            VerdictKind::Enqueued => self.enqueued += 1,
            VerdictKind::Evicting => self.evicting += 1,
            VerdictKind::Dropped => self.dropped += 1,
            VerdictKind::Rejected => self.rejected += 1,
            VerdictKind::Full => self.full += 1,
            _ => self.closed += 1,
        }
    }

    /// All of them.
    pub fn total(&self) -> u64 {
        self.enqueued + self.evicting + self.dropped + self.rejected + self.full + self.closed
    }
}

/// Why an incarnation of a node ended while its process lived on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// [`Node::rejoin`] was called.
    Asked,
    /// The node found a gap this long between two of its pumps (a pause).
    Paused(Duration),
    /// A peer announced this incarnation down.
    DeclaredDown(NodeRef),
    /// A peer this node had declared down while it heard nobody spoke
    /// again: this node was the one cut off.
    CutOff(NodeRef),
}

/// One incarnation's books. See `docs/cluster.md` for how they balance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// This incarnation.
    pub node: Option<NodeRef>,
    /// Tells published, per target incarnation (the last sequence number).
    pub tells_out: BTreeMap<NodeRef, u64>,
    /// Tells not published: target node not known up, or the client's
    /// buffer full. Counted losses on the sender.
    pub tells_unsent: u64,
    /// Tells taken per sender incarnation: the last sequence number
    /// accounted for (decided, or counted lost).
    pub tells_in: BTreeMap<NodeRef, u64>,
    /// What the mailboxes did with the tells taken.
    pub tells_decided: Kinds,
    /// Tells counted lost by this receiver (gaps in a sender's sequence,
    /// and the tail its markers announced).
    pub tells_lost: u64,
    /// Tells that arrived after a later one (already counted lost).
    pub tells_late: u64,
    /// Tells seen twice (the second discarded).
    pub tells_duplicate: u64,
    /// Tells for an earlier incarnation of this node (discarded; the books
    /// of that incarnation count them).
    pub tells_foreign: u64,
    /// Sends with a verdict made by this node.
    pub sends: u64,
    /// Their outcomes, as the sender learned them.
    pub send_outcomes: HashMap<RemoteVerdict, u64>,
    /// Sends taken by this node's mailboxes, by verdict.
    pub sends_decided: Kinds,
    /// Duplicated sends answered with their first verdict.
    pub sends_duplicate: u64,
    /// Asks made by this node.
    pub asks: u64,
    /// Fresh replies handed to askers.
    pub asks_replied: u64,
    /// Asks that timed out.
    pub asks_timed_out: u64,
    /// Asks whose request was not queued (the verdict said why).
    pub asks_not_delivered: u64,
    /// Replies discarded: late, for an unknown request, or for an earlier
    /// incarnation.
    pub stale_replies: u64,
    /// Asks taken by this node's mailboxes, by verdict.
    pub asks_decided: Kinds,
    /// Payloads that did not decode, or named an unregistered type.
    pub undecodable: u64,
    /// Peers this incarnation declared down.
    pub peers_down: u64,
    /// Remote watchers told of a termination.
    pub terminations_sent: u64,
    /// Verdict sends that met a full suspend mailbox of this node and
    /// waited here for room (each decided once, later: enqueued when room
    /// freed, or `Full` when its wait ran out).
    pub sends_waited: u64,
    /// Why this incarnation ended, for one that did.
    pub ended: Option<Ended>,
}

impl NodeStats {
    /// Sends whose outcome was `v`.
    pub fn sent_with(&self, v: RemoteVerdict) -> u64 {
        self.send_outcomes.get(&v).copied().unwrap_or(0)
    }
}

type ExportFn = Box<dyn Fn(Codec, &[u8], Option<ReplyCtx>) -> Result<WireVerdict, WireError>>;

struct ReplyCtx {
    subject: String,
    inc: u64,
    req: u64,
}

struct Outbox {
    queue: VecDeque<(String, Vec<u8>)>,
}

/// The handle a remotely asked actor replies through (see
/// [`Node::export_ask`]). Replying publishes at the next pump of the
/// node; a handle dropped without a reply lets the asker time out.
pub struct RemoteReplyTo<R> {
    outbox: Arc<Mutex<Outbox>>,
    from: NodeRef,
    codec: Codec,
    ctx: ReplyCtx,
    _r: PhantomData<fn(R)>,
}

impl<R: Serialize> RemoteReplyTo<R> {
    /// The request's id at the asker.
    pub fn request_id(&self) -> u64 {
        self.ctx.req
    }

    /// Replies. False when the reply could not be encoded.
    pub fn reply(self, value: R) -> bool {
        let Ok(msg) = self.codec.encode(&value) else {
            return false;
        };
        let env = Envelope {
            from: self.from.clone(),
            body: Body::Reply {
                inc: self.ctx.inc,
                req: self.ctx.req,
                msg,
            },
        };
        let Ok(bytes) = env.to_bytes(self.codec) else {
            return false;
        };
        match self.outbox.lock() {
            Ok(mut o) => {
                o.queue.push_back((self.ctx.subject, bytes));
                true
            }
            Err(_) => false,
        }
    }
}

impl<R> std::fmt::Debug for RemoteReplyTo<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteReplyTo({})", self.ctx.subject)
    }
}

enum Waiting {
    Send(Box<dyn FnOnce(RemoteVerdict)>),
    Ask(Box<dyn FnOnce(AskEnd)>),
}

enum AskEnd {
    Reply(Codec, Vec<u8>),
    TimedOut,
    NotDelivered(RemoteVerdict),
}

struct Pending {
    deadline: Duration,
    waiting: Waiting,
}

struct Peer {
    inc: u64,
    last_seen: Duration,
}

#[derive(Default)]
struct StreamIn {
    last: u64,
    skipped: BTreeSet<u64>,
}

struct WatchOut {
    node: NodeRef,
    notify: Box<dyn FnMut(RemoteExit)>,
}

struct WatchIn {
    id: ActorId,
    watcher: NodeRef,
    watch: u64,
}

/// A turno system joined to a transport. See the [module docs](self).
pub struct Node<S: System, T: Transport> {
    me: NodeRef,
    sys: S,
    transport: T,
    config: NodeConfig,
    registry: Registry,
    /// The exported actors by their subject on this node (the mapping is
    /// one-to-one, so a delivery finds its actor without parsing the
    /// subject back into a path), then by message type name.
    exports: HashMap<String, HashMap<String, ExportFn>>,
    export_ids: HashMap<String, ActorId>,
    /// The subjects of the remote actors this node sends to, by node and
    /// path (computed once, not at each send).
    subject_cache: HashMap<String, HashMap<String, std::rc::Rc<str>>>,
    outbox: Arc<Mutex<Outbox>>,
    next_req: u64,
    pending: BTreeMap<u64, Pending>,
    peers: BTreeMap<String, Peer>,
    /// Incarnations declared down, and whether the declaration is
    /// published (false: made while this node heard no peer at all, which
    /// says more about this node being cut off than about them).
    down: BTreeMap<NodeRef, bool>,
    streams_in: HashMap<NodeRef, StreamIn>,
    seen_reqs: HashMap<NodeRef, BTreeMap<u64, Option<WireVerdict>>>,
    /// Verdict sends waiting for room in a full suspend mailbox, per actor
    /// subject, in order of arrival.
    parked: BTreeMap<String, VecDeque<Parked>>,
    next_heartbeat: Duration,
    last_pump: Duration,
    last_heard: Duration,
    next_watch: u64,
    watches_out: BTreeMap<u64, WatchOut>,
    watches_in: Vec<WatchIn>,
    stats: NodeStats,
    retired: Vec<NodeStats>,
    /// Why exported actors ended, as a local watcher learns it: the reason
    /// a remote watcher is told.
    exits: ExitBook,
    #[cfg(test)]
    pub(crate) bug_accept_any_incarnation: bool,
}

impl<S: System, T: Transport> Node<S, T> {
    /// Joins `sys` to `transport` as node `name`, incarnation `inc` (a new,
    /// larger number at each start: [`fresh_incarnation`] on a real
    /// node). Subscribes to the node's actor subjects, its inbox and the
    /// heartbeats.
    pub fn new(
        name: &str,
        inc: u64,
        sys: S,
        mut transport: T,
        config: NodeConfig,
    ) -> Result<Self, TransportError> {
        let s = &config.subjects;
        transport.subscribe(&s.actors_of(name))?;
        transport.subscribe(&s.inbox_of(name))?;
        transport.subscribe(&s.heartbeat())?;
        let me = NodeRef {
            name: name.to_owned(),
            inc,
        };
        let now = transport.now();
        Ok(Node {
            stats: NodeStats {
                node: Some(me.clone()),
                ..NodeStats::default()
            },
            me,
            sys,
            transport,
            config,
            registry: Registry::new(),
            exports: HashMap::new(),
            export_ids: HashMap::new(),
            subject_cache: HashMap::new(),
            outbox: Arc::new(Mutex::new(Outbox {
                queue: VecDeque::new(),
            })),
            next_req: 1,
            pending: BTreeMap::new(),
            peers: BTreeMap::new(),
            down: BTreeMap::new(),
            streams_in: HashMap::new(),
            seen_reqs: HashMap::new(),
            parked: BTreeMap::new(),
            next_heartbeat: now,
            last_pump: now,
            last_heard: now,
            next_watch: 1,
            watches_out: BTreeMap::new(),
            watches_in: Vec::new(),
            retired: Vec::new(),
            exits: ExitBook::default(),
            #[cfg(test)]
            bug_accept_any_incarnation: false,
        })
    }

    /// This node and incarnation.
    pub fn me(&self) -> &NodeRef {
        &self.me
    }

    /// The turno system.
    pub fn system(&self) -> &S {
        &self.sys
    }

    /// The turno system, to run it.
    pub fn system_mut(&mut self) -> &mut S {
        &mut self.sys
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The node's clock (the transport's).
    pub fn now(&self) -> Duration {
        self.transport.now()
    }

    /// This incarnation's books.
    pub fn stats(&self) -> &NodeStats {
        &self.stats
    }

    /// The books of earlier incarnations of this process (a node declared
    /// down that came back took a new incarnation).
    pub fn retired_stats(&self) -> &[NodeStats] {
        &self.retired
    }

    /// The incarnation of `node` this node believes up, if any.
    pub fn peer(&self, node: &str) -> Option<u64> {
        self.peers.get(node).map(|p| p.inc)
    }

    /// Every peer this node believes up, with its incarnation.
    pub fn peers(&self) -> Vec<(String, u64)> {
        self.peers.iter().map(|(n, p)| (n.clone(), p.inc)).collect()
    }

    /// Requests still awaiting their answer: (sends, asks).
    pub fn pending(&self) -> (usize, usize) {
        let sends = self
            .pending
            .values()
            .filter(|p| matches!(p.waiting, Waiting::Send(_)))
            .count();
        (sends, self.pending.len() - sends)
    }

    /// Registers a message type under the name the wire carries.
    pub fn register<M: 'static>(&mut self, name: &str) -> Result<(), WireError> {
        self.registry.register::<M>(name)
    }

    fn export_with<M: Send + 'static>(
        &mut self,
        path: String,
        addr: &Addr<M>,
        ty: String,
        f: ExportFn,
    ) {
        let id = addr.id();
        if let std::collections::hash_map::Entry::Vacant(e) = self.exits.watch_fns.entry(id) {
            let a = addr.clone();
            e.insert(Box::new(move || {
                let a = a.clone();
                ExitMsg::Watch(Box::new(move |ctx| ctx.watch(&a, ExitMsg::Ended)))
            }));
        }
        // A local actor's path starts with '/', so it always has a subject.
        if let Ok(subject) = self.config.subjects.actor(&self.me.name, &path) {
            self.exports.entry(subject).or_default().insert(ty, f);
        }
        self.export_ids.insert(path, id);
    }

    /// The subject of `path` on `node`, from the cache.
    fn subject_of(&mut self, node: &str, path: &str) -> Result<std::rc::Rc<str>, SubjectError> {
        if let Some(s) = self.subject_cache.get(node).and_then(|m| m.get(path)) {
            return Ok(s.clone());
        }
        let s: std::rc::Rc<str> = self.config.subjects.actor(node, path)?.into();
        if self.subject_cache.len() > 4096 {
            self.subject_cache.clear();
        }
        let paths = self.subject_cache.entry(node.to_owned()).or_default();
        if paths.len() > 65_536 {
            paths.clear();
        }
        paths.insert(path.to_owned(), s.clone());
        Ok(s)
    }

    /// Makes a local actor reachable from other nodes by its path, for
    /// tells and sends of its (registered) message type.
    pub fn export<M>(&mut self, addr: &Addr<M>) -> Result<(), WireError>
    where
        M: DeserializeOwned + Send + 'static,
    {
        let ty = self.registry.name_of::<M>()?.to_owned();
        let a = addr.clone();
        let f: ExportFn = Box::new(move |codec, bytes, _| {
            let m: M = codec.decode(bytes)?;
            Ok(WireVerdict::of(&a.try_send(m)))
        });
        self.export_with(addr.path().as_str().to_owned(), addr, ty, f);
        Ok(())
    }

    /// Makes a local actor answer remote asks of request type `Q` (a
    /// registered type): `make` builds its message from the request and the
    /// handle it replies through.
    pub fn export_ask<M, Q, R>(
        &mut self,
        addr: &Addr<M>,
        make: impl Fn(Q, RemoteReplyTo<R>) -> M + 'static,
    ) -> Result<(), WireError>
    where
        M: Send + 'static,
        Q: DeserializeOwned + 'static,
        R: Serialize + 'static,
    {
        let ty = self.registry.name_of::<Q>()?.to_owned();
        let a = addr.clone();
        let outbox = self.outbox.clone();
        let from = self.me.clone();
        let f: ExportFn = Box::new(move |codec, bytes, ctx| {
            let q: Q = codec.decode(bytes)?;
            let Some(ctx) = ctx else {
                return Ok(WireVerdict::Closed);
            };
            let reply = RemoteReplyTo {
                outbox: outbox.clone(),
                from: from.clone(),
                codec,
                ctx,
                _r: PhantomData,
            };
            Ok(WireVerdict::of(&a.try_send(make(q, reply))))
        });
        self.export_with(addr.path().as_str().to_owned(), addr, ty, f);
        Ok(())
    }

    fn publish(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        body: Body,
    ) -> Result<(), TransportError> {
        let env = Envelope {
            from: self.me.clone(),
            body,
        };
        let bytes = env
            .to_bytes(self.config.codec)
            .map_err(|e| TransportError::Broker(e.to_string()))?;
        self.transport.publish(subject, reply, bytes)
    }

    /// Fire and forget: at most once, ordered per sender, losses counted
    /// (by the receiver; [`NodeStats::tells_unsent`] when it could not
    /// even be published: target node not known up, buffer full). True
    /// when published.
    pub fn tell<M: Serialize + 'static>(
        &mut self,
        to: &RemoteAddr<M>,
        msg: &M,
    ) -> Result<bool, SendError> {
        let (ty, bytes) = self.registry.encode(self.config.codec, msg)?;
        let subject = self.subject_of(&to.node, &to.path)?;
        let Some(inc) = self.peers.get(&to.node).map(|p| p.inc) else {
            self.stats.tells_unsent += 1;
            return Ok(false);
        };
        let target = NodeRef {
            name: to.node.clone(),
            inc,
        };
        let seq = self.stats.tells_out.get(&target).copied().unwrap_or(0) + 1;
        let traced = |n: &Self, wire: Option<&str>| {
            let id = || trace::tell_id(&n.me, &to.node, inc, seq);
            n.trace_sent(RemoteSendKind::Tell, id, (&to.node, &to.path), wire);
        };
        let body = Body::Tell {
            to_inc: inc,
            seq,
            ty,
            msg: bytes,
        };
        let published = self.publish(&subject, None, body);
        traced(self, published.is_ok().then_some(&*subject));
        match published {
            Ok(()) => {
                match self.stats.tells_out.get_mut(&target) {
                    Some(last) => *last = seq,
                    None => {
                        self.stats.tells_out.insert(target, seq);
                    }
                }
                Ok(true)
            }
            Err(_) => {
                self.stats.tells_unsent += 1;
                Ok(false)
            }
        }
    }

    fn request(
        &mut self,
        subject: &str,
        timeout: Duration,
        body: impl FnOnce(u64) -> Body,
        waiting: Waiting,
    ) -> Result<u64, Waiting> {
        if self.pending.len() >= self.config.max_pending {
            return Err(waiting);
        }
        let req = self.next_req;
        self.next_req += 1;
        let reply = self.config.subjects.reply(&self.me.name, self.me.inc, req);
        let env = Envelope {
            from: self.me.clone(),
            body: body(req),
        };
        let sent = env
            .to_bytes(self.config.codec)
            .map_err(|_| TransportError::Closed)
            .and_then(|b| self.transport.request(subject, &reply, b));
        match sent {
            Ok(()) => {
                let deadline = self.transport.now() + timeout;
                self.pending.insert(req, Pending { deadline, waiting });
                Ok(req)
            }
            Err(_) => Err(waiting),
        }
    }

    /// Sends and asks for the verdict: `on_verdict` is called once, from a
    /// later [`Node::pump`] (or at once for [`RemoteVerdict::Unsent`]),
    /// with the receiving mailbox's verdict, [`RemoteVerdict::Closed`] when
    /// nobody listens, or [`RemoteVerdict::Unknown`] at the deadline.
    /// Returns the request id.
    pub fn send<M: Serialize + 'static>(
        &mut self,
        to: &RemoteAddr<M>,
        msg: &M,
        timeout: Duration,
        on_verdict: impl FnOnce(RemoteVerdict) + 'static,
    ) -> Result<u64, SendError> {
        let (ty, bytes) = self.registry.encode(self.config.codec, msg)?;
        let subject = self.subject_of(&to.node, &to.path)?;
        self.stats.sends += 1;
        let waiting = Waiting::Send(Box::new(on_verdict));
        let req = self.next_req;
        let sent = self.request(
            &subject,
            timeout,
            |req| Body::Send {
                req,
                ty,
                msg: bytes,
            },
            waiting,
        );
        let id = || trace::request_id(&self.me, req);
        let wire = sent.is_ok().then_some(&*subject);
        self.trace_sent(RemoteSendKind::Send, id, (&to.node, &to.path), wire);
        match sent {
            Ok(req) => Ok(req),
            Err(Waiting::Send(f)) => {
                *self
                    .stats
                    .send_outcomes
                    .entry(RemoteVerdict::Unsent)
                    .or_default() += 1;
                f(RemoteVerdict::Unsent);
                Ok(0)
            }
            Err(Waiting::Ask(_)) => Ok(0),
        }
    }

    /// Asks: `on_response` is called once, from a later [`Node::pump`], with
    /// the reply, or [`RemoteResponse::TimedOut`] at the deadline (on this
    /// node's clock), or why the request was not queued. Returns the request
    /// id.
    pub fn ask<Q, R>(
        &mut self,
        to: &RemoteAddr<Q>,
        request: &Q,
        timeout: Duration,
        on_response: impl FnOnce(RemoteResponse<R>) + 'static,
    ) -> Result<u64, SendError>
    where
        Q: Serialize + 'static,
        R: DeserializeOwned + 'static,
    {
        let (ty, bytes) = self.registry.encode(self.config.codec, request)?;
        let subject = self.subject_of(&to.node, &to.path)?;
        self.stats.asks += 1;
        let waiting = Waiting::Ask(Box::new(move |end| {
            on_response(match end {
                AskEnd::Reply(codec, b) => match codec.decode::<R>(&b) {
                    Ok(r) => RemoteResponse::Reply(r),
                    Err(e) => RemoteResponse::Undecodable(e),
                },
                AskEnd::TimedOut => RemoteResponse::TimedOut,
                AskEnd::NotDelivered(v) => RemoteResponse::NotDelivered(v),
            })
        }));
        let req = self.next_req;
        let sent = self.request(
            &subject,
            timeout,
            |req| Body::Ask {
                req,
                ty,
                msg: bytes,
            },
            waiting,
        );
        let id = || trace::request_id(&self.me, req);
        let wire = sent.is_ok().then_some(&*subject);
        self.trace_sent(RemoteSendKind::Ask, id, (&to.node, &to.path), wire);
        match sent {
            Ok(req) => Ok(req),
            Err(Waiting::Ask(f)) => {
                self.stats.asks_not_delivered += 1;
                f(AskEnd::NotDelivered(RemoteVerdict::Unsent));
                Ok(0)
            }
            Err(Waiting::Send(_)) => Ok(0),
        }
    }

    /// Abandons a pending request: its answer, when it comes, is stale.
    /// The callback is not called. True if it was pending.
    pub fn abandon(&mut self, req: u64) -> bool {
        match self.pending.remove(&req) {
            Some(p) => {
                match p.waiting {
                    Waiting::Send(_) => {
                        *self
                            .stats
                            .send_outcomes
                            .entry(RemoteVerdict::Unknown)
                            .or_default() += 1
                    }
                    Waiting::Ask(_) => self.stats.asks_timed_out += 1,
                }
                true
            }
            None => false,
        }
    }

    /// Watches the actor at `to`: `on_terminated` is called once, from a
    /// later pump, when it stops, when there is no such actor, or when its
    /// node is declared down (or is not known up now). Returns the watch id.
    pub fn watch<M>(
        &mut self,
        to: &RemoteAddr<M>,
        on_terminated: impl FnOnce(RemoteExit) + 'static,
    ) -> u64 {
        let id = self.next_watch;
        self.next_watch += 1;
        let mut once = Some(on_terminated);
        let mut notify: Box<dyn FnMut(RemoteExit)> = Box::new(move |r| {
            if let Some(f) = once.take() {
                f(r)
            }
        });
        let Some(inc) = self.peer(&to.node) else {
            notify(RemoteExit::NodeDown(NodeRef {
                name: to.node.clone(),
                inc: 0,
            }));
            return id;
        };
        let node = NodeRef {
            name: to.node.clone(),
            inc,
        };
        let subject = self.config.subjects.system(&to.node);
        let body = Body::Watch {
            path: to.path.clone(),
            watch: id,
        };
        // A lost watch request is covered by node-down detection only; the
        // notice of a stop could then be missed (see docs/cluster.md).
        let _ = self.publish(&subject, None, body);
        self.watches_out.insert(id, WatchOut { node, notify });
        id
    }

    /// Runs the node's side of the protocol once: deliveries (at most
    /// [`NodeConfig::pump_batch`]), replies of local actors, deadlines,
    /// heartbeats, failure detection, watches; then lets the transport
    /// send what the pump published. Returns how many deliveries it
    /// handled: as many as the batch means more may be waiting.
    pub fn pump(&mut self) -> usize {
        let mut n = 0;
        self.check_pause();
        while n < self.config.pump_batch.max(1) {
            let Some(d) = self.transport.poll() else {
                break;
            };
            n += 1;
            self.on_delivery(d);
        }
        self.unpark();
        self.flush_outbox();
        self.expire();
        self.heartbeat();
        self.check_watched();
        self.transport.progress();
        n
    }

    fn flush_outbox(&mut self) {
        let out: Vec<_> = match self.outbox.lock() {
            Ok(mut o) => o.queue.drain(..).collect(),
            Err(_) => Vec::new(),
        };
        for (subject, bytes) in out {
            // A reply the client cannot take is lost; the asker times out.
            let _ = self.transport.publish(&subject, None, bytes);
        }
    }

    fn expire(&mut self) {
        let now = self.transport.now();
        let due: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(k, _)| *k)
            .collect();
        for req in due {
            if let Some(p) = self.pending.remove(&req) {
                self.resolve(p.waiting, None);
            }
        }
    }

    fn resolve(&mut self, w: Waiting, answer: Option<Answer>) {
        match w {
            Waiting::Send(f) => {
                let v = match answer {
                    Some(Answer::Verdict(v)) => v,
                    Some(Answer::Reply(..)) => RemoteVerdict::Unknown,
                    None => RemoteVerdict::Unknown,
                };
                *self.stats.send_outcomes.entry(v).or_default() += 1;
                f(v)
            }
            Waiting::Ask(f) => match answer {
                Some(Answer::Reply(c, b)) => {
                    self.stats.asks_replied += 1;
                    f(AskEnd::Reply(c, b))
                }
                Some(Answer::Verdict(v)) => {
                    self.stats.asks_not_delivered += 1;
                    f(AskEnd::NotDelivered(v))
                }
                None => {
                    self.stats.asks_timed_out += 1;
                    f(AskEnd::TimedOut)
                }
            },
        }
    }

    /// A stall of this node (SIGSTOP, a stalled VM, a long turn between
    /// pumps) is not the peers' silence: after any gap longer than a
    /// heartbeat interval they get a fresh patience instead of being
    /// declared down. A gap long enough for the others to have declared
    /// this incarnation down (its silence is the gap plus up to one
    /// heartbeat interval) ends it: the node comes back as a new one.
    fn check_pause(&mut self) {
        let now = self.transport.now();
        let gap = now.saturating_sub(std::mem::replace(&mut self.last_pump, now));
        if gap
            > self
                .config
                .down_after
                .saturating_sub(self.config.heartbeat_every)
        {
            self.rejoin();
        }
        if gap > self.config.heartbeat_every {
            for p in self.peers.values_mut() {
                p.last_seen = now;
            }
            self.last_heard = now;
        }
    }

    fn heartbeat(&mut self) {
        // Stopped in the middle of this pump: the same as between pumps.
        self.check_pause();
        let now = self.transport.now();
        // Silent peers are down.
        let silent: Vec<String> = self
            .peers
            .iter()
            .filter(|(_, p)| now.saturating_sub(p.last_seen) > self.config.down_after)
            .map(|(k, _)| k.clone())
            .collect();
        // No peer heard for two heartbeat intervals: more likely this node
        // is cut off than all of them down. Declared down here all the
        // same (watchers learn it), but not announced to them.
        let isolated = now.saturating_sub(self.last_heard) > self.config.heartbeat_every * 2;
        for name in silent {
            if let Some(p) = self.peers.remove(&name) {
                self.declare_down(NodeRef { name, inc: p.inc }, !isolated);
            }
        }
        if now < self.next_heartbeat {
            return;
        }
        self.next_heartbeat = now + self.config.heartbeat_every;
        // The tail of each stream to a peer up now: its last sequence
        // number, on the subject its tells travel, so the marker reaches
        // the receiver after them (a heartbeat, on a subject of its own,
        // could overtake them).
        let tails: Vec<(NodeRef, u64)> = self
            .stats
            .tells_out
            .iter()
            .filter(|(t, _)| self.peers.get(&t.name).is_some_and(|p| p.inc == t.inc))
            .map(|(t, n)| (t.clone(), *n))
            .collect();
        for (t, seq) in tails {
            let subject = self.config.subjects.tail(&t.name);
            let _ = self.publish(&subject, None, Body::Tail { to_inc: t.inc, seq });
        }
        let body = Body::Heartbeat {
            down: self
                .down
                .iter()
                .rev()
                .filter(|(_, published)| **published)
                .take(64)
                .map(|(n, _)| n.clone())
                .collect(),
        };
        let subject = self.config.subjects.heartbeat();
        let _ = self.publish(&subject, None, body);
    }

    fn declare_down(&mut self, node: NodeRef, published: bool) {
        if self.down.insert(node.clone(), published).is_some() {
            return;
        }
        self.stats.peers_down += 1;
        if self.down.len() > 4096 {
            self.down.pop_first();
        }
        let ids: Vec<u64> = self
            .watches_out
            .iter()
            .filter(|(_, w)| w.node == node)
            .map(|(k, _)| *k)
            .collect();
        for id in ids {
            if let Some(mut w) = self.watches_out.remove(&id) {
                (w.notify)(RemoteExit::NodeDown(node.clone()));
            }
        }
        self.watches_in.retain(|w| w.watcher != node);
        self.seen_reqs.remove(&node);
        // Its waiting sends: nobody takes their answers now.
        let mut gone = 0;
        for q in self.parked.values_mut() {
            let before = q.len();
            q.retain(|p| p.from != node);
            gone += before - q.len();
        }
        for _ in 0..gone {
            self.stats.sends_decided.add(VerdictKind::Full);
        }
    }

    /// Becomes a new incarnation: every pending request ends (sends
    /// `Unknown`, asks timed out), the tell streams start over, and the
    /// books of the old incarnation are kept in [`Node::retired_stats`].
    pub fn rejoin(&mut self) {
        self.end(Ended::Asked)
    }

    fn end(&mut self, why: Ended) {
        self.stats.ended = Some(why);
        // What waits for room is answered by the incarnation that took it.
        for (_, q) in std::mem::take(&mut self.parked) {
            for p in q {
                self.settle_parked(p, WireVerdict::Full);
            }
        }
        let pending = std::mem::take(&mut self.pending);
        for (_, p) in pending {
            self.resolve(p.waiting, None);
        }
        let inc = self.me.inc + 1;
        self.me.inc = inc;
        let fresh = NodeStats {
            node: Some(self.me.clone()),
            ..NodeStats::default()
        };
        self.retired.push(std::mem::replace(&mut self.stats, fresh));
        self.next_req = 1;
        self.streams_in.clear();
        self.seen_reqs.clear();
        self.watches_in.clear();
        // What the old incarnation concluded while it heard nobody is not
        // the new one's view.
        self.down.retain(|_, published| *published);
        self.next_heartbeat = self.transport.now();
    }

    /// Has the local watcher watch `id` for its exit reason (spawned the
    /// first time a remote node watches an actor of this one).
    fn watch_exit(&mut self, id: ActorId) {
        if self.exits.watching.contains(&id) {
            return;
        }
        if self.exits.watcher.is_none() {
            let ended = self.exits.ended.clone();
            self.exits.watcher = self
                .sys
                .spawn(Props::new(), move || ExitWatcher(ended.clone()))
                .ok();
        }
        let (Some(w), Some(f)) = (&self.exits.watcher, self.exits.watch_fns.get(&id)) else {
            return;
        };
        if w.try_send(f()).is_enqueued() {
            self.exits.watching.insert(id);
        }
    }

    fn check_watched(&mut self) {
        if let Ok(mut ended) = self.exits.ended.lock() {
            self.exits.reasons.extend(ended.drain(..));
        }
        if self.watches_in.is_empty() {
            return;
        }
        let watcher_alive = self
            .exits
            .watcher
            .as_ref()
            .is_some_and(|w| self.sys.is_alive(w.id()));
        let mut gone = Vec::new();
        self.watches_in.retain(|w| {
            if self.sys.is_alive(w.id) {
                return true;
            }
            let reason = match self.exits.reasons.get(&w.id) {
                Some(r) => RemoteExit::from(r),
                // The local watcher learns the reason at its next turn.
                None if watcher_alive && self.exits.watching.contains(&w.id) => return true,
                // No watcher to ask (it could not be spawned, or the
                // system is stopping): the end without its cause.
                None => RemoteExit::Stopped,
            };
            gone.push((w.watcher.clone(), w.watch, reason));
            false
        });
        for (watcher, watch, reason) in gone {
            self.notify_watcher(&watcher, watch, reason);
        }
        // What no remote watcher waits for any more is forgotten.
        let waited: BTreeSet<ActorId> = self.watches_in.iter().map(|w| w.id).collect();
        self.exits.reasons.retain(|id, _| waited.contains(id));
        self.exits.watching.retain(|id| waited.contains(id));
    }

    fn notify_watcher(&mut self, watcher: &NodeRef, watch: u64, reason: RemoteExit) {
        let subject = self.config.subjects.system(&watcher.name);
        self.stats.terminations_sent += 1;
        let _ = self.publish(&subject, None, Body::Terminated { watch, reason });
    }

    fn on_delivery(&mut self, d: Delivery) {
        match d {
            Delivery::NoResponders { reply } => {
                if let Some((inc, req)) = self.config.subjects.parse_reply(&self.me.name, &reply) {
                    self.on_answer(inc, req, Answer::Verdict(RemoteVerdict::Closed));
                }
            }
            Delivery::Message {
                subject,
                reply,
                payload,
            } => {
                let Ok((codec, env)) = Envelope::from_bytes(&payload) else {
                    self.stats.undecodable += 1;
                    return;
                };
                self.on_envelope(&subject, reply, codec, env);
            }
        }
    }

    fn on_answer(&mut self, inc: u64, req: u64, answer: Answer) {
        #[cfg(test)]
        let any_inc = self.bug_accept_any_incarnation;
        #[cfg(not(test))]
        let any_inc = false;
        if inc != self.me.inc && !any_inc {
            self.stats.stale_replies += 1;
            return;
        }
        let now = self.transport.now();
        match self.pending.remove(&req) {
            Some(p) if p.deadline > now => self.resolve(p.waiting, Some(answer)),
            Some(p) => {
                // Arrived after the deadline (the node was busy or paused):
                // the request timed out, the answer is stale.
                self.stats.stale_replies += 1;
                self.resolve(p.waiting, None);
            }
            None => self.stats.stale_replies += 1,
        }
    }

    fn on_envelope(&mut self, subject: &str, reply: Option<String>, codec: Codec, env: Envelope) {
        let from = env.from;
        match env.body {
            Body::Heartbeat { down } => self.on_heartbeat(from, down),
            Body::Tail { to_inc, seq } => self.on_tail(from, to_inc, seq),
            Body::Tell {
                to_inc,
                seq,
                ty,
                msg,
            } => {
                let sender = self.sys.tracing().then(|| from.clone());
                if to_inc != self.me.inc {
                    self.stats.tells_foreign += 1;
                    let foreign = RemoteReceived::Foreign;
                    self.trace_tell(subject, sender.as_ref(), to_inc, seq, foreign);
                    return;
                }
                if !self.streams_in.contains_key(&from) {
                    self.streams_in.insert(from.clone(), StreamIn::default());
                }
                let Some(s) = self.streams_in.get_mut(&from) else {
                    return;
                };
                if seq <= s.last {
                    if s.skipped.remove(&seq) {
                        self.stats.tells_late += 1;
                    } else {
                        self.stats.tells_duplicate += 1;
                    }
                    let duplicate = RemoteReceived::Duplicate;
                    self.trace_tell(subject, sender.as_ref(), to_inc, seq, duplicate);
                    return;
                }
                let gap = seq - s.last - 1;
                for g in s.last + 1..seq {
                    s.skipped.insert(g);
                }
                while s.skipped.len() > 4096 {
                    s.skipped.pop_first();
                }
                s.last = seq;
                self.stats.tells_lost += gap;
                match self.stats.tells_in.get_mut(&from) {
                    Some(upto) => *upto = seq,
                    None => {
                        self.stats.tells_in.insert(from, seq);
                    }
                }
                let k = self.deliver(subject, &ty, codec, &msg, None);
                self.trace_tell(subject, sender.as_ref(), to_inc, seq, trace::received(k));
                self.stats.tells_decided.add(k.kind());
            }
            Body::Send { req, ty, msg } => {
                let Some(reply) = reply else { return };
                if let Some(v) = self.seen(&from, req) {
                    let id = || trace::request_id(&from, req);
                    self.trace_received(subject, &from, id, RemoteReceived::Duplicate);
                    self.stats.sends_duplicate += 1;
                    if let Some(v) = v {
                        self.answer(&reply, &from, req, v);
                    }
                    return;
                }
                let v = self.deliver(subject, &ty, codec, &msg, None);
                if matches!(v, WireVerdict::Full) {
                    let p = Parked {
                        subject: subject.to_owned(),
                        reply: reply.clone(),
                        from: from.clone(),
                        req,
                        ty,
                        codec,
                        msg,
                        until: Duration::ZERO,
                    };
                    if self.park(p) {
                        return;
                    }
                }
                self.stats.sends_decided.add(v.kind());
                self.remember(&from, req, Some(v));
                let id = || trace::request_id(&from, req);
                self.trace_received(subject, &from, id, trace::received(v));
                self.answer(&reply, &from, req, v);
            }
            Body::Ask { req, ty, msg } => {
                let Some(reply) = reply else { return };
                if self.seen(&from, req).is_some() {
                    let id = || trace::request_id(&from, req);
                    self.trace_received(subject, &from, id, RemoteReceived::Duplicate);
                    self.stats.sends_duplicate += 1;
                    return;
                }
                let ctx = ReplyCtx {
                    subject: reply.clone(),
                    inc: from.inc,
                    req,
                };
                let v = self.deliver(subject, &ty, codec, &msg, Some(ctx));
                let id = || trace::request_id(&from, req);
                self.trace_received(subject, &from, id, trace::received(v));
                self.stats.asks_decided.add(v.kind());
                self.remember(&from, req, None);
                if !v.is_enqueued() {
                    self.answer(&reply, &from, req, v);
                }
            }
            Body::Verdict { inc, req, verdict } => {
                self.on_answer(inc, req, Answer::Verdict(verdict.into()))
            }
            Body::Reply { inc, req, msg } => self.on_answer(inc, req, Answer::Reply(codec, msg)),
            Body::Watch { path, watch } => match self.export_ids.get(&path) {
                Some(&id) if self.sys.is_alive(id) => {
                    self.watches_in.push(WatchIn {
                        id,
                        watcher: from,
                        watch,
                    });
                    self.watch_exit(id);
                }
                _ => self.notify_watcher(&from, watch, RemoteExit::NoSuchActor),
            },
            Body::Terminated { watch, reason } => {
                if let Some(mut w) = self.watches_out.remove(&watch) {
                    (w.notify)(reason);
                }
            }
        }
    }

    fn seen(&self, from: &NodeRef, req: u64) -> Option<Option<WireVerdict>> {
        self.seen_reqs.get(from).and_then(|m| m.get(&req).copied())
    }

    fn remember(&mut self, from: &NodeRef, req: u64, v: Option<WireVerdict>) {
        let m = self.seen_reqs.entry(from.clone()).or_default();
        m.insert(req, v);
        while m.len() > self.config.dedup_window {
            m.pop_first();
        }
    }

    fn answer(&mut self, reply: &str, to: &NodeRef, req: u64, verdict: WireVerdict) {
        let body = Body::Verdict {
            inc: to.inc,
            req,
            verdict,
        };
        let _ = self.publish(reply, None, body);
    }

    fn deliver(
        &mut self,
        subject: &str,
        ty: &str,
        codec: Codec,
        msg: &[u8],
        ctx: Option<ReplyCtx>,
    ) -> WireVerdict {
        let Some(f) = self.exports.get(subject).and_then(|m| m.get(ty)) else {
            return WireVerdict::Closed;
        };
        match f(codec, msg, ctx) {
            Ok(v) => v,
            Err(_) => {
                self.stats.undecodable += 1;
                WireVerdict::Closed
            }
        }
    }

    fn on_heartbeat(&mut self, from: NodeRef, down: Vec<NodeRef>) {
        if from.name == self.me.name {
            return;
        }
        self.last_heard = self.transport.now();
        if down.contains(&self.me) {
            // Declared down by a peer (a pause, a partition): whatever this
            // incarnation promised is void for the others; a new one starts.
            self.end(Ended::DeclaredDown(from.clone()));
        }
        match self.down.get(&from) {
            Some(true) => return,
            // A peer this node declared down while it heard nobody is back,
            // same incarnation: it was this node that was cut off.
            Some(false) => self.end(Ended::CutOff(from.clone())),
            None => {}
        }
        let now = self.transport.now();
        match self.peers.get_mut(&from.name) {
            Some(p) if p.inc == from.inc => p.last_seen = now,
            Some(p) if p.inc > from.inc => self.declare_down(from, true),
            Some(p) => {
                let old = NodeRef {
                    name: from.name.clone(),
                    inc: p.inc,
                };
                p.inc = from.inc;
                p.last_seen = now;
                self.declare_down(old, true);
            }
            None => {
                self.peers.insert(
                    from.name.clone(),
                    Peer {
                        inc: from.inc,
                        last_seen: now,
                    },
                );
            }
        }
    }

    /// The tail of a sender's stream to this incarnation: what it sent
    /// that never arrived is lost. The marker travels behind the tells on
    /// their subject, so a tell it announces has arrived before it or
    /// never will.
    fn on_tail(&mut self, from: NodeRef, to_inc: u64, last_sent: u64) {
        if to_inc != self.me.inc || from.name == self.me.name || self.down.contains_key(&from) {
            return;
        }
        if self.peers.get(&from.name).is_some_and(|p| p.inc > from.inc) {
            // An earlier incarnation of that peer: not heard any more.
            return;
        }
        let s = self.streams_in.entry(from.clone()).or_default();
        if last_sent > s.last {
            for g in s.last + 1..=last_sent {
                s.skipped.insert(g);
            }
            while s.skipped.len() > 4096 {
                s.skipped.pop_first();
            }
            self.stats.tells_lost += last_sent - s.last;
            s.last = last_sent;
            self.stats.tells_in.insert(from, last_sent);
        }
    }
}

/// Has the local watcher watch one actor (the closure holds its typed
/// address).
type WatchFn = Box<dyn FnOnce(&mut Context<'_, ExitWatcher>) + Send>;

/// What the local watcher of exported actors is told, and tells.
enum ExitMsg {
    /// Watch an actor.
    Watch(WatchFn),
    /// A watched actor ended.
    Ended(ActorId, ExitReason),
}

/// A local actor that watches the exported actors remote nodes watch, so
/// that their exit reason reaches the node (the system reports a reason
/// only to a watching actor).
struct ExitWatcher(Arc<Mutex<Vec<(ActorId, ExitReason)>>>);

impl Actor for ExitWatcher {
    type Msg = ExitMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: ExitMsg) {
        match msg {
            ExitMsg::Watch(f) => f(ctx),
            ExitMsg::Ended(id, reason) => {
                if let Ok(mut v) = self.0.lock() {
                    v.push((id, reason));
                }
            }
        }
    }
}

#[derive(Default)]
struct ExitBook {
    watcher: Option<Addr<ExitMsg>>,
    /// How to have the watcher watch each exported actor.
    watch_fns: HashMap<ActorId, Box<dyn Fn() -> ExitMsg>>,
    /// The actors the watcher watches.
    watching: BTreeSet<ActorId>,
    /// What the watcher reported, not yet read.
    ended: Arc<Mutex<Vec<(ActorId, ExitReason)>>>,
    /// The reasons read, until every remote watcher is told.
    reasons: HashMap<ActorId, ExitReason>,
}

enum Answer {
    Verdict(RemoteVerdict),
    Reply(Codec, Vec<u8>),
}

/// A verdict send waiting for room in a full suspend mailbox.
struct Parked {
    subject: String,
    reply: String,
    from: NodeRef,
    req: u64,
    ty: String,
    codec: Codec,
    msg: Vec<u8>,
    until: Duration,
}

impl<S: System, T: Transport> Node<S, T> {
    /// Holds a send that met a full suspend mailbox until room frees (or
    /// its wait runs out): its sender waits for the verdict. False when
    /// the actor's waiters are at their bound (answered `Full` at once).
    fn park(&mut self, mut p: Parked) -> bool {
        if self.config.suspend_wait.is_zero() {
            return false;
        }
        p.until = self.transport.now() + self.config.suspend_wait;
        let q = self.parked.entry(p.subject.clone()).or_default();
        if q.len() >= self.config.suspend_waiters {
            return false;
        }
        let (from, req) = (p.from.clone(), p.req);
        q.push_back(p);
        self.stats.sends_waited += 1;
        // A duplicate of it is not delivered again while it waits.
        self.remember(&from, req, None);
        true
    }

    /// Grants the room freed in suspend mailboxes to the sends waiting for
    /// it, in their order; answers `Full` those whose wait ran out.
    fn unpark(&mut self) {
        if self.parked.is_empty() {
            return;
        }
        let now = self.transport.now();
        let subjects: Vec<String> = self.parked.keys().cloned().collect();
        for subject in subjects {
            while let Some(p) = self.parked.get_mut(&subject).and_then(VecDeque::pop_front) {
                let v = if p.until <= now {
                    WireVerdict::Full
                } else {
                    self.deliver(&subject, &p.ty, p.codec, &p.msg, None)
                };
                if matches!(v, WireVerdict::Full) && p.until > now {
                    if let Some(q) = self.parked.get_mut(&subject) {
                        q.push_front(p);
                    }
                    break;
                }
                self.settle_parked(p, v);
            }
            if self.parked.get(&subject).is_some_and(VecDeque::is_empty) {
                self.parked.remove(&subject);
            }
        }
    }

    fn settle_parked(&mut self, p: Parked, v: WireVerdict) {
        self.stats.sends_decided.add(v.kind());
        self.remember(&p.from, p.req, Some(v));
        self.answer(&p.reply, &p.from, p.req, v);
    }
}

/// A fresh incarnation number for a real node: nanoseconds since the Unix
/// epoch (larger at each start on a machine whose clock does not go back;
/// [`Node::rejoin`] adds one).
pub fn fresh_incarnation() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}
