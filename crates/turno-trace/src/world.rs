//! Reconstruction: the state of the world after the first k events.
//!
//! [`World::apply`] folds one event into the state; the world at step k is
//! the empty world with events `0..k` applied. [`crate::Index`] reaches any
//! k quickly by starting from a stored checkpoint.
//!
//! What the trace says is shown exactly; where a trace is silent the rule
//! used is documented on the field (e.g. a system-lane message consumed
//! without a turn only shows up in the next `enqueue`'s `depth`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::actor::{ActorEvent, DeadLetterReason, Dropped, Lane, StaleReason, TurnKind};
use crate::event::{Event, Kind};
use crate::ids::{ActorId, AnimationId, EntryId, PromiseId, RequestId, TimerId};
use crate::js::{DrivenBy, JsEvent, MainThread, Phase, PromiseState, Queue, Stream, TaskSource};
use crate::policy::{DropPolicy, Policy};

/// How many messages of one lane are kept as boxes; beyond it the newest
/// are only counted (`untracked`), so a runaway mailbox cannot make every
/// checkpoint huge.
pub const LANE_BOXES: usize = 4096;
/// Console lines kept (the newest); older ones are only counted.
pub const CONSOLE_LINES: usize = 500;
/// Uncaught errors and notes kept (the newest).
pub const NOTES_KEPT: usize = 100;

/// The reconstructed state after `step` events.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct World {
    /// Events applied so far.
    pub step: u64,
    /// The last applied event's time.
    pub t_ns: u64,
    /// Actors by id (runtime traces).
    pub actors: BTreeMap<ActorId, ActorView>,
    /// Requests sent and not yet settled, by correlation id.
    pub asks: BTreeMap<RequestId, PendingAsk>,
    /// Statecharts by actor.
    pub charts: BTreeMap<ActorId, ChartView>,
    /// Traced streams by id (`stream_*` events).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub streams: BTreeMap<ActorId, StreamView>,
    /// Totals over the whole system.
    pub totals: Totals,
    /// The JavaScript event loop (JavaScript traces): loop 0, the page or
    /// Node's main thread (events without a `loop` field belong to it).
    pub js: JsWorld,
    /// The event loops of dedicated workers, by loop id (1.. in creation
    /// order). Each loop has its own queues, stack and promises, and its
    /// ids are its own (`docs/js-trace-format.md`), so loops are never
    /// folded into one view.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workers: BTreeMap<u32, JsWorld>,
    /// A cluster trace merged from several nodes: each node's own world
    /// (actor ids are a node's own), by node (`NAME#INCARNATION`). An
    /// event with a `node` changes only that node's world.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes: BTreeMap<String, World>,
    /// What the program printed, newest last.
    pub console: Console,
    /// Events of kinds this reader does not know.
    pub unknown_events: u64,
}

/// System-wide counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Messages lost to an overflow policy, by policy.
    pub dropped: BTreeMap<DropPolicy, u64>,
    /// Messages handed back by reject mailboxes.
    pub rejected: u64,
    /// Refusals by full suspend mailboxes.
    pub full: u64,
    /// Dead letters by reason (`closed`, `drained`).
    pub dead_letters: BTreeMap<String, u64>,
    /// Stale replies discarded, by reason.
    pub stale: BTreeMap<StaleReason, u64>,
    /// Turns that panicked.
    pub failures: u64,
}

