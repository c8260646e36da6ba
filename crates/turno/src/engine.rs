//! The engine: what every scheduler shares.
//!
//! A scheduler decides *which* actor runs next and *when* timers fire; the
//! engine decides everything else, identically for both schedulers:
//!
//! - running a batch of turns of one actor ([`Engine::run_slot`]) and
//!   applying their [`Effects`];
//! - the supervision tree: spawning, failing, restarting, stopping (children
//!   first), escalating, watching;
//! - the wait-for graph of muted senders, kept acyclic so muting cannot
//!   deadlock;
//! - parking and unparking actors that may not run (muted, failed, busy,
//!   stopping) without losing a wake-up.
//!
//! Every cross-actor operation is a control message to the target actor,
//! handled by whoever runs that actor; so an actor's cell is only ever touched
//! by its own runner, and the engine never holds the tree lock while taking a
//! cell's lock.
//!
//! ## Scheduling states
//!
//! An actor is *idle* (mailbox `notified` flag clear: the next push wakes
//! it), *scheduled or running* (flag set, the slot is in a run queue or being
//! run), or *parked* (flag set, `PARKED` set in the slot's state word: it has
//! mail it may not handle yet because it is muted, failed, stopping or busy).
//! The runner that finishes a batch requeues the slot, parks it, or idles it.
//! Parking and every unblocking (the last unmute, the end of a busy period)
//! are read-modify-writes of the one state word, so exactly one side
//! requeues; a control message unparks unconditionally, and the parking
//! runner looks for control messages again after parking. `tests/sched_loom.rs`
//! checks this protocol with loom.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::addr::ActorId;
use crate::cell::{AnyCell, Step, TurnOutcome};
use crate::context::{Effects, Spawned, TimerKey};
use crate::mailbox::{Control, MailboxOps, Signal, Wake};
use crate::shared::SystemShared;
use crate::supervision::{Directive, ExitReason, Failure, RestartLog, Strategy, Supervision};
use crate::sync::{AtomicU64, Mutex};
use crate::time::Instant;
use crate::trace::EventKind;

pub(crate) use crate::ids::ROOT;

/// What a scheduler provides to the engine.
pub(crate) trait Scheduler: Send + Sync + 'static {
    /// The slot may have work: put it in a run queue. Called at most once
    /// per idle-to-scheduled transition.
    fn schedule(&self, slot: Arc<Slot>);
    /// Deliver `key` to `actor` at `deadline`.
    fn add_timer(&self, actor: ActorId, key: TimerKey, deadline: Instant);
    /// Whether `Context::simulate_work` makes the actor busy (virtual time).
    fn simulates_work(&self) -> bool;
}

/// One actor as a scheduler holds it.
pub(crate) struct Slot {
    pub(crate) id: ActorId,
    /// The cell; `None` once the actor has stopped. Only its runner locks it.
    pub(crate) cell: Mutex<Option<Box<dyn AnyCell>>>,
    /// The scheduling state word: `PARKED`, the blocking flags and the mute
    /// count, changed only by read-modify-writes of this one word (see
    /// [`Slot::try_park`]).
    state: AtomicU64,
    /// End of a simulated busy period, in nanoseconds (with `BUSY` set).
    busy_until: AtomicU64,
    /// The mailbox, reachable without the cell's lock.
    mailbox: Arc<dyn MailboxOps>,
    me: Weak<Slot>,
    sched: Arc<dyn Scheduler>,
}

/// Parked: the slot has work it may not do yet and is in no run queue.
const PARKED: u64 = 1 << 63;
/// Its turn panicked; only control messages (restart, stop) run.
const FAILED: u64 = 1 << 62;
/// Waiting for its children to stop; only control messages run.
const STOPPING: u64 = 1 << 61;
/// Simulated work in progress (deterministic scheduler).
const BUSY: u64 = 1 << 60;
/// How many mailboxes mute this actor (its out-degree in the wait-for graph).
const MUTES: u64 = (1 << 32) - 1;
/// Anything that keeps the actor from handling mail and signals.
const BLOCKING: u64 = FAILED | STOPPING | BUSY | MUTES;

