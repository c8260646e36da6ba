//! The engine: what every scheduler shares.
//!
//! A scheduler decides *which* actor runs next and *when* timers fire; the
//! engine decides everything else, identically for every scheduler:
//!
//! - running a batch of turns of one actor ([`Engine::run_slot`]) and
//!   applying their [`Effects`](crate::effects::Effects);
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
//! cell's claim.
//!
//! ## Scheduling states
//!
//! An actor is *idle* (its mailbox's run-state word clear: the next push
//! wakes it), *scheduled* (`NOTIFIED`: the slot is in a run queue),
//! *running* (`RUNNING`: a runner holds the cell; a push marks `NOTIFIED`
//! and the runner looks again before it lets go), or *parked* (`NOTIFIED`,
//! and `PARKED` set in the slot's state word: it has mail it may not handle
//! yet because it is muted, failed, stopping or busy); see
//! [`crate::run_state`]. The runner that finishes a batch requeues the
//! slot, parks it, or idles it, and releases the cell last (see [`End`]).
//! Parking and every unblocking (the last unmute, the end of a busy period)
//! are read-modify-writes of the one state word, so exactly one side
//! requeues; a control message unparks unconditionally, and the parking
//! runner looks for control messages again after parking. `tests/sched_loom.rs`
//! checks this protocol with loom.
//!
//! ## Where each part lives
//!
//! - `slot.rs`: the slot, one allocation per actor (its header, then the
//!   mailbox and the cell), and its scheduling state word (park, unpark,
//!   block, unblock): the protocol loom checks.
//! - `tree.rs`: the supervision tree: register, stop (children first),
//!   restart, finalize, fail and supervise. Which children a strategy
//!   restarts is [`Strategy::children_to_restart`](crate::Strategy::children_to_restart).
//! - `waits.rs`: the wait-for graph of muted senders (mute, release).
//! - `run.rs`: running a batch of one actor's turns and applying their
//!   effects.

mod run;
pub(crate) mod slot;
mod tree;
mod waits;

use std::sync::Arc;

use crate::ids::ActorId;
use crate::ids::ActorPath;
use crate::scheduler::Scheduler;
use crate::shared::SystemShared;
use crate::supervision::Supervision;
use crate::sync::Mutex;
use crate::system_lane::{Control, Signal};
use crate::timer::TimerEntry;
use crate::timer::TimerKey;
use crate::trace::ActorEvent;

pub(crate) use run::End;
use slot::Slot;
pub(crate) use tree::Registered;
use tree::Tree;

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
    /// See [`Engine::release_idle`].
    #[cfg(turno_loom)]
    pub(crate) run_release_bug: std::sync::atomic::AtomicBool,
}

impl Engine {
    pub(crate) fn new(
        shared: Arc<SystemShared>,
        sched: Arc<dyn Scheduler>,
        root: Supervision,
    ) -> Self {
        assert!(
            shared.sched.set(sched.clone()).is_ok(),
            "one engine per system's shared state"
        );
        Engine {
            shared,
            sched,
            tree: Mutex::new(Tree::default()),
            root,
            #[cfg(turno_loom)]
            stale_release_bug: std::sync::atomic::AtomicBool::new(false),
            #[cfg(turno_loom)]
            run_release_bug: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn trace(&self, kind: impl FnOnce() -> ActorEvent) {
        self.shared.tracer.emit(&self.shared.clock, kind);
    }

    // ----- queries ------------------------------------------------------

    pub(crate) fn is_alive(&self, id: ActorId) -> bool {
        self.tree.lock().nodes.contains_key(&id)
    }

    pub(crate) fn restarts(&self, id: ActorId) -> u32 {
        self.tree.lock().rares.restart_count(id)
    }

    pub(crate) fn name(&self, id: ActorId) -> Option<String> {
        self.tree
            .lock()
            .nodes
            .get(&id)
            .map(|n| tree::path_of(n).name().to_string())
    }

    pub(crate) fn path(&self, id: ActorId) -> Option<ActorPath> {
        self.tree.lock().nodes.get(&id).map(|n| tree::path_of(n))
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
            .is_some_and(|r| r.mailbox().is_muting(sender))
    }

    pub(crate) fn slot(&self, id: ActorId) -> Option<Arc<Slot>> {
        self.tree.lock().nodes.get(&id).map(|n| n.arc())
    }

    /// Delivers a due timer: the one firing function of every scheduler.
    /// A user timer or an ask deadline becomes a system-lane signal; the
    /// end of a simulated busy period unblocks the slot (only the
    /// deterministic scheduler sets those: see [`Scheduler::simulates_work`]).
    pub(crate) fn fire_timer(&self, t: TimerEntry) {
        match t.key {
            TimerKey::User(timer) => self.push_signal(t.actor, Signal::Timer(timer)),
            TimerKey::Ask(request) => self.push_signal(t.actor, Signal::AskTimeout(request)),
            TimerKey::WakeUp => self.end_busy(t.actor, t.deadline),
        }
    }

    /// Sends a control message to `id` and makes sure it will be handled
    /// even if the actor is parked.
    pub(crate) fn push_control(&self, id: ActorId, c: Control) {
        if let Some(slot) = self.slot(id) {
            Self::control_to(&slot, c);
        }
    }

    /// Never claims the target's cell (its runner may hold it), only takes the
    /// lock of its mailbox's system lane.
    fn control_to(slot: &Slot, c: Control) {
        if slot.mailbox().push_control(c) {
            slot.unpark();
        }
    }

    pub(crate) fn push_signal(&self, id: ActorId, s: Signal) {
        if let Some(slot) = self.slot(id) {
            slot.mailbox().push_signal(s);
        }
    }
}