/// An actor's mailbox, stash and timers as the trace shows them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActorView {
    /// Its name (`$<id>` for one seen before its `spawn`, as the runtime
    /// names an actor spawned without a name).
    pub name: String,
    /// Its path from the root, when the trace records it.
    #[serde(default)]
    pub path: Option<String>,
    /// Its supervisor.
    pub parent: Option<ActorId>,
    /// Its mailbox policy.
    pub policy: Policy,
    /// Alive, failed or stopped.
    pub status: Status,
    /// The turn running now, if any.
    pub in_turn: Option<TurnKind>,
    /// The user lane, oldest first.
    pub user: Boxes,
    /// The system lane's depth: set by each system `enqueue`, decreased by
    /// the turns that consume one (`started`, `stopped`, `timer`,
    /// `ask_timeout`, `terminated`).
    pub system_depth: usize,
    /// The deepest the user lane got.
    pub max_depth: usize,
    /// Stashed messages, oldest first (each the `seq` of its `enqueue`).
    pub stash: VecDeque<Option<u64>>,
    /// Unstashed messages waiting for re-delivery, ahead of the mailbox.
    pub redelivery: VecDeque<Option<u64>>,
    /// Pending timers and their deadlines.
    pub timers: BTreeMap<TimerId, u64>,
    /// The sender's receiver while muted.
    pub muted_by: Option<ActorId>,
    /// Messages lost to this mailbox's policy, by policy.
    pub drops: BTreeMap<DropPolicy, u64>,
    /// Messages rejected.
    pub rejected: u64,
    /// Refusals by a full suspend mailbox.
    pub full: u64,
    /// Dead letters addressed to it.
    pub dead_letters: u64,
    /// Stale replies it discarded.
    pub stale: u64,
    /// Turns run.
    pub turns: u64,
    /// Restarts.
    pub restarts: u64,
    /// The message the current turn handles (its `enqueue` seq).
    pub current: Option<Option<u64>>,
}

/// A lane of boxes: messages in order, each named by the `seq` of the
/// `enqueue` that brought it (`None` when the trace does not say which).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boxes {
    /// The oldest [`LANE_BOXES`] messages.
    pub boxes: VecDeque<Option<u64>>,
    /// Newer messages beyond the boxes, only counted.
    pub untracked: usize,
}

impl Boxes {
    /// Messages in the lane.
    pub fn depth(&self) -> usize {
        self.boxes.len() + self.untracked
    }

    fn push(&mut self, b: Option<u64>) {
        if self.untracked == 0 && self.boxes.len() < LANE_BOXES {
            self.boxes.push_back(b);
        } else {
            self.untracked += 1;
        }
    }

    fn pop(&mut self) -> Option<Option<u64>> {
        match self.boxes.pop_front() {
            Some(b) => {
                if self.untracked > 0 && self.boxes.len() < LANE_BOXES {
                    // The oldest untracked message moves into view, nameless.
                    self.untracked -= 1;
                    self.boxes.push_back(None);
                }
                Some(b)
            }
            None if self.untracked > 0 => {
                self.untracked -= 1;
                Some(None)
            }
            None => None,
        }
    }

    /// Brings the lane to the depth the trace reports: messages the trace
    /// did not show leaving are taken from the front, ones it did not show
    /// arriving are added nameless at the front.
    fn reconcile(&mut self, depth: usize) {
        while self.depth() > depth {
            self.pop();
        }
        while self.depth() < depth {
            self.boxes.push_front(None);
            if self.boxes.len() > LANE_BOXES {
                self.boxes.pop_back();
                self.untracked += 1;
            }
        }
    }

    fn clear(&mut self) {
        self.boxes.clear();
        self.untracked = 0;
    }
}

/// An actor's life.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum Status {
    /// Running or ready.
    Alive,
    /// A turn panicked; its supervisor decides.
    Failed(String),
    /// Stopped for good.
    Stopped(String),
}

/// A request not yet settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingAsk {
    /// The requester.
    pub from: ActorId,
    /// The addressee.
    pub to: ActorId,
    /// The `seq` of the `ask`.
    pub seq: u64,
}

/// A traced stream's buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamView {
    /// Its name (from `stream_open`).
    pub name: String,
    /// Its buffering policy (from `stream_open`).
    pub policy: Option<Policy>,
    /// Elements buffered now.
    pub depth: usize,
    /// The deepest the buffer has been.
    pub max_depth: usize,
    /// Elements pushed and kept (an eviction's push included).
    pub pushed: u64,
    /// Elements the consumer took.
    pub taken: u64,
    /// Elements lost to the policy (evicted or dropped), handed back
    /// (reject) or refused (full).
    pub lost: u64,
}