impl Slot {
    /// May the actor handle user mail and signals now?
    fn blocked(&self) -> bool {
        self.state.load(Ordering::SeqCst) & BLOCKING != 0
    }

    pub(crate) fn is_muted(&self) -> bool {
        self.state.load(Ordering::SeqCst) & MUTES != 0
    }

    fn is_failed(&self) -> bool {
        self.state.load(Ordering::SeqCst) & FAILED != 0
    }

    /// Sets blocking flags (only the actor's own runner does this).
    fn block(&self, flags: u64) {
        self.state.fetch_or(flags, Ordering::SeqCst);
    }

    /// Clears blocking flags, or removes one mute (`unmute`); if that leaves
    /// a parked slot unblocked, unparks it in the same step and requeues it.
    ///
    /// Parking ([`Slot::try_park`]) and unblocking are read-modify-writes of
    /// one word, so they are totally ordered: either the unblocking sees
    /// `PARKED` and requeues, or the parking sees no blocking flag and does
    /// not park. No wake-up is lost, even under acquire/release reasoning
    /// (which is what loom checks).
    fn unblock(&self, flags: u64, unmute: bool) {
        let mut requeue = false;
        let _ = self
            .state
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                let mut n = s & !flags;
                if unmute && n & MUTES != 0 {
                    n -= 1;
                }
                requeue = n & PARKED != 0 && n & BLOCKING == 0;
                if requeue {
                    n &= !PARKED;
                }
                Some(n)
            });
        if requeue {
            self.requeue();
        }
    }

    /// Parks the slot if it is blocked; false (not parked) if it is not.
    fn try_park(&self) -> bool {
        self.state
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                (s & BLOCKING != 0).then_some(s | PARKED)
            })
            .is_ok()
    }

    /// Requeues a parked slot whatever blocks it (a control message must
    /// run); no-op if it was not parked.
    pub(crate) fn unpark(&self) {
        if self.state.fetch_and(!PARKED, Ordering::SeqCst) & PARKED != 0 {
            self.requeue();
        }
    }

    fn requeue(&self) {
        if let Some(me) = self.me.upgrade() {
            self.sched.schedule(me);
        }
    }

    /// Ends a simulated busy period that ends at `deadline`.
    pub(crate) fn end_busy(&self, deadline: Instant) {
        if self
            .busy_until
            .compare_exchange(deadline.as_nanos(), 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.unblock(BUSY, false);
        }
    }
}

impl Wake for Slot {
    fn wake(&self) {
        if let Some(me) = self.me.upgrade() {
            self.sched.schedule(me);
        }
    }
}

/// What happens once a stopping actor's children have all stopped.
#[derive(Clone, Debug)]
enum Then {
    Finalize(ExitReason),
    Restart(u32),
}

struct Node {
    slot: Arc<Slot>,
    name: Arc<str>,
    parent: Option<ActorId>,
    /// Ids grow with spawn order, so this is also start order (restarts keep
    /// the id and the position), as rest-for-one needs.
    children: BTreeSet<ActorId>,
    supervision: Supervision,
    restarts: RestartLog,
    /// Receivers whose mailboxes mute this actor.
    waiting_on: Vec<ActorId>,
    /// Set while waiting for children to stop.
    then: Option<Then>,
    restart_count: u32,
}

#[derive(Default)]
struct Tree {
    nodes: HashMap<ActorId, Node>,
    root_children: BTreeSet<ActorId>,
    root_restarts: RestartLog,
    watchers: HashMap<ActorId, Vec<ActorId>>,
}

impl Tree {
    fn children(&self, id: ActorId) -> Vec<ActorId> {
        if id == ROOT {
            return self.root_children.iter().copied().collect();
        }
        self.nodes
            .get(&id)
            .map(|n| n.children.iter().copied().collect())
            .unwrap_or_default()
    }

    /// True if `from` is `to` or waits, directly or transitively, for `to`.
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
}

/// Whether the actor just run still exists.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Finalized,
}

/// See the [module docs](self).
pub(crate) struct Engine {
    pub(crate) shared: Arc<SystemShared>,
    sched: Arc<dyn Scheduler>,
    tree: Mutex<Tree>,
    root: Supervision,
    /// See [`Engine::injected_stale_release`].
    #[cfg(turno_loom)]
    pub(crate) stale_release_bug: std::sync::atomic::AtomicBool,
}

