//! The deterministic scheduler: one thread, virtual time, seeded choice.
//!
//! [`DetSystem`] runs every actor on the calling thread, one turn per
//! [`step`](DetSystem::step). When several actors could run, a seeded
//! random generator picks one, so a racy protocol shows a different
//! interleaving under a different seed, and the *same* seed replays the same
//! run, trace and all. Time is virtual: it moves only in
//! [`advance`](DetSystem::advance), which fires due timers in deadline order
//! and runs the system to idleness at each one.
//!
//! This is how protocols are tested (stale replies, timeouts, overload) and
//! how runs are replayed.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use turno::{Actor, Context, DetSystem, Props};
//!
//! /// Counts to 3, one step every 10 ms, noting when each step happened.
//! struct Counter { seen: Arc<Mutex<Vec<(u32, Duration)>>> }
//! impl Actor for Counter {
//!     type Msg = u32;
//!     fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u32) {
//!         self.seen.lock().unwrap().push((n, ctx.now().since_start()));
//!         if n < 3 {
//!             ctx.send_after(Duration::from_millis(10), n + 1);
//!         }
//!     }
//! }
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let s = seen.clone();
//! let mut sys = DetSystem::new(7);
//! let counter = sys.spawn(Props::new(), move || Counter { seen: s.clone() }).unwrap();
//! assert!(counter.try_send(1).is_enqueued());
//! sys.advance(Duration::from_millis(25)).unwrap();
//! let ms = Duration::from_millis;
//! assert_eq!(*seen.lock().unwrap(), [(1, ms(0)), (2, ms(10)), (3, ms(20))]);
//! assert_eq!(sys.now().since_start(), ms(25));
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crate::actor::{Actor, Props, SpawnError};
use crate::addr::{ActorId, Addr};
use crate::cell::{AnyCell, Cell, TurnOutcome};
use crate::context::{Effects, Spawned, TimerKey};
use crate::mailbox::{Control, Signal};
use crate::supervision::{Directive, ExitReason, Failure, RestartLog, Strategy, Supervision};
use crate::system::SystemShared;
use crate::time::Instant;
use crate::trace::{EventKind, TraceSink, Tracer};

/// The root of the supervision tree, as it appears in traces.
pub const ROOT: ActorId = ActorId(0);

/// The default bound on turns for one [`DetSystem::run_until_idle`].
pub const DEFAULT_STEP_LIMIT: u64 = 10_000_000;

/// A run did not reach idleness within its step budget: some actors keep
/// each other busy forever (a message loop) or the budget is too small.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("still busy after {steps} turns at {at} (step limit {limit}): a message loop, or raise the limit with DetSystemBuilder::step_limit")]
pub struct StepLimit {
    /// Turns run before giving up.
    pub steps: u64,
    /// The limit in force.
    pub limit: u64,
    /// Virtual time when it gave up.
    pub at: Instant,
}

struct Node {
    cell: Box<dyn AnyCell>,
    name: String,
    parent: Option<ActorId>,
    children: Vec<ActorId>,
    supervision: Supervision,
    restarts: RestartLog,
    /// The receivers whose full suspend mailboxes currently mute this actor
    /// (its edges in the wait-for graph).
    waiting_on: Vec<ActorId>,
    busy_until: Option<Instant>,
    failed: bool,
    in_ready: bool,
    restart_count: u32,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct TimerEntry {
    deadline: Instant,
    seq: u64,
    actor: ActorId,
    key: TimerKey,
}

/// Configures a [`DetSystem`].
pub struct DetSystemBuilder {
    seed: u64,
    sink: Option<Box<dyn TraceSink>>,
    metrics: bool,
    root: Supervision,
    step_limit: u64,
}

impl DetSystemBuilder {
    /// The seed for the choice among runnable actors.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Records the trace into `sink`.
    pub fn trace(mut self, sink: impl TraceSink + 'static) -> Self {
        self.sink = Some(Box::new(sink));
        self
    }