/// A statechart's definition and active configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartView {
    /// The machine's id, once defined.
    pub machine: Option<String>,
    /// States in document order (from `chart_define`).
    pub states: Vec<crate::actor::ChartStateDef>,
    /// Transitions (from `chart_define`).
    pub transitions: Vec<crate::actor::ChartTransitionDef>,
    /// The machine's root state (from `chart_define`; `None` in older
    /// traces).
    #[serde(default)]
    pub root: Option<String>,
    /// The root's initial state (from `chart_define`).
    #[serde(default)]
    pub initial: Option<String>,
    /// The root's kind (from `chart_define`).
    #[serde(default)]
    pub root_kind: Option<crate::actor::StateKind>,
    /// The active configuration.
    pub active: BTreeSet<String>,
    /// The event being processed (the last `chart_event`).
    pub event: Option<String>,
    /// The last transition taken: source and targets.
    pub last_transition: Option<(String, Vec<String>)>,
    /// The transitions taken since the last external event (the macrostep
    /// in progress, or the one just finished), in the order taken, as
    /// positions in `transitions`: what the chart reported, so a
    /// self-transition or one of two transitions that differ only by
    /// guard is named exactly. Empty in traces that do not record the
    /// positions.
    #[serde(default)]
    pub taken: Vec<u32>,
    /// Events processed.
    pub events: u64,
}

/// The JavaScript event loop's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JsWorld {
    /// Every queue's entries in order (timers by due time, then arming).
    pub queues: BTreeMap<Queue, Vec<Entry>>,
    /// The frames the host pushed, outermost first.
    pub stack: Vec<String>,
    /// The `js_stack` of the last event that carried one (outermost first).
    pub js_stack: Vec<String>,
    /// Followed promises.
    pub promises: BTreeMap<PromiseId, PromiseView>,
    /// Node: the current phase and loop iteration.
    pub phase: Option<(Phase, u64)>,
    /// HTML: the frame being rendered.
    pub rendering: Option<u64>,
    /// HTML: frames rendered so far.
    pub frames: u64,
    /// Entries removed by `clear*` / `cancelAnimationFrame`.
    pub cancelled: u64,
    /// Uncaught errors (message, location), newest last, at most [`NOTES_KEPT`].
    pub uncaught: VecDeque<(String, Option<String>)>,
    /// Notes and budget messages, newest last, at most [`NOTES_KEPT`].
    pub notes: VecDeque<String>,
    /// `run_end`: exit code and steps.
    pub ended: Option<(i32, u64)>,
    /// HTML: animations started and neither cancelled nor ended (an
    /// animation whose `end_ns` has passed is gone, as the writer drops it).
    pub animations: BTreeMap<AnimationId, AnimationView>,
    /// HTML: compositor frames drawn so far.
    pub compositor_frames: u64,
    /// HTML: the last compositor frame's time and what the main thread was
    /// doing then.
    pub last_compositor_frame: Option<(u64, MainThread)>,
}

/// An animation started with `element.animate(...)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnimationView {
    /// The element and properties.
    pub label: String,
    /// Which thread drives it.
    pub driven_by: DrivenBy,
    /// When it ends (`None`: infinite).
    pub end_ns: Option<u64>,
    /// The `seq` of its `animation_start`.
    pub seq: u64,
}

/// One entry of a JavaScript queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its id.
    pub id: EntryId,
    /// The callback's name.
    pub label: String,
    /// `timers`: when due.
    pub due_ns: Option<u64>,
    /// `task`: where it came from.
    pub source: Option<TaskSource>,
    /// `task` from a timer: the timer.
    pub timer: Option<EntryId>,
    /// The `seq` of its `enqueue`.
    pub seq: u64,
}