impl Engine {
    pub(crate) fn new(
        shared: Arc<SystemShared>,
        sched: Arc<dyn Scheduler>,
        root: Supervision,
    ) -> Self {
        Engine {
            shared,
            sched,
            tree: Mutex::new(Tree::default()),
            root,
            #[cfg(turno_loom)]
            stale_release_bug: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn trace(&self, kind: impl FnOnce() -> EventKind) {
        self.shared.tracer.emit(&self.shared.clock, kind);
    }

    // ----- queries ------------------------------------------------------

    pub(crate) fn is_alive(&self, id: ActorId) -> bool {
        self.tree.lock().nodes.contains_key(&id)
    }

    pub(crate) fn restarts(&self, id: ActorId) -> u32 {
        self.tree
            .lock()
            .nodes
            .get(&id)
            .map_or(0, |n| n.restart_count)
    }

    pub(crate) fn name(&self, id: ActorId) -> Option<String> {
        self.tree.lock().nodes.get(&id).map(|n| n.name.to_string())
    }

    pub(crate) fn children(&self, id: ActorId) -> Vec<ActorId> {
        self.tree.lock().children(id)
    }

    pub(crate) fn is_muted(&self, id: ActorId) -> bool {
        self.slot(id).is_some_and(|s| s.is_muted())
    }

    pub(crate) fn actor_count(&self) -> usize {
        self.tree.lock().nodes.len()
    }

    /// True while `receiver`'s mailbox lists `sender` as muted by it.
    #[cfg(turno_loom)]
    pub(crate) fn is_listed(&self, receiver: ActorId, sender: ActorId) -> bool {
        self.slot(receiver)
            .is_some_and(|r| r.mailbox.is_muting(sender))
    }

    pub(crate) fn slot(&self, id: ActorId) -> Option<Arc<Slot>> {
        self.tree.lock().nodes.get(&id).map(|n| n.slot.clone())
    }

    // ----- spawning and control -----------------------------------------

    /// Creates and registers a top-level actor (supervised by the root).
    pub(crate) fn spawn_top<A: crate::Actor>(
        &self,
        props: crate::Props,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Result<crate::Addr<A::Msg>, crate::SpawnError> {
        let (spawned, addr) =
            crate::cell::Cell::<A>::create(self.shared.clone(), props, Box::new(factory))?;
        self.register(None, spawned);
        Ok(addr)
    }

    /// Registers a spawned actor under `parent` (None: the root) and queues
    /// its start.
    pub(crate) fn register(&self, parent: Option<ActorId>, s: Spawned) {
        let Spawned {
            id,
            name,
            policy,
            cell,
            supervision,
        } = s;
        let slot = Arc::new_cyclic(|me| Slot {
            id,
            cell: Mutex::new(None),
            mailbox: cell.mailbox_ops(),
            state: AtomicU64::new(0),
            busy_until: AtomicU64::new(0),
            me: me.clone(),
            sched: self.sched.clone(),
        });
        {
            let mut tree = self.tree.lock();
            let parent_alive = parent.is_none_or(|p| tree.nodes.contains_key(&p));
            if !parent_alive {
                drop(tree);
                // Spawned by an actor that stopped in the same turn.
                let mut cell = cell;
                let _ = cell.stop(&mut Effects::default());
                return;
            }
            match parent {
                Some(p) => tree.nodes.get_mut(&p).expect("checked").children.insert(id),
                None => tree.root_children.insert(id),
            };
            tree.nodes.insert(
                id,
                Node {
                    slot: slot.clone(),
                    name: name.clone(),
                    parent,
                    children: BTreeSet::new(),
                    supervision,
                    restarts: RestartLog::default(),
                    waiting_on: Vec::new(),
                    then: None,
                    restart_count: 0,
                },
            );
        }
        self.trace(|| EventKind::Spawn {
            actor: id,
            name: name.to_string(),
            parent: Some(parent.unwrap_or(ROOT)),
            policy: policy.to_string(),
        });
        slot.mailbox.set_waker(slot.clone());
        // The cell is in place before the first wake-up can reach a runner.
        *slot.cell.lock() = Some(cell);
        slot.mailbox.push_control(Control::Start);
    }

    /// Sends a control message to `id` and makes sure it will be handled
    /// even if the actor is parked.
    pub(crate) fn push_control(&self, id: ActorId, c: Control) {
        if let Some(slot) = self.slot(id) {
            Self::control_to(&slot, c);
        }
    }

    /// Never takes the target's cell lock (its runner may hold it), only its
    /// mailbox lock.
    fn control_to(slot: &Slot, c: Control) {
        if slot.mailbox.push_control(c) {
            slot.unpark();
        }
    }

    pub(crate) fn push_signal(&self, id: ActorId, s: Signal) {
        if let Some(slot) = self.slot(id) {
            slot.mailbox.push_signal(s);
        }
    }

    // ----- running ------------------------------------------------------

    /// Runs up to `batch` units of work of one actor (control messages
    /// first), then requeues, parks or idles it. Returns the turns run.
    pub(crate) fn run_slot(&self, slot: &Arc<Slot>, batch: usize) -> usize {
        let mut guard = slot.cell.lock();
        let Some(cell) = guard.as_mut() else {
            return 0;
        };
        let mut ran = 0;
        let mut flow = Flow::Continue;
        let mut idle = false;
        // One effects record for the whole batch: a turn that only sends
        // leaves it empty and skips `apply` altogether.
        let mut fx = Effects::default();
        while ran < batch.max(1) && flow == Flow::Continue {
            let blocked = slot.blocked();
            match cell.step(blocked, &mut fx) {
                Step::Control(c) => {
                    ran += 1;
                    flow = self.control(slot, cell.as_mut(), c);
                }
                // Marked idle: the next push will wake the actor.
                Step::Idle => {
                    idle = true;
                    break;
                }
                // Park it below.
                Step::Blocked => break,
                Step::Ran(TurnOutcome::Discarded) => {
                    ran += 1;
                    self.release_from(slot, std::mem::take(&mut fx.unmuted));
                }
                Step::Ran(TurnOutcome::Handled | TurnOutcome::Failed) => {
                    ran += 1;
                    if !fx.is_empty() {
                        flow = self.apply(slot, cell.as_mut(), std::mem::take(&mut fx));
                    }
                }
            }
        }
        if flow == Flow::Finalized {
            // Dropping the cell drops its address, breaking the
            // mailbox -> slot -> cell -> mailbox cycle.
            *guard = None;
            return ran;
        }
        if !idle {
            self.finish(slot, cell.as_ref());
        }
        ran
    }

    /// After a batch: requeue, park or idle, without losing a wake-up.
    fn finish(&self, slot: &Arc<Slot>, cell: &dyn AnyCell) {
        if cell.has_control() || (!slot.blocked() && cell.has_work()) {
            self.sched.schedule(slot.clone());
            return;
        }
        if slot.try_park() {
            // A control message pushed before `PARKED` was set found nothing
            // to unpark: look again now that it is set. (Its push and this
            // look are ordered by the mailbox lock.)
            if cell.has_control() {
                slot.unpark();
            }
            return;
        }
        // Not blocked (only this runner can block it again): idle, unless
        // work raced in.
        if !cell.try_idle() {
            self.sched.schedule(slot.clone());
        }
    }

    fn control(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, c: Control) -> Flow {
        match c {
            Control::Start => {
                let mut fx = Effects::default();
                let _ = cell.start(&mut fx);
                self.apply(slot, cell, fx)
            }
            Control::Stop(reason) => self.begin_stop(slot, cell, Then::Finalize(reason)),
            Control::Restart(in_period) => self.begin_stop(slot, cell, Then::Restart(in_period)),
            Control::ChildFailed { child, error } => {
                self.supervise(Some((slot, cell)), child, error)
            }
            Control::ChildTerminated(child) => {
                let then = {
                    let mut tree = self.tree.lock();
                    let Some(node) = tree.nodes.get_mut(&slot.id) else {
                        return Flow::Continue;
                    };
                    node.children.remove(&child);
                    if node.children.is_empty() {
                        node.then.take()
                    } else {
                        None
                    }
                };
                match then {
                    Some(then) => self.complete_stop(slot, cell, then),
                    None => Flow::Continue,
                }
            }
        }
    }

    /// Stops the children first; then finalizes or restarts.
    fn begin_stop(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, then: Then) -> Flow {
        let children = {
            let mut tree = self.tree.lock();
            let Some(node) = tree.nodes.get_mut(&slot.id) else {
                return Flow::Continue;
            };
            if node.then.is_some() {
                // Already stopping: a stop overrides a restart, never the reverse.
                if matches!(then, Then::Finalize(_)) {
                    node.then = Some(then);
                }
                return Flow::Continue;
            }
            if node.children.is_empty() {
                None
            } else {
                node.then = Some(then.clone());
                Some(node.children.iter().copied().collect::<Vec<_>>())
            }
        };
        match children {
            None => self.complete_stop(slot, cell, then),
            Some(children) => {
                slot.block(STOPPING);
                for c in children.into_iter().rev() {
                    self.push_control(c, Control::Stop(ExitReason::Stopped));
                }
                Flow::Continue
            }
        }
    }

    fn complete_stop(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, then: Then) -> Flow {
        // Its own runner: nothing to unpark.
        slot.state.fetch_and(!STOPPING, Ordering::SeqCst);
        match then {
            Then::Finalize(reason) => self.finalize(slot, cell, reason),
            Then::Restart(in_period) => {
                self.restart_now(slot, cell, in_period);
                Flow::Continue
            }
        }
    }

    fn restart_now(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, restarts_in_period: u32) {
        let mut fx = Effects::default();
        cell.reset(&mut fx);
        slot.state.fetch_and(!(FAILED | BUSY), Ordering::SeqCst);
        slot.busy_until.store(0, Ordering::SeqCst);
        if let Some(node) = self.tree.lock().nodes.get_mut(&slot.id) {
            node.restart_count += 1;
        }
        self.trace(|| EventKind::Restart {
            actor: slot.id,
            restarts_in_period,
        });
        // Children spawned by a replaced instance's `stopped` hook.
        for s in fx.spawned {
            self.register(Some(slot.id), s);
        }
        Self::control_to(slot, Control::Start);
    }

    /// The actor stops for good: hook, mailbox closed, watchers and parent told.
    fn finalize(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, reason: ExitReason) -> Flow {
        let id = slot.id;
        let mut fx = Effects::default();
        let unmuted = cell.stop(&mut fx);
        let (parent, watchers) = {
            let mut tree = self.tree.lock();
            let node = tree.nodes.remove(&id);
            let parent = node.as_ref().and_then(|n| n.parent);
            if parent.is_none() {
                tree.root_children.remove(&id);
            }
            (parent, tree.watchers.remove(&id).unwrap_or_default())
        };
        self.release_from(slot, unmuted);
        self.trace(|| EventKind::Stop {
            actor: id,
            reason: reason.to_string(),
        });
        for w in watchers {
            self.push_signal(
                w,
                Signal::Terminated {
                    actor: id,
                    reason: reason.clone(),
                },
            );
        }
        if let Some(p) = parent {
            self.push_control(p, Control::ChildTerminated(id));
        }
        // Children spawned by the `stopped` hook have no parent to run under.
        for s in fx.spawned {
            let mut orphan = s.cell;
            let _ = orphan.stop(&mut Effects::default());
        }
        Flow::Finalized
    }

    // ----- effects --------------------------------------------------------

    /// Applies a turn's effects in a fixed order: children, timers, watches,
    /// muting, busy time, stops, self-stop. A failed turn's effects are
    /// dropped (see below).
    fn apply(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, fx: Effects) -> Flow {
        let id = slot.id;
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
        if let Some(error) = failed {
            // A turn that panicked has no effects but its sends (they are
            // out already) and the takes it made: children it spawned never
            // start (their mail becomes dead letters), its timers, watches,
            // stops and busy time are dropped, and the senders its take
            // released are released.
            for s in spawned {
                let mut orphan = s.cell;
                let _ = orphan.stop(&mut Effects::default());
            }
            self.release_from(slot, unmuted);
            return self.fail(slot, cell, error);
        }
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
            self.sched.add_timer(id, key, deadline);
        }
        for timer in timers_cancelled {
            self.trace(|| EventKind::TimerCancel {
                actor: id,
                timer: timer.0,
            });
        }
        if !watch.is_empty() || !unwatch.is_empty() {
            let mut tree = self.tree.lock();
            for target in watch {
                if tree.nodes.contains_key(&target) {
                    let list = tree.watchers.entry(target).or_default();
                    if !list.contains(&id) {
                        list.push(id);
                    }
                } else {
                    cell.push_signal(Signal::Terminated {
                        actor: target,
                        reason: ExitReason::Stopped,
                    });
                }
            }
            for target in unwatch {
                if let Some(list) = tree.watchers.get_mut(&target) {
                    list.retain(|w| *w != id);
                }
            }
        }
        for by in muted_by {
            self.mute(slot, by);
        }
        self.release_from(slot, unmuted);
        if let Some(cost) = busy_for {
            if self.sched.simulates_work() && !cost.is_zero() {
                let until = self.shared.clock.now() + cost;
                slot.busy_until.store(until.as_nanos(), Ordering::SeqCst);
                slot.block(BUSY);
                self.sched.add_timer(id, TimerKey::WakeUp, until);
            }
        }
        for target in stops {
            if target == id {
                return self.begin_stop(slot, cell, Then::Finalize(ExitReason::Stopped));
            }
            self.push_control(target, Control::Stop(ExitReason::Stopped));
        }
        if stop_self {
            return self.begin_stop(slot, cell, Then::Finalize(ExitReason::Stopped));
        }
        Flow::Continue
    }

    /// `sender` overfilled `receiver`'s suspend mailbox: mute it, unless that
    /// would close a cycle in the wait-for graph.
    ///
    /// The rule that keeps muting deadlock-free: an edge sender -> receiver
    /// ("sender waits for receiver to drain") is only added when the receiver
    /// does not already wait, directly or through others, for the sender. The
    /// graph therefore stays acyclic; a receiver with muted senders holds at
    /// least one message; so some actor at the end of every wait chain is
    /// runnable. A sender exempted this way keeps running: in a saturated
    /// cycle the cycle itself is the bottleneck, and messages circulate at
    /// the speed it processes them.
    fn mute(&self, sender: &Arc<Slot>, receiver: ActorId) {
        let mut tree = self.tree.lock();
        let Some(rslot) = tree.nodes.get(&receiver).map(|n| n.slot.clone()) else {
            return; // stopped meanwhile: its close released everyone
        };
        if tree.waits_for(receiver, sender.id) {
            drop(tree);
            rslot.mailbox.forget_muted(sender.id);
            return;
        }
        if !rslot.mailbox.is_muting(sender.id) {
            return; // the receiver drained before we got here
        }
        if let Some(node) = tree.nodes.get_mut(&sender.id) {
            if node.waiting_on.contains(&receiver) {
                // One turn can be muted twice by the same receiver (it drained
                // and filled again between two sends): one edge, one count.
                return;
            }
            node.waiting_on.push(receiver);
            sender.state.fetch_add(1, Ordering::SeqCst); // one more mute
            drop(tree);
            self.trace(|| EventKind::Mute {
                actor: sender.id,
                by: receiver,
            });
        }
    }

    /// `receiver` drained below its low watermark (or stopped): release the
    /// senders it muted.
    ///
    /// `senders` is the muted list the receiver took when it drained. A
    /// sender may have been listed *again* since (its turn was still running:
    /// it refilled the mailbox and was re-listed, and its new mute may
    /// already be recorded as the one edge). Such a sender stays muted: the
    /// mailbox's list is the truth, checked under the tree lock, so "listed"
    /// and "has the edge" agree once both the mute and this release are
    /// applied. (Releasing it anyway left a sender unmuted but listed, never
    /// to be muted again: the unbounded growth of issue 8, caught by
    /// `tests/sched_loom.rs`.)
    fn release_from(&self, receiver: &Slot, senders: Vec<ActorId>) {
        if senders.is_empty() {
            return;
        }
        let mut freed = Vec::new();
        {
            let mut tree = self.tree.lock();
            for s in senders {
                if receiver.mailbox.is_muting(s) && !self.injected_stale_release() {
                    continue;
                }
                if let Some(node) = tree.nodes.get_mut(&s) {
                    let before = node.waiting_on.len();
                    node.waiting_on.retain(|r| *r != receiver.id);
                    if node.waiting_on.len() < before {
                        freed.push(node.slot.clone());
                    }
                }
            }
        }
        for s in freed {
            s.unblock(0, true);
            if !s.is_muted() {
                self.trace(|| EventKind::Unmute { actor: s.id });
            }
        }
    }

    /// The model checker's proof that it catches the old release protocol:
    /// `SharedRunner::with_stale_release_bug` turns the re-listing check off.
    #[cfg(turno_loom)]
    fn injected_stale_release(&self) -> bool {
        self.stale_release_bug
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    #[cfg(not(turno_loom))]
    #[inline]
    fn injected_stale_release(&self) -> bool {
        false
    }

    // ----- failure and supervision ----------------------------------------

    fn fail(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, error: String) -> Flow {
        slot.block(FAILED);
        cell.fail();
        self.trace(|| EventKind::Fail {
            actor: slot.id,
            error: error.clone(),
        });
        let parent = self.tree.lock().nodes.get(&slot.id).and_then(|n| n.parent);
        match parent {
            Some(p) => {
                self.push_control(
                    p,
                    Control::ChildFailed {
                        child: slot.id,
                        error,
                    },
                );
                Flow::Continue
            }
            None => self.supervise(None, slot.id, error),
        }
    }

    /// The supervisor (`None`: the root) decides about `child`'s failure.
    fn supervise(
        &self,
        sup: Option<(&Arc<Slot>, &mut dyn AnyCell)>,
        child: ActorId,
        error: String,
    ) -> Flow {
        let sup_id = sup.as_ref().map(|(s, _)| s.id);
        let decision = {
            let mut tree = self.tree.lock();
            let child_failed = tree
                .nodes
                .get(&child)
                .is_some_and(|n| n.slot.is_failed() && n.then.is_none());
            if !child_failed {
                return Flow::Continue; // stopped or restarted meanwhile
            }
            let supervision = match sup_id {
                Some(s) => match tree.nodes.get(&s) {
                    Some(n) => n.supervision.clone(),
                    None => return Flow::Continue,
                },
                None => self.root.clone(),
            };
            let failure = Failure {
                actor: child,
                message: error.clone(),
            };
            match supervision.decide(&failure) {
                Directive::Stop => Decision::Stop,
                Directive::Escalate => Decision::Escalate,
                Directive::Restart => {
                    let now = self.shared.clock.now();
                    let log = match sup_id {
                        Some(s) => &mut tree.nodes.get_mut(&s).expect("checked").restarts,
                        None => &mut tree.root_restarts,
                    };
                    match log.try_restart(&supervision, now) {
                        None => Decision::Escalate,
                        Some(in_period) => {
                            let siblings = tree.children(sup_id.unwrap_or(ROOT));
                            let targets = match supervision.strategy() {
                                Strategy::OneForOne => vec![child],
                                Strategy::OneForAll => siblings,
                                Strategy::RestForOne => {
                                    let at = siblings.iter().position(|c| *c == child).unwrap_or(0);
                                    siblings[at..].to_vec()
                                }
                            };
                            Decision::Restart(targets, in_period)
                        }
                    }
                }
            }
        };
        match decision {
            Decision::Stop => {
                self.push_control(child, Control::Stop(ExitReason::Failed(error)));
                Flow::Continue
            }
            Decision::Restart(targets, in_period) => {
                for t in targets {
                    self.push_control(t, Control::Restart(in_period));
                }
                Flow::Continue
            }
            Decision::Escalate => {
                self.trace(|| EventKind::Escalate {
                    actor: sup_id.unwrap_or(ROOT),
                    child,
                });
                match sup {
                    Some((slot, cell)) => self.fail(
                        slot,
                        cell,
                        format!("child {child} failed and could not be restarted: {error}"),
                    ),
                    // The root cannot escalate: the child stops.
                    None => {
                        self.push_control(child, Control::Stop(ExitReason::Failed(error)));
                        Flow::Continue
                    }
                }
            }
        }
    }
}

enum Decision {
    Stop,
    Escalate,
    Restart(Vec<ActorId>, u32),
}