    /// Reports metrics through the `metrics` facade (default: on).
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// How the root supervises top-level actors (default: one-for-one, at
    /// most 3 restarts in 5 s). The root cannot escalate: when it gives up,
    /// the failed actor stops.
    pub fn root_supervision(mut self, s: Supervision) -> Self {
        self.root = s;
        self
    }

    /// The most turns one `run_until_idle` may take (default
    /// [`DEFAULT_STEP_LIMIT`]).
    pub fn step_limit(mut self, limit: u64) -> Self {
        self.step_limit = limit;
        self
    }

    /// Builds the system.
    pub fn build(self) -> DetSystem {
        let shared = Arc::new(SystemShared::new(Tracer::new(self.sink), self.metrics));
        DetSystem {
            shared,
            nodes: HashMap::new(),
            ready: Vec::new(),
            woken: Vec::new(),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            rng: fastrand::Rng::with_seed(self.seed),
            root: self.root,
            root_children: Vec::new(),
            root_restarts: RestartLog::default(),
            watchers: HashMap::new(),
            step_limit: self.step_limit,
            turns: 0,
        }
    }
}

/// A deterministic actor system. See the [module docs](self).
pub struct DetSystem {
    shared: Arc<SystemShared>,
    nodes: HashMap<ActorId, Node>,
    ready: Vec<ActorId>,
    woken: Vec<ActorId>,
    timers: BinaryHeap<Reverse<TimerEntry>>,
    timer_seq: u64,
    rng: fastrand::Rng,
    root: Supervision,
    root_children: Vec<ActorId>,
    root_restarts: RestartLog,
    watchers: HashMap<ActorId, Vec<ActorId>>,
    step_limit: u64,
    turns: u64,
}

impl DetSystem {
    /// A system with the given seed and defaults otherwise (no trace,
    /// metrics on).
    pub fn new(seed: u64) -> Self {
        DetSystem::builder().seed(seed).build()
    }

    /// A builder, for a trace sink, metrics, root supervision, step limit.
    pub fn builder() -> DetSystemBuilder {
        DetSystemBuilder {
            seed: 0,
            sink: None,
            metrics: true,
            root: Supervision::default(),
            step_limit: DEFAULT_STEP_LIMIT,
        }
    }

    /// Virtual time now.
    pub fn now(&self) -> Instant {
        self.shared.clock.now()
    }

    /// Spawns a top-level actor (supervised by the root). Its first turn is
    /// its `started` hook.
    pub fn spawn<A: Actor>(
        &mut self,
        props: Props,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Result<Addr<A::Msg>, SpawnError> {
        let (spawned, addr) = Cell::<A>::create(self.shared.clone(), props, Box::new(factory))?;
        self.register(None, spawned);
        Ok(addr)
    }

    /// Asks an actor to stop (through its system lane, ahead of its mail).
    pub fn stop(&mut self, id: ActorId) {
        self.push_control(id, Control::Stop);
    }

    /// True while the actor has not stopped.
    pub fn is_alive(&self, id: ActorId) -> bool {
        self.nodes.contains_key(&id)
    }

    /// How many times the actor was restarted.
    pub fn restarts(&self, id: ActorId) -> u32 {
        self.nodes.get(&id).map_or(0, |n| n.restart_count)
    }

    /// The actor's name, while it lives.
    pub fn name(&self, id: ActorId) -> Option<&str> {
        self.nodes.get(&id).map(|n| n.name.as_str())
    }

    /// The actor's children, in the order they were started.
    pub fn children(&self, id: ActorId) -> Vec<ActorId> {
        if id == ROOT {
            return self.root_children.clone();
        }
        self.nodes
            .get(&id)
            .map(|n| n.children.clone())
            .unwrap_or_default()
    }

    /// True while the actor is muted by a saturated suspend mailbox.
    pub fn is_muted(&self, id: ActorId) -> bool {
        self.nodes
            .get(&id)
            .is_some_and(|n| !n.waiting_on.is_empty())
    }

    /// Messages that reached no actor, system-wide.
    pub fn dead_letters(&self) -> u64 {
        self.shared.dead_letters()
    }

    /// Turns run so far.
    pub fn turns(&self) -> u64 {
        self.turns
    }

    /// Live actors.
    pub fn actor_count(&self) -> usize {
        self.nodes.len()
    }

    /// The deadline of the next pending timer, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse(t)| t.deadline)
    }