/// A promise's internal slots, as last sampled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromiseView {
    /// How the trace started following it.
    pub via: String,
    /// `[[PromiseState]]` (`None` until the first sample).
    pub state: Option<PromiseState>,
    /// `[[PromiseResult]]`, short rendering.
    pub result: Option<Value>,
    /// Length of `[[PromiseFulfillReactions]]`.
    pub fulfill_reactions: Option<u64>,
    /// Length of `[[PromiseRejectReactions]]`.
    pub reject_reactions: Option<u64>,
    /// `[[PromiseIsHandled]]`.
    pub is_handled: Option<bool>,
    /// The `seq` of its last sample.
    pub seq: u64,
}

/// The console: the newest [`CONSOLE_LINES`] writes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Console {
    /// (stream, text), newest last. Each text is shared (an `Arc`) by
    /// every checkpoint that holds it, so a checkpoint of a program that
    /// prints a lot copies no text.
    #[serde(with = "shared_lines")]
    pub lines: VecDeque<(Stream, Arc<str>)>,
    /// Writes no longer kept.
    pub forgotten: u64,
}

/// Console lines as a list of `[stream, text]` (serde's own `Arc` support
/// is a feature of serde's: enabling it would rebuild every crate that
/// depends on serde in the workspace).
mod shared_lines {
    use std::collections::VecDeque;
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    use crate::js::Stream;

