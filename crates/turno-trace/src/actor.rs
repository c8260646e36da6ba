//! The runtime's family (`turno-trace`, `docs/trace-format.md`): actors,
//! mailboxes, timers, requests, supervision, and the statechart extension
//! events that `turno-chart` records for every microstep.

use serde::{Deserialize, Serialize};

use crate::ids::{ActorId, RequestId, TimerId};
use crate::policy::{DropPolicy, Policy};

/// Which lane of a mailbox a message travelled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Ordinary messages, subject to the overflow policy.
    User,
    /// Stop, failures, terminations, timers: never dropped by a policy.
    System,
}

/// What a turn was spent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnKind {
    /// The `started` hook.
    Started,
    /// The `stopped` hook.
    Stopped,
    /// A message from the mailbox.
    Message,
    /// A message re-delivered from the stash.
    Unstashed,
    /// A fresh reply to a pending request.
    Reply,
    /// A request that timed out.
    AskTimeout,
    /// A timer the actor set.
    Timer,
    /// A watched actor terminated.
    Terminated,
}

/// Why a message could not be delivered to its actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterReason {
    /// The actor had stopped (or never existed) when the message was sent.
    Closed,
    /// The message was still queued when the actor stopped.
    Drained,
}

/// Which element an overflow policy dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dropped {
    /// The incoming message (keep-oldest).
    Incoming,
    /// The oldest queued message, evicted (keep-newest).
    Oldest,
}

/// Why a reply (or a timeout) was discarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StaleReason {
    /// A newer request replaced this one.
    Superseded,
    /// The request had already timed out.
    TimedOut,
    /// The actor abandoned the request (it left the state that wanted it).
    Abandoned,
    /// The actor restarted since it asked.
    Restarted,
    /// The request was answered already: this is a second reply.
    AlreadyAnswered,
    /// The request is too old to be remembered, or was never made here.
    Unknown,
}

/// Where a statechart event came from (SCXML's external and internal queues).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventOrigin {
    /// From the actor's mailbox (a macrostep starts).
    External,
    /// Raised by the chart itself (`raise`, `done.state.*`), drained before
    /// the next external event.
    Internal,
}

/// The kind of a statechart state (SCXML's `state`, `parallel`, `final`,
/// `history`; a `state` without children is atomic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKind {
    /// A state without children.
    Atomic,
    /// A state with children, one of them active.
    Compound,
    /// A state whose children are all active.
    Parallel,
    /// A final state.
    Final,
    /// A history pseudo-state.
    History,
}

/// How much a history state remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryDepth {
    /// The parent's active children only.
    Shallow,
    /// Every active descendant of the parent.
    Deep,
}

/// One state of a chart definition, in document order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChartStateDef {
    /// The state's id (unique within the machine).
    pub id: String,
    /// Its parent state; `None` for the top-level states.
    #[serde(default)]
    pub parent: Option<String>,
    /// What kind of state it is.
    pub kind: StateKind,
    /// A history state's depth. Absent on other states, and in traces
    /// written before it was recorded (a reader then takes it as shallow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryDepth>,
    /// A compound state's initial child (possibly a history state); absent
    /// for other states and in older traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<String>,
}

/// One transition of a chart definition.
///
/// An `after` transition has its delay in `delay` and, in `event`, the
/// event its timer raises; an eventless (`always`) transition has neither.
/// `guard`, `delay` and `actions` are absent in traces written before they
/// were recorded.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChartTransitionDef {
    /// The state it leaves from.
    pub source: String,
    /// The event descriptor; `None` for an eventless (`always`) transition.
    #[serde(default)]
    pub event: Option<String>,
    /// Its targets (empty for a targetless transition).
    #[serde(default)]
    pub targets: Vec<String>,
    /// Its guard, as the Mermaid export writes it (`isValid`,
    /// `not a and in #x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// An `after` transition's delay as written in the definition: a number
    /// of milliseconds (`"100"`) or a named delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// The names of its actions, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// Cluster: which kind of remote send a `remote_send` is
/// (`docs/cluster.md`). A message's id is `NODE#INC>TO#TO_INC/SEQ` for a
/// tell (the sender's name and incarnation, the receiver's, and the
/// sequence number of the sender's tells to that incarnation) and
/// `NODE#INC?REQ` for a send or an ask (the sender's request id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteSendKind {
    /// Fire and forget.
    Tell,
    /// A send answered by the receiving mailbox's verdict.
    Send,
    /// A request answered by a reply.
    Ask,
}

/// Cluster: what a receiving node did with a message from another node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteReceived {
    /// Queued in the actor's mailbox (a `turn_start` handles it later).
    Enqueued,
    /// Queued, a keep-newest mailbox's oldest message evicted for it.
    Evicting,
    /// Lost to the mailbox's policy (keep-oldest full).
    Dropped,
    /// Handed back by a full reject mailbox.
    Rejected,
    /// Refused by a full suspend mailbox.
    Full,
    /// No actor takes it: stopped, not exported, or an undecodable message.
    Closed,
    /// A tell older than one already taken from the same sender, or a
    /// repeated send or ask: not delivered again.
    Duplicate,
    /// A tell for an earlier incarnation of this node: discarded.
    Foreign,
}