    /// Flushes the trace sink.
    pub fn flush_trace(&self) {
        self.shared.tracer.flush();
    }

    /// Runs one unit of work of one runnable actor (chosen by the seed).
    /// Returns false when nothing is runnable.
    pub fn step(&mut self) -> bool {
        self.collect_woken();
        if self.ready.is_empty() {
            return false;
        }
        let i = self.rng.usize(..self.ready.len());
        let id = self.ready.swap_remove(i);
        let Some(node) = self.nodes.get_mut(&id) else {
            return true;
        };
        node.in_ready = false;
        self.turns += 1;
        self.run_unit(id);
        self.reconsider(id);
        true
    }

    /// Steps until nothing is runnable. Does not move time.
    pub fn run_until_idle(&mut self) -> Result<u64, StepLimit> {
        let mut steps = 0;
        while self.step() {
            steps += 1;
            if steps >= self.step_limit {
                return Err(StepLimit {
                    steps,
                    limit: self.step_limit,
                    at: self.now(),
                });
            }
        }
        Ok(steps)
    }

    /// Moves virtual time forward by `by`, firing each due timer at its
    /// deadline and running to idleness after each instant.
    pub fn advance(&mut self, by: Duration) -> Result<u64, StepLimit> {
        let target = self.now() + by;
        self.advance_to(target)
    }

    /// Moves virtual time forward to `target` (see [`DetSystem::advance`]).
    pub fn advance_to(&mut self, target: Instant) -> Result<u64, StepLimit> {
        let mut steps = self.run_until_idle()?;
        while let Some(Reverse(next)) = self.timers.peek() {
            if next.deadline > target {
                break;
            }
            let deadline = next.deadline;
            self.shared.clock.advance_to(deadline);
            while let Some(Reverse(t)) = self.timers.peek() {
                if t.deadline != deadline {
                    break;
                }
                let Reverse(t) = self.timers.pop().expect("peeked");
                self.fire(t);
            }
            steps += self.run_until_idle()?;
        }
        self.shared.clock.advance_to(target);
        Ok(steps)
    }

    // ----- scheduling -------------------------------------------------

    fn collect_woken(&mut self) {
        self.shared.take_woken(&mut self.woken);
        let woken = std::mem::take(&mut self.woken);
        for &id in &woken {
            self.reconsider(id);
        }
        self.woken = woken;
        self.woken.clear();
    }

    /// Puts the actor in the ready list if it may run now and has work.
    fn reconsider(&mut self, id: ActorId) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.in_ready || node.failed {
            return;
        }
        let parked = !node.waiting_on.is_empty() || node.busy_until.is_some();
        let runnable = if parked {
            node.cell.has_control()
        } else {
            node.cell.has_work(false) || !node.cell.try_idle()
        };
        if runnable {
            node.in_ready = true;
            self.ready.push(id);
        }
    }

    fn run_unit(&mut self, id: ActorId) {
        let node = self.nodes.get_mut(&id).expect("caller checked");
        if node.failed {
            return;
        }
        if let Some(control) = node.cell.pop_control() {
            return self.handle_control(id, control);
        }
        if !node.waiting_on.is_empty() || node.busy_until.is_some() {
            return;
        }
        let mut fx = Effects::default();
        let outcome = node.cell.turn(&mut fx);
        if outcome != TurnOutcome::Idle {
            self.apply(id, fx);
        }
    }