    pub fn serialize<S: Serializer>(
        lines: &VecDeque<(Stream, Arc<str>)>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(lines.iter().map(|(stream, text)| (stream, &**text)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<VecDeque<(Stream, Arc<str>)>, D::Error> {
        let lines = Vec::<(Stream, String)>::deserialize(d)?;
        Ok(lines.into_iter().map(|(s, t)| (s, Arc::from(t))).collect())
    }
}

fn push_bounded<T>(q: &mut VecDeque<T>, v: T, max: usize) -> bool {
    q.push_back(v);
    if q.len() > max {
        q.pop_front();
        true
    } else {
        false
    }
}

impl World {
    /// The empty world (step 0).
    pub fn new() -> Self {
        World::default()
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, e: &Event) {
        self.step += 1;
        self.t_ns = e.t_ns;
        let loop_id = e.loop_id.unwrap_or(0);
        if let Some(s) = &e.js_stack {
            self.js_loop_mut(loop_id).js_stack = s.clone();
        }
        if let (Some(node), Kind::Actor(a)) = (&e.node, &e.kind) {
            let w = self.nodes.entry(node.clone()).or_default();
            w.step = self.step;
            w.t_ns = e.t_ns;
            w.apply_actor(e.seq, a);
            return;
        }
        match &e.kind {
            Kind::Actor(a) => self.apply_actor(e.seq, a),
            Kind::Js(j) => self.apply_js(loop_id, e.seq, e.t_ns, j),
            Kind::Other(_) => self.unknown_events += 1,
        }
    }

    /// A rough size, used to space checkpoints so their total memory stays
    /// proportional to the trace.
    pub fn weight(&self) -> usize {
        let actors: usize = self
            .actors
            .values()
            .map(|a| 8 + a.user.boxes.len() + a.stash.len() + a.redelivery.len() + a.timers.len())
            .chain(self.nodes.values().map(World::weight))
            .sum();
        let charts: usize = self
            .charts
            .values()
            .map(|c| 4 + c.states.len() + c.transitions.len() + c.active.len() + c.taken.len())
            .sum();
        let loops: usize = std::iter::once(&self.js)
            .chain(self.workers.values())
            .map(|js| {
                js.queues.values().map(Vec::len).sum::<usize>() + js.stack.len() + js.promises.len()
            })
            .sum();
        16 + actors
            + charts
            + self.streams.len()
            + self.asks.len()
            + loops
            + self.console.lines.len()
    }

    /// The event loop `id` (0: the page or Node's main thread, 1..: a
    /// dedicated worker), if it has been seen.
    pub fn js_loop(&self, id: u32) -> Option<&JsWorld> {
        if id == 0 {
            Some(&self.js)
        } else {
            self.workers.get(&id)
        }
    }

    fn js_loop_mut(&mut self, id: u32) -> &mut JsWorld {
        if id == 0 {
            &mut self.js
        } else {
            self.workers.entry(id).or_default()
        }
    }

    fn actor(&mut self, id: ActorId) -> &mut ActorView {
        self.actors.entry(id).or_insert_with(|| ActorView {
            // An actor seen before its spawn (a trace cut from a ring) is
            // named as the runtime names an actor spawned without a name:
            // `$` names are the runtime's own, so no chosen name collides.
            name: format!("${}", id.0),
            path: None,
            parent: None,
            policy: Policy::Unbounded,
            status: Status::Alive,
            in_turn: None,
            user: Boxes::default(),
            system_depth: 0,
            max_depth: 0,
            stash: VecDeque::new(),
            redelivery: VecDeque::new(),
            timers: BTreeMap::new(),
            muted_by: None,
            drops: BTreeMap::new(),
            rejected: 0,
            full: 0,
            dead_letters: 0,
            stale: 0,
            turns: 0,
            restarts: 0,
            current: None,
        })
    }

    /// Settles the oldest pending request of `from` (a reply or timeout turn
    /// does not name its request; with one request in flight it is exact).
    fn settle_oldest(&mut self, from: ActorId) {
        let found = self
            .asks
            .iter()
            .filter(|(_, a)| a.from == from)
            .min_by_key(|(_, a)| a.seq)
            .map(|(r, _)| *r);
        if let Some(r) = found {
            self.asks.remove(&r);
        }
    }

    fn apply_actor(&mut self, seq: u64, e: &ActorEvent) {
        use ActorEvent as A;
        match e {
            A::Spawn {
                actor,
                name,
                path,
                parent,
                policy,
            } => {
                let a = self.actor(*actor);
                a.name = name.clone();
                a.path = path.clone();
                a.parent = *parent;
                a.policy = *policy;
            }
            A::Enqueue { actor, lane, depth } => {
                let a = self.actor(*actor);
                match lane {
                    Lane::User => {
                        a.user.push(Some(seq));
                        a.user.reconcile(*depth);
                        a.max_depth = a.max_depth.max(*depth);
                    }
                    Lane::System => a.system_depth = *depth,
                }
            }
            A::Drop {
                actor,
                policy,
                which,
            } => {
                let a = self.actor(*actor);
                if *which == Dropped::Oldest {
                    a.user.pop();
                }
                *a.drops.entry(*policy).or_default() += 1;
                *self.totals.dropped.entry(*policy).or_default() += 1;
            }
            A::Reject { actor } => {
                self.actor(*actor).rejected += 1;
                self.totals.rejected += 1;
            }
            A::Full { actor } => {
                self.actor(*actor).full += 1;
                self.totals.full += 1;
            }
            A::DeadLetter { actor, reason } => {
                self.actor(*actor).dead_letters += 1;
                let key = match reason {
                    DeadLetterReason::Closed => "closed",
                    DeadLetterReason::Drained => "drained",
                };
                *self.totals.dead_letters.entry(key.into()).or_default() += 1;
            }
            A::TurnStart { actor, what } => {
                let a = self.actor(*actor);
                a.in_turn = Some(*what);
                a.turns += 1;
                a.current = match what {
                    TurnKind::Message | TurnKind::Reply => a.user.pop(),
                    TurnKind::Unstashed => a.redelivery.pop_front(),
                    TurnKind::Timer => None,
                    TurnKind::Started
                    | TurnKind::Stopped
                    | TurnKind::AskTimeout
                    | TurnKind::Terminated => {
                        a.system_depth = a.system_depth.saturating_sub(1);
                        None
                    }
                };
                if matches!(what, TurnKind::Reply | TurnKind::AskTimeout) {
                    self.settle_oldest(*actor);
                }
            }
            A::TurnEnd { actor, ok } => {
                let a = self.actor(*actor);
                a.in_turn = None;
                a.current = None;
                if !ok {
                    self.totals.failures += 1;
                }
            }
            A::Stash { actor, size } => {
                let a = self.actor(*actor);
                let b = a.current.take().flatten();
                a.stash.push_back(b);
                while a.stash.len() > *size {
                    a.stash.pop_front();
                }
                while a.stash.len() < *size {
                    a.stash.push_front(None);
                }
            }
            A::Unstash { actor, count } => {
                let a = self.actor(*actor);
                for _ in 0..*count {
                    let b = a.stash.pop_front().unwrap_or(None);
                    a.redelivery.push_back(b);
                }
            }
            A::TimerSet {
                actor,
                timer,
                deadline_ns,
            } => {
                self.actor(*actor).timers.insert(*timer, *deadline_ns);
            }
            A::TimerFire { actor, timer } => {
                let a = self.actor(*actor);
                a.timers.remove(timer);
                a.system_depth = a.system_depth.saturating_sub(1);
            }
            A::TimerCancel { actor, timer } => {
                self.actor(*actor).timers.remove(timer);
            }
            A::Ask { actor, request, to } => {
                self.asks.insert(
                    *request,
                    PendingAsk {
                        from: *actor,
                        to: *to,
                        seq,
                    },
                );
            }
            A::StaleReply {
                actor,
                request,
                reason,
            } => {
                let a = self.actor(*actor);
                a.stale += 1;
                // A stale reply came through the user lane.
                a.user.pop();
                self.asks.remove(request);
                *self.totals.stale.entry(*reason).or_default() += 1;
            }
            A::Fail { actor, error } => {
                self.actor(*actor).status = Status::Failed(error.clone());
            }
            A::Restart { actor, .. } => {
                let a = self.actor(*actor);
                a.status = Status::Alive;
                a.restarts += 1;
                a.timers.clear();
                // The new instance gets the stash first, in order.
                let stash: Vec<_> = a.stash.drain(..).collect();
                a.redelivery.extend(stash);
                self.asks.retain(|_, p| p.from != *actor);
            }
            A::Escalate { .. } => {}
            A::Stop { actor, reason } => {
                let a = self.actor(*actor);
                a.status = Status::Stopped(reason.clone());
                a.user.clear();
                a.system_depth = 0;
                a.stash.clear();
                a.redelivery.clear();
                a.timers.clear();
                a.muted_by = None;
                a.in_turn = None;
                self.asks.retain(|_, p| p.from != *actor);
            }
            A::StreamOpen {
                stream,
                name,
                policy,
            } => {
                let v = self.streams.entry(*stream).or_default();
                v.name = name.clone();
                v.policy = Some(*policy);
            }
            A::StreamPush { stream, depth } => {
                let v = self.streams.entry(*stream).or_default();
                v.depth = *depth;
                v.max_depth = v.max_depth.max(*depth);
                v.pushed += 1;
            }
            A::StreamTake { stream, depth } => {
                let v = self.streams.entry(*stream).or_default();
                v.depth = *depth;
                v.max_depth = v.max_depth.max(*depth);
                v.taken += 1;
            }
            A::StreamDrop { stream, which, .. } => {
                let v = self.streams.entry(*stream).or_default();
                v.lost += 1;
                if *which == Dropped::Oldest {
                    v.depth = v.depth.saturating_sub(1);
                }
            }
            A::StreamReject { stream } | A::StreamFull { stream } => {
                self.streams.entry(*stream).or_default().lost += 1;
            }
            A::Mute { actor, by } => self.actor(*actor).muted_by = Some(*by),
            A::Unmute { actor } => self.actor(*actor).muted_by = None,
            // The message's path across nodes is the cluster index's
            // (`crate::cluster`); the mailbox's own event beside it
            // already changed the world.
            A::RemoteSend { .. } | A::RemoteWire { .. } | A::RemoteReceive { .. } => {}
            A::ChartDefine {
                actor,
                machine,
                states,
                transitions,
                root,
                initial,
                root_kind,
            } => {
                let c = self.charts.entry(*actor).or_default();
                c.machine = Some(machine.clone());
                c.states = states.clone();
                c.transitions = transitions.clone();
                c.root = root.clone();
                c.initial = initial.clone();
                c.root_kind = *root_kind;
            }
            A::ChartEvent {
                actor,
                event,
                origin,
            } => {
                let c = self.charts.entry(*actor).or_default();
                c.event = Some(event.clone());
                c.events += 1;
                if *origin == crate::actor::EventOrigin::External {
                    c.taken.clear();
                }
            }
            A::ChartExit { actor, state } => {
                self.charts.entry(*actor).or_default().active.remove(state);
            }
            A::ChartTransition {
                actor,
                source,
                targets,
                index,
                ..
            } => {
                let c = self.charts.entry(*actor).or_default();
                c.last_transition = Some((source.clone(), targets.clone()));
                c.taken.extend(*index);
            }
            A::ChartEnter { actor, state } => {
                self.charts
                    .entry(*actor)
                    .or_default()
                    .active
                    .insert(state.clone());
            }
        }
    }

    fn apply_js(&mut self, loop_id: u32, seq: u64, t_ns: u64, e: &JsEvent) {
        use JsEvent as J;
        let js = if loop_id == 0 {
            &mut self.js
        } else {
            self.workers.entry(loop_id).or_default()
        };
        if !js.animations.is_empty() {
            js.animations
                .retain(|_, a| a.end_ns.is_none_or(|end| end >= t_ns));
        }
        match e {
            J::StackPush { frame, depth } => {
                js.stack.truncate((*depth as usize).saturating_sub(1));
                js.stack.push(frame.clone());
            }
            J::StackPop { depth, .. } => js.stack.truncate(*depth as usize),
            J::Enqueue {
                queue,
                id,
                label,
                due_ns,
                source,
                timer,
                ..
            } => {
                let q = js.queues.entry(*queue).or_default();
                // An interval re-arms under its id: one entry per id, and it
                // keeps its label when the re-arm does not repeat it.
                let old = q.iter().position(|x| x.id == *id).map(|i| q.remove(i));
                let label = label
                    .clone()
                    .or_else(|| old.map(|o| o.label))
                    .unwrap_or_default();
                let entry = Entry {
                    id: *id,
                    label,
                    due_ns: *due_ns,
                    source: *source,
                    timer: *timer,
                    seq,
                };
                if *queue == Queue::Timers {
                    let due = due_ns.unwrap_or(0);
                    let at = q.partition_point(|x| x.due_ns.unwrap_or(0) <= due);
                    q.insert(at, entry);
                } else {
                    q.push(entry);
                }
            }
            J::Dequeue { queue, id, .. } => {
                if let Some(q) = js.queues.get_mut(queue) {
                    if let Some(i) = q.iter().position(|x| x.id == *id) {
                        q.remove(i);
                    }
                }
            }
            J::Cancel { queue, id } => {
                js.cancelled += 1;
                if let Some(q) = js.queues.get_mut(queue) {
                    q.retain(|x| x.id != *id);
                }
            }
            J::Phase { phase, iteration } => js.phase = Some((*phase, *iteration)),
            J::TimeAdvance { .. } | J::MicrotaskCheckpoint => {}
            J::RenderStart { frame, .. } => js.rendering = Some(*frame),
            J::RenderEnd { .. } => {
                js.rendering = None;
                js.frames += 1;
            }
            J::AnimationStart {
                animation,
                label,
                driven_by,
                end_ns,
            } => {
                js.animations.insert(
                    *animation,
                    AnimationView {
                        label: label.clone(),
                        driven_by: *driven_by,
                        end_ns: *end_ns,
                        seq,
                    },
                );
            }
            J::AnimationCancel { animation } => {
                js.animations.remove(animation);
            }
            J::CompositorFrame {
                frame_time_ns,
                main_thread,
                ..
            } => {
                js.compositor_frames += 1;
                js.last_compositor_frame = Some((*frame_time_ns, *main_thread));
            }
            J::PromiseObserved { promise, via } => {
                js.promises.insert(
                    *promise,
                    PromiseView {
                        via: via.clone(),
                        state: None,
                        result: None,
                        fulfill_reactions: None,
                        reject_reactions: None,
                        is_handled: None,
                        seq,
                    },
                );
            }
            J::Promise {
                promise,
                state,
                result,
                fulfill_reactions,
                reject_reactions,
                is_handled,
            } => {
                let p = js.promises.entry(*promise).or_insert_with(|| PromiseView {
                    via: String::new(),
                    state: None,
                    result: None,
                    fulfill_reactions: None,
                    reject_reactions: None,
                    is_handled: None,
                    seq,
                });
                p.state = Some(*state);
                p.result = result.clone();
                p.fulfill_reactions = *fulfill_reactions;
                p.reject_reactions = *reject_reactions;
                p.is_handled = *is_handled;
                p.seq = seq;
            }
            J::Output { stream, text } => {
                if push_bounded(
                    &mut self.console.lines,
                    (*stream, Arc::from(text.as_str())),
                    CONSOLE_LINES,
                ) {
                    self.console.forgotten += 1;
                }
            }
            J::Uncaught { message, location } => {
                push_bounded(
                    &mut js.uncaught,
                    (message.clone(), location.clone()),
                    NOTES_KEPT,
                );
            }
            J::Note { text } => {
                push_bounded(&mut js.notes, text.clone(), NOTES_KEPT);
            }
            J::BudgetExhausted { message } => {
                push_bounded(
                    &mut js.notes,
                    format!("budget exhausted: {message}"),
                    NOTES_KEPT,
                );
            }
            // Each loop's queues are its own (`World::workers`); the worker's
            // lifecycle shows in its loop's events.
            J::WorkerStart { .. }
            | J::WorkerError { .. }
            | J::MessagePost { .. }
            | J::WorkerEnd { .. } => {}
            J::RunEnd { exit_code, steps } => js.ended = Some((*exit_code, *steps)),
        }
    }

    /// The wait-for graph now: pending asks (requester waits for addressee)
    /// and muted senders (sender waits for the receiver that muted it), with
    /// every edge that lies on a cycle flagged.
    pub fn wait_for(&self) -> WaitFor {
        let mut edges: Vec<WaitEdge> = Vec::new();
        for (r, a) in &self.asks {
            edges.push(WaitEdge {
                from: a.from,
                to: a.to,
                why: format!("ask {}", r.0),
                cycle: false,
            });
        }
        for (id, a) in &self.actors {
            if let Some(by) = a.muted_by {
                edges.push(WaitEdge {
                    from: *id,
                    to: by,
                    why: "muted".into(),
                    cycle: false,
                });
            }
        }
        // An edge u->v is on a cycle iff u is reachable from v.
        let mut adj: BTreeMap<ActorId, Vec<ActorId>> = BTreeMap::new();
        for e in &edges {
            adj.entry(e.from).or_default().push(e.to);
        }
        let reaches = |start: ActorId, goal: ActorId| {
            let mut seen = BTreeSet::new();
            let mut stack = vec![start];
            while let Some(n) = stack.pop() {
                if n == goal {
                    return true;
                }
                if seen.insert(n) {
                    stack.extend(adj.get(&n).into_iter().flatten().copied());
                }
            }
            false
        };
        for e in &mut edges {
            e.cycle = reaches(e.to, e.from);
        }
        WaitFor { edges }
    }
}

/// The wait-for graph at one step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitFor {
    /// Every edge.
    pub edges: Vec<WaitEdge>,
}

impl WaitFor {
    /// Whether some actors wait for each other in a cycle (a logical deadlock).
    pub fn has_cycle(&self) -> bool {
        self.edges.iter().any(|e| e.cycle)
    }
}

/// `from` waits for `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitEdge {
    /// The waiting actor.
    pub from: ActorId,
    /// The actor it waits for.
    pub to: ActorId,
    /// `ask N` or `muted`.
    pub why: String,
    /// On a cycle.
    pub cycle: bool,
}
