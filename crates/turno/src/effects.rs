//! The effects of one turn: what a handler did besides sending, recorded
//! in the turn and applied by the engine when it ends (or shown by the
//! [`TestKit`](crate::testkit::TestKit) without any scheduler).
//!
//! A leaf of the crate: it names ids, cells and supervision, and nothing
//! here runs anything.

use std::sync::Arc;
use std::time::Duration;

use crate::engine::slot::Slot;
use crate::ids::ActorId;
use crate::ids::ActorPath;
use crate::ids::RequestId;
use crate::ids::TimerId;
use crate::supervision::Supervision;
use crate::time::Instant;
use crate::timer::TimerKey;
use crate::verdict::VerdictKind;

/// A child created during a turn, registered by the scheduler at turn end.
pub(crate) struct Spawned {
    pub(crate) id: ActorId,
    /// The path of a child spawned with a name, which enters the
    /// system's path index (an unnamed child's is written when asked).
    pub(crate) named: Option<ActorPath>,
    pub(crate) policy: crate::Policy,
    /// The child's slot, its cell inside; taken out by the engine's
    /// registration.
    pub(crate) slot: Option<Arc<Slot>>,
    pub(crate) supervision: Supervision,
}

impl Spawned {
    /// Stops a child that will never be registered (its parent failed or
    /// stopped, or its path is taken): its mail becomes dead letters, and
    /// its cell goes (it held an address of its own slot).
    pub(crate) fn stop_orphan(mut self) {
        if let Some(slot) = self.slot.take() {
            slot.body.with_cell(&mut |cell| {
                let _ = cell.stop(&mut Effects::default());
                true
            });
        }
    }
}

impl Drop for Spawned {
    /// A child dropped unregistered (the test kit drops the children of
    /// the turn it ran) drops its cell, which holds an address of the
    /// child's own slot: otherwise that slot would keep itself alive.
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.body.with_cell(&mut |_| true);
        }
    }
}

/// The effects of one turn, other than sends.
#[derive(Default)]
pub(crate) struct Effects {
    pub(crate) spawned: Vec<Spawned>,
    pub(crate) stops: Vec<ActorId>,
    pub(crate) stop_self: bool,
    pub(crate) timers_set: Vec<(TimerKey, Instant)>,
    pub(crate) timers_cancelled: Vec<TimerId>,
    pub(crate) watch: Vec<ActorId>,
    pub(crate) unwatch: Vec<ActorId>,
    pub(crate) muted_by: Vec<ActorId>,
    pub(crate) unmuted: Vec<ActorId>,
    pub(crate) busy_for: Option<Duration>,
    pub(crate) asks: Vec<(RequestId, ActorId)>,
    pub(crate) stashed: usize,
    pub(crate) unstashed: usize,
    /// Every send with its verdict, kept only for the test kit.
    pub(crate) sent: Option<Vec<(ActorId, VerdictKind)>>,
    /// The one record of a failed turn: the panic message. Set only by
    /// [`Effects::record_failure`]; the engine reads it when it applies
    /// the effects (a failed turn's other effects are dropped).
    pub(crate) failed: Option<String>,
    /// Set by every write of an effect the engine applies (through
    /// [`Effects::edit`]), so that a turn that only sent is known to have
    /// nothing to apply by one flag, not by looking at eleven fields.
    pub(crate) touched: bool,
}

impl Effects {
    /// Records that the turn (or the factory or hook run in it) panicked.
    pub(crate) fn record_failure(&mut self, error: String) {
        self.edit().failed = Some(error);
    }

    /// The record, to write an effect the engine applies into: marks it
    /// touched. Every such write goes through here.
    #[inline]
    pub(crate) fn edit(&mut self) -> &mut Self {
        self.touched = true;
        self
    }

    /// True when the turn did nothing the scheduler must apply (a turn that
    /// only sent messages): the common case, which then costs one branch.
    #[inline]
    pub(crate) fn is_untouched(&self) -> bool {
        debug_assert!(
            self.touched || self.is_empty(),
            "an effect written without Effects::edit"
        );
        !self.touched
    }

    /// The record of a turn whose only effect, the senders its take
    /// released, was taken out: untouched again.
    pub(crate) fn untouch(&mut self) {
        debug_assert!(self.is_empty());
        self.touched = false;
    }

    /// True when no field holds an effect to apply (what `touched` stands
    /// for; checked in debug builds).
    fn is_empty(&self) -> bool {
        self.spawned.is_empty()
            && self.stops.is_empty()
            && !self.stop_self
            && self.timers_set.is_empty()
            && self.timers_cancelled.is_empty()
            && self.watch.is_empty()
            && self.unwatch.is_empty()
            && self.muted_by.is_empty()
            && self.unmuted.is_empty()
            && self.busy_for.is_none()
            && self.failed.is_none()
    }

    /// The test kit records sends and asks; schedulers do not.
    pub(crate) fn recording(&self) -> bool {
        self.sent.is_some()
    }

    /// Readies a batch's record for the next batch of its owner (a
    /// worker, a local or deterministic system). The engine applies (and
    /// so empties) every record with effects before its batch ends, so only
    /// what no scheduler reads is left to reset: the per-batch counters and
    /// the asks (which only the test kit shows). Owning the record saves
    /// building and dropping ten vectors per batch (about 30 instructions
    /// per message where every batch is one turn, as in pingpong), and
    /// not checking the ten effect lists again about 25 more.
    pub(crate) fn end_batch(&mut self) {
        debug_assert!(
            self.is_empty() && !self.touched,
            "a batch ended with effects not applied"
        );
        self.stashed = 0;
        self.unstashed = 0;
        self.asks.clear();
    }
}