    fn handle_control(&mut self, id: ActorId, control: Control) {
        match control {
            Control::Start => {
                let mut fx = Effects::default();
                let node = self.nodes.get_mut(&id).expect("caller checked");
                let _ = node.cell.start(&mut fx);
                self.apply(id, fx);
            }
            Control::Stop => self.stop_actor(id, ExitReason::Stopped),
            Control::ChildFailed { child, error } => self.supervise(Some(id), child, error),
        }
    }

    fn push_control(&mut self, id: ActorId, c: Control) {
        if let Some(node) = self.nodes.get(&id) {
            node.cell.push_control(c);
            self.reconsider(id);
        }
    }

    fn trace(&self, kind: impl FnOnce() -> EventKind) {
        self.shared.tracer.emit(self.now(), kind);
    }

    fn register(&mut self, parent: Option<ActorId>, s: Spawned) {
        let Spawned {
            id,
            name,
            policy,
            mut cell,
            supervision,
        } = s;
        let parent_alive = parent.is_none_or(|p| self.nodes.contains_key(&p));
        if !parent_alive {
            // Spawned by a turn of an actor that stopped in the same turn.
            let mut fx = Effects::default();
            let _ = cell.stop(&mut fx);
            return;
        }
        self.trace(|| EventKind::Spawn {
            actor: id,
            name: name.clone(),
            parent: Some(parent.unwrap_or(ROOT)),
            policy,
        });
        match parent {
            Some(p) => self.nodes.get_mut(&p).expect("checked").children.push(id),
            None => self.root_children.push(id),
        }
        cell.push_control(Control::Start);
        self.nodes.insert(
            id,
            Node {
                cell,
                name,
                parent,
                children: Vec::new(),
                supervision,
                restarts: RestartLog::default(),
                waiting_on: Vec::new(),
                busy_until: None,
                failed: false,
                in_ready: false,
                restart_count: 0,
            },
        );
        self.reconsider(id);
    }

    fn add_timer(&mut self, actor: ActorId, key: TimerKey, deadline: Instant) {
        self.timer_seq += 1;
        self.timers.push(Reverse(TimerEntry {
            deadline,
            seq: self.timer_seq,
            actor,
            key,
        }));
    }

    fn fire(&mut self, t: TimerEntry) {
        let Some(node) = self.nodes.get_mut(&t.actor) else {
            return;
        };
        match t.key {
            TimerKey::User(timer) => {
                if node.cell.timer_live(timer) {
                    self.trace(|| EventKind::TimerFire {
                        actor: t.actor,
                        timer: timer.0,
                    });
                    let node = self.nodes.get(&t.actor).expect("checked");
                    node.cell.push_signal(Signal::Timer(timer));
                }
            }
            TimerKey::Ask(request) => {
                if node.cell.ask_pending(request) {
                    node.cell.push_signal(Signal::AskTimeout(request));
                }
            }
            TimerKey::WakeUp => {
                if node.busy_until == Some(t.deadline) {
                    node.busy_until = None;
                }
            }
        }
        self.reconsider(t.actor);
    }