/// Every kind of step the runtime records, plus the statechart extension.
///
/// Serialised internally tagged: `{"kind":"enqueue","actor":3,...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActorEvent {
    /// An actor was created.
    Spawn {
        /// The new actor.
        actor: ActorId,
        /// Its name.
        name: String,
        /// Its path from the root, e.g. `/orders/worker` (traces written
        /// before paths existed have none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// Its supervisor (`0` is the root), if any.
        #[serde(default)]
        parent: Option<ActorId>,
        /// Its mailbox policy.
        policy: Policy,
    },
    /// A message entered a mailbox.
    Enqueue {
        /// The receiver.
        actor: ActorId,
        /// The lane it entered.
        lane: Lane,
        /// The lane's depth after the push.
        depth: usize,
    },
    /// An overflow policy dropped a message.
    Drop {
        /// The receiver whose mailbox was full.
        actor: ActorId,
        /// The policy that dropped it.
        policy: DropPolicy,
        /// Which message was lost.
        which: Dropped,
    },
    /// A reject mailbox handed a message back to its sender.
    Reject {
        /// The receiver.
        actor: ActorId,
    },
    /// A suspend mailbox refused a non-waiting outside sender.
    Full {
        /// The receiver.
        actor: ActorId,
    },
    /// A message reached no actor.
    DeadLetter {
        /// The addressee.
        actor: ActorId,
        /// Why.
        reason: DeadLetterReason,
    },
    /// A handler or hook began.
    TurnStart {
        /// The actor.
        actor: ActorId,
        /// What the turn handles.
        what: TurnKind,
    },
    /// The handler or hook returned or panicked.
    TurnEnd {
        /// The actor.
        actor: ActorId,
        /// False when it panicked.
        ok: bool,
    },
    /// A message was set aside.
    Stash {
        /// The actor.
        actor: ActorId,
        /// Stash size after the push.
        size: usize,
    },
    /// Stashed messages were put back ahead of the mailbox.
    Unstash {
        /// The actor.
        actor: ActorId,
        /// How many.
        count: usize,
    },
    /// A timer was set.
    TimerSet {
        /// The owner.
        actor: ActorId,
        /// The timer.
        timer: TimerId,
        /// When it fires.
        deadline_ns: u64,
    },
    /// A live timer's message is about to be handled.
    TimerFire {
        /// The owner.
        actor: ActorId,
        /// The timer.
        timer: TimerId,
    },
    /// A timer was cancelled.
    TimerCancel {
        /// The owner.
        actor: ActorId,
        /// The timer.
        timer: TimerId,
    },
    /// A request was sent.
    Ask {
        /// The requester.
        actor: ActorId,
        /// The correlation id.
        request: RequestId,
        /// The addressee.
        to: ActorId,
    },
    /// A reply arrived for a request no longer awaited and was discarded.
    StaleReply {
        /// The requester.
        actor: ActorId,
        /// The correlation id.
        request: RequestId,
        /// Why it was stale.
        reason: StaleReason,
    },
    /// A turn, hook or factory panicked.
    Fail {
        /// The actor.
        actor: ActorId,
        /// The panic message.
        error: String,
    },
    /// A supervisor replaced an actor.
    Restart {
        /// The restarted actor.
        actor: ActorId,
        /// Restarts within the current period.
        restarts_in_period: u32,
    },
    /// A supervisor could not handle a child's failure.
    Escalate {
        /// The supervisor (`0` for the root).
        actor: ActorId,
        /// The child.
        child: ActorId,
    },
    /// An actor stopped for good.
    Stop {
        /// The actor.
        actor: ActorId,
        /// `stopped` or `failed: ...`.
        reason: String,
    },
    /// A sender overfilled a suspend mailbox and is not scheduled until `by`
    /// drains.
    Mute {
        /// The muted sender.
        actor: ActorId,
        /// The saturated receiver.
        by: ActorId,
    },
    /// The last mailbox muting `actor` drained below its low watermark.
    Unmute {
        /// The sender.
        actor: ActorId,
    },
    /// Cluster: a node's code sent a message to an actor on another node
    /// (`docs/cluster.md`); `actor` is `0`, the node itself.
    RemoteSend {
        /// The node's own id, `0`.
        actor: ActorId,
        /// The message's id across the cluster ([`RemoteSendKind`] says
        /// how it is formed).
        msg: String,
        /// Which kind of remote send.
        how: RemoteSendKind,
        /// The receiving node's name.
        to_node: String,
        /// The receiving actor's path on that node.
        to_path: String,
    },
    /// Cluster: the message went on the wire (the transport took it);
    /// a send the transport refused has a `remote_send` and no
    /// `remote_wire`.
    RemoteWire {
        /// The node's own id, `0`.
        actor: ActorId,
        /// The message's id (as in its `remote_send`).
        msg: String,
        /// The subject it was published on.
        subject: String,
    },
    /// Cluster: a message from another node reached this node and its
    /// mailbox gave a verdict (the `enqueue`, `drop`, `reject`, ... of
    /// that delivery is the receiver's event just before).
    RemoteReceive {
        /// The receiving actor (`0` when no exported actor takes it).
        actor: ActorId,
        /// The message's id (as in its `remote_send` on the sender).
        msg: String,
        /// The sending node's name.
        from_node: String,
        /// What happened to it.
        verdict: RemoteReceived,
    },
    /// Extension: a statechart actor's definition, recorded once before its
    /// first microstep so a reader can draw the diagram.
    ChartDefine {
        /// The chart actor.
        actor: ActorId,
        /// The machine's id.
        machine: String,
        /// Its states in document order.
        states: Vec<ChartStateDef>,
        /// Its transitions in document order.
        #[serde(default)]
        transitions: Vec<ChartTransitionDef>,
        /// The machine's root state (the one state `states` leaves out);
        /// absent in older traces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<String>,
        /// The root's initial state; absent in older traces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initial: Option<String>,
        /// The root's kind: compound, or parallel for a machine whose
        /// top-level states are regions; absent in older traces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root_kind: Option<StateKind>,
    },
    /// Extension: a statechart starts processing an event.
    ChartEvent {
        /// The chart actor.
        actor: ActorId,
        /// The event's name.
        event: String,
        /// External (a macrostep starts) or internal.
        origin: EventOrigin,
    },
    /// Extension: a microstep exited a state.
    ChartExit {
        /// The chart actor.
        actor: ActorId,
        /// The state's id.
        state: String,
    },
    /// Extension: a microstep took a transition (after the exits, before
    /// the entries, as SCXML's `microstep` does).
    ChartTransition {
        /// The chart actor.
        actor: ActorId,
        /// The transition's source state.
        source: String,
        /// The event that enabled it; `None` when eventless.
        #[serde(default)]
        event: Option<String>,
        /// Its targets.
        #[serde(default)]
        targets: Vec<String>,
        /// Its position in the `chart_define`'s `transitions`, so a reader
        /// names the very transition taken (two may share source, targets
        /// and event and differ by guard); absent in older traces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<u32>,
    },
    /// Extension: a microstep entered a state.
    ChartEnter {
        /// The chart actor.
        actor: ActorId,
        /// The state's id.
        state: String,
    },
    /// A traced stream (`turno::stream::buffered_traced`) was created.
    /// A stream's id is numbered with the actors, so no actor shares it.
    StreamOpen {
        /// The stream.
        stream: ActorId,
        /// Its name.
        name: String,
        /// Its buffering policy.
        policy: Policy,
    },
    /// An element entered a stream's buffer (or went straight to its
    /// waiting consumer, `depth` 0).
    StreamPush {
        /// The stream.
        stream: ActorId,
        /// The buffer's depth after the push.
        depth: usize,
    },
    /// A stream's policy lost an element.
    StreamDrop {
        /// The stream.
        stream: ActorId,
        /// The policy that lost it.
        policy: DropPolicy,
        /// The incoming element (keep-oldest, or capacity 0 with no consumer
        /// waiting) or the oldest buffered one (keep-newest).
        which: Dropped,
    },
    /// A full reject stream handed an element back to its producer.
    StreamReject {
        /// The stream.
        stream: ActorId,
    },
    /// A full suspend stream refused a push that would not wait.
    StreamFull {
        /// The stream.
        stream: ActorId,
    },
    /// The consumer took an element.
    StreamTake {
        /// The stream.
        stream: ActorId,
        /// The buffer's depth after the take.
        depth: usize,
    },
}

