//! The lane's seam for the faults its loom models inject.
//!
//! The models (`tests/lane_loom.rs`, `tests/send_loom.rs`) check that a
//! lane with one of its orderings weakened fails them: the check of the
//! checker. The lane asks [`Faults`] for those orderings and branches; in
//! every build but the loom one `Faults` is a zero-sized type whose answers
//! are the correct lane's constants, so the production code has no fault
//! in it and pays nothing for the seam.

use std::sync::atomic::Ordering;

/// The orderings and steps of one lane that a model may weaken.
#[cfg(not(turno_loom))]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Faults;

#[cfg(not(turno_loom))]
impl Faults {
    /// A new lane's: the correct lane.
    #[inline(always)]
    pub(super) fn of_new_lane() -> Self {
        Faults
    }

    /// The order of a producer's store that publishes its element.
    #[inline(always)]
    pub(super) fn publish_order(self) -> Ordering {
        Ordering::Release
    }

    /// The order of an exchange on the stack of spare blocks, `correct`
    /// for the correct lane.
    #[inline(always)]
    pub(super) fn spare_order(self, correct: Ordering) -> Ordering {
        correct
    }

    /// Whether the first block is published to producers before it is to
    /// the consumer (never, in the correct lane).
    #[inline(always)]
    pub(super) fn first_published_late(self) -> bool {
        false
    }

    /// Whether the take fences between its store of `taken` and its load
    /// of `tail` (always, in the correct lane).
    #[inline(always)]
    pub(super) fn take_fences(self) -> bool {
        true
    }
}

/// A deliberately broken variant, so that a test can show that the loom
/// model catches it.
#[cfg(turno_loom)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Inject {
    /// The correct lane.
    #[default]
    None,
    /// A producer publishes its element with a relaxed store: the consumer
    /// may read the slot before the element's write is visible.
    RelaxedPublish,
    /// The first block is published to producers (`tail_block`) before it
    /// is to the consumer (`first`): a push could complete in a block its
    /// consumer could not yet find.
    FirstPublishedLate,
    /// The stack of spare blocks pushes and pops with relaxed exchanges:
    /// the installer may reuse a block whose reset (or link) it does not
    /// see yet.
    SpareRelaxed,
    /// The take loads `tail` right after its store of `taken`, without the
    /// light fence between: the depth it reads can miss a claim that a
    /// refused sender saw, and the mailbox then misses that sender
    /// (`tests/send_loom.rs`).
    TakeWithoutFence,
}

#[cfg(turno_loom)]
std::thread_local! {
    /// The fault every lane created on this thread starts with: how the
    /// mailbox model (`tests/send_loom.rs`) reaches the lanes of mailboxes
    /// the runtime creates. Loom runs a model's threads on its own thread.
    static INJECT_NEW: std::cell::Cell<Inject> = const { std::cell::Cell::new(Inject::None) };
}

/// Every lane created on this thread from now on starts with `inject`.
#[cfg(turno_loom)]
pub(super) fn inject_new(inject: Inject) {
    INJECT_NEW.with(|i| i.set(inject));
}

/// The orderings and steps of one lane that a model may weaken.
#[cfg(turno_loom)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Faults(Inject);

#[cfg(turno_loom)]
impl Faults {
    /// A new lane's: the fault this thread's lanes start with.
    pub(super) fn of_new_lane() -> Self {
        Faults(INJECT_NEW.with(|i| i.get()))
    }

    /// A lane with `inject`.
    pub(super) fn injected(inject: Inject) -> Self {
        Faults(inject)
    }

    /// The order of a producer's store that publishes its element.
    pub(super) fn publish_order(self) -> Ordering {
        match self.0 {
            Inject::RelaxedPublish => Ordering::Relaxed,
            _ => Ordering::Release,
        }
    }

    /// The order of an exchange on the stack of spare blocks, `correct`
    /// for the correct lane.
    pub(super) fn spare_order(self, correct: Ordering) -> Ordering {
        match self.0 {
            Inject::SpareRelaxed => Ordering::Relaxed,
            _ => correct,
        }
    }

    /// Whether the first block is published to producers before it is to
    /// the consumer.
    pub(super) fn first_published_late(self) -> bool {
        self.0 == Inject::FirstPublishedLate
    }

    /// Whether the take fences between its store of `taken` and its load
    /// of `tail`.
    pub(super) fn take_fences(self) -> bool {
        self.0 != Inject::TakeWithoutFence
    }
}