    /// Applies a turn's effects, in a fixed order: children first, then
    /// timers, watches, muting, busy time, stops; self-stop or failure last.
    fn apply(&mut self, id: ActorId, fx: Effects) {
        let Effects {
            spawned,
            stops,
            stop_self,
            timers_set,
            timers_cancelled,
            watch,
            unwatch,
            muted_by,
            unmuted,
            busy_for,
            failed,
            ..
        } = fx;
        for s in spawned {
            self.register(Some(id), s);
        }
        for (key, deadline) in timers_set {
            if let TimerKey::User(timer) = key {
                self.trace(|| EventKind::TimerSet {
                    actor: id,
                    timer: timer.0,
                    deadline_ns: deadline.as_nanos(),
                });
            }
            self.add_timer(id, key, deadline);
        }
        for timer in timers_cancelled {
            self.trace(|| EventKind::TimerCancel {
                actor: id,
                timer: timer.0,
            });
        }
        for target in watch {
            if self.nodes.contains_key(&target) {
                let list = self.watchers.entry(target).or_default();
                if !list.contains(&id) {
                    list.push(id);
                }
            } else if let Some(node) = self.nodes.get(&id) {
                node.cell.push_signal(Signal::Terminated {
                    actor: target,
                    reason: ExitReason::Stopped,
                });
            }
        }
        for target in unwatch {
            if let Some(list) = self.watchers.get_mut(&target) {
                list.retain(|w| *w != id);
            }
        }
        for by in muted_by {
            self.mute(id, by);
        }
        self.release(id, unmuted);
        if let Some(cost) = busy_for {
            let until = self.now() + cost;
            if let Some(node) = self.nodes.get_mut(&id) {
                node.busy_until = Some(until);
                self.add_timer(id, TimerKey::WakeUp, until);
            }
        }
        for target in stops {
            self.push_control(target, Control::Stop);
        }
        if let Some(error) = failed {
            self.fail_actor(id, error);
        } else if stop_self {
            self.stop_actor(id, ExitReason::Stopped);
        }
    }

    /// `sender` overfilled `receiver`'s suspend mailbox: mute it, unless
    /// that would close a cycle in the wait-for graph.
    ///
    /// The rule that keeps muting deadlock-free: an edge sender -> receiver
    /// ("sender waits for receiver to drain") is only added when the receiver
    /// does not already wait, directly or through others, for the sender. The
    /// graph therefore stays acyclic; a receiver with muted senders holds at
    /// least one message; so some actor at the end of every wait chain is
    /// runnable. A sender exempted this way keeps running: in a saturated
    /// cycle the cycle itself is the bottleneck, and messages circulate at
    /// the speed it processes them.
    fn mute(&mut self, sender: ActorId, receiver: ActorId) {
        if self.waits_for(receiver, sender) {
            if let Some(r) = self.nodes.get(&receiver) {
                r.cell.forget_muted(sender);
            }
            return;
        }
        if let Some(node) = self.nodes.get_mut(&sender) {
            node.waiting_on.push(receiver);
            self.trace(|| EventKind::Mute {
                actor: sender,
                by: receiver,
            });
        }
    }

    /// True if `from` is `to` or waits (transitively) for `to`.
    fn waits_for(&self, from: ActorId, to: ActorId) -> bool {
        let mut stack = vec![from];
        let mut seen = Vec::new();
        while let Some(a) = stack.pop() {
            if a == to {
                return true;
            }
            if seen.contains(&a) {
                continue;
            }
            seen.push(a);
            if let Some(n) = self.nodes.get(&a) {
                stack.extend(n.waiting_on.iter().copied());
            }
        }
        false
    }

    /// `receiver` drained below its low watermark (or stopped): release the
    /// senders it muted.
    fn release(&mut self, receiver: ActorId, senders: Vec<ActorId>) {
        for s in senders {
            if let Some(node) = self.nodes.get_mut(&s) {
                node.waiting_on.retain(|r| *r != receiver);
                if node.waiting_on.is_empty() {
                    self.trace(|| EventKind::Unmute { actor: s });
                    self.reconsider(s);
                }
            }
        }
    }

    // ----- supervision ------------------------------------------------