impl ActorEvent {
    /// The actor the event is about; for a stream's events, the stream's
    /// id (numbered with the actors).
    pub fn actor(&self) -> ActorId {
        use ActorEvent::*;
        match self {
            Spawn { actor, .. }
            | Enqueue { actor, .. }
            | Drop { actor, .. }
            | Reject { actor }
            | Full { actor }
            | DeadLetter { actor, .. }
            | TurnStart { actor, .. }
            | TurnEnd { actor, .. }
            | Stash { actor, .. }
            | Unstash { actor, .. }
            | TimerSet { actor, .. }
            | TimerFire { actor, .. }
            | TimerCancel { actor, .. }
            | Ask { actor, .. }
            | StaleReply { actor, .. }
            | Fail { actor, .. }
            | Restart { actor, .. }
            | Escalate { actor, .. }
            | Stop { actor, .. }
            | Mute { actor, .. }
            | Unmute { actor }
            | RemoteSend { actor, .. }
            | RemoteWire { actor, .. }
            | RemoteReceive { actor, .. }
            | ChartDefine { actor, .. }
            | ChartEvent { actor, .. }
            | ChartExit { actor, .. }
            | ChartTransition { actor, .. }
            | ChartEnter { actor, .. } => *actor,
            StreamOpen { stream, .. }
            | StreamPush { stream, .. }
            | StreamDrop { stream, .. }
            | StreamReject { stream }
            | StreamFull { stream }
            | StreamTake { stream, .. } => *stream,
        }
    }
}