    fn fail_actor(&mut self, id: ActorId, error: String) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        node.failed = true;
        node.cell.fail();
        let parent = node.parent;
        self.trace(|| EventKind::Fail {
            actor: id,
            error: error.clone(),
        });
        match parent {
            Some(p) => self.push_control(p, Control::ChildFailed { child: id, error }),
            None => self.supervise(None, id, error),
        }
    }

    /// The supervisor `sup` (None: the root) decides about `child`'s failure.
    fn supervise(&mut self, sup: Option<ActorId>, child: ActorId, error: String) {
        if !self.nodes.get(&child).is_some_and(|n| n.failed) {
            return; // stopped or restarted meanwhile
        }
        let supervision = match sup {
            Some(s) => match self.nodes.get(&s) {
                Some(n) => n.supervision.clone(),
                None => return,
            },
            None => self.root.clone(),
        };
        let failure = Failure {
            actor: child,
            message: error.clone(),
        };
        match supervision.decide(&failure) {
            Directive::Stop => self.stop_actor(child, ExitReason::Failed(error)),
            Directive::Escalate => self.escalate(sup, child, error),
            Directive::Restart => {
                let now = self.now();
                let log = match sup {
                    Some(s) => &mut self.nodes.get_mut(&s).expect("checked").restarts,
                    None => &mut self.root_restarts,
                };
                let Some(in_period) = log.try_restart(&supervision, now) else {
                    return self.escalate(sup, child, error);
                };
                let siblings = match sup {
                    Some(s) => self.nodes[&s].children.clone(),
                    None => self.root_children.clone(),
                };
                let targets: Vec<ActorId> = match supervision.strategy() {
                    Strategy::OneForOne => vec![child],
                    Strategy::OneForAll => siblings,
                    Strategy::RestForOne => {
                        let at = siblings.iter().position(|c| *c == child).unwrap_or(0);
                        siblings[at..].to_vec()
                    }
                };
                for t in targets {
                    self.restart_actor(t, in_period);
                }
            }
        }
    }

    fn escalate(&mut self, sup: Option<ActorId>, child: ActorId, error: String) {
        self.trace(|| EventKind::Escalate {
            actor: sup.unwrap_or(ROOT),
            child,
        });
        match sup {
            Some(s) => self.fail_actor(
                s,
                format!("child {child} failed and could not be restarted: {error}"),
            ),
            // The root cannot escalate: the child stops.
            None => self.stop_actor(child, ExitReason::Failed(error)),
        }
    }

    fn restart_actor(&mut self, id: ActorId, restarts_in_period: u32) {
        let children = self.children(id);
        for c in children.into_iter().rev() {
            self.stop_actor(c, ExitReason::Stopped);
        }
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        let mut fx = Effects::default();
        node.cell.reset(&mut fx);
        node.failed = false;
        node.restart_count += 1;
        node.busy_until = None;
        node.cell.push_control(Control::Start);
        self.trace(|| EventKind::Restart {
            actor: id,
            restarts_in_period,
        });
        // Effects of a replaced sibling's `stopped` hook (sends are already
        // out); a stop or failure there changes nothing: it is being replaced.
        let Effects { spawned, .. } = fx;
        for s in spawned {
            self.register(Some(id), s);
        }
        self.reconsider(id);
    }

    /// Stops `id` and its subtree, children first.
    fn stop_actor(&mut self, id: ActorId, reason: ExitReason) {
        let children = self.children(id);
        for c in children.into_iter().rev() {
            self.stop_actor(c, ExitReason::Stopped);
        }
        let Some(mut node) = self.nodes.remove(&id) else {
            return;
        };
        let mut fx = Effects::default();
        let unmuted = node.cell.stop(&mut fx);
        self.release(id, unmuted);
        match node.parent {
            Some(p) => {
                if let Some(pn) = self.nodes.get_mut(&p) {
                    pn.children.retain(|c| *c != id);
                }
            }
            None => self.root_children.retain(|c| *c != id),
        }
        self.trace(|| EventKind::Stop {
            actor: id,
            reason: reason.to_string(),
        });
        for w in self.watchers.remove(&id).unwrap_or_default() {
            if let Some(wn) = self.nodes.get(&w) {
                wn.cell.push_signal(Signal::Terminated {
                    actor: id,
                    reason: reason.clone(),
                });
                self.reconsider(w);
            }
        }
        // Children spawned by the `stopped` hook have no parent to run under.
        for s in fx.spawned {
            let mut cell = s.cell;
            let _ = cell.stop(&mut Effects::default());
        }
    }
}

impl Drop for DetSystem {
    fn drop(&mut self) {
        self.shared.tracer.flush();
    }
}
