//! The step table: a cache of the pure microstep, keyed by the
//! configuration and the event.
//!
//! For a machine under XState's rules, what the algorithm computes for an
//! event before it runs any executable content — the optimal enabled
//! transition set, the exit set in exit order, the entry set and the states
//! entered by default, the configuration that results — is a function of
//! the configuration and the event's name alone **when** no guard was
//! evaluated, no history state was read or written, and the machine has no
//! event hook. Such a microstep's plan is kept here the first time it is
//! computed; the next time the chart is in that configuration and the
//! event comes, the plan is replayed: the same exits, content and entries
//! in the same order, through the same code, with only the searching left
//! out. A microstep with no content at all (no exit or entry actions,
//! `after`, invocations, transition actions, final states) replays as a
//! copy of the resulting configuration's words.
//!
//! Invariant: the table is a cache of the pure function. A miss (or a
//! microstep that depended on guards or history) is computed by the spec's
//! algorithm ([`crate::algorithm`]); an entry is only ever what that
//! computation produced, so a hit and a miss give the same snapshot and
//! actions (property test `the_step_table_steps_as_the_algorithm` in
//! `tests/properties.rs`).
//!
//! Memory is bounded: the slots (one word each) are allocated on the first
//! insert, and no entry is added once [`StepTable::max_entries`] are in
//! (half the slots); what does not fit is computed every time. Entries are
//! never removed or changed, so readers take no lock: a slot is a
//! [`OnceLock`], and two threads racing to fill slots at worst keep the
//! same plan twice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use smallvec::SmallVec;

use crate::machine::{StateIdx, TransIdx};
use crate::snapshot::StateSet;

/// Slots a machine's table gets by default (entries: half of them).
pub const DEFAULT_STEP_TABLE_SLOTS: usize = 1024;

/// How far a lookup or an insert probes past a key's home slot.
const PROBES: usize = 8;

/// One microstep's plan for a configuration and an event.
pub(crate) struct StepPlan {
    /// The configuration before the microstep (the key, with `event`).
    pub(crate) before: StateSet,
    /// The event's id in the machine's table of exact names.
    pub(crate) event: u32,
    /// The optimal enabled transition set, in selection order (empty: the
    /// event enables nothing here).
    pub(crate) enabled: SmallVec<[TransIdx; 4]>,
    /// The exit set in exit order (reverse document order).
    pub(crate) exits: SmallVec<[StateIdx; 8]>,
    /// The entry set (entered in document order).
    pub(crate) to_enter: StateSet,
    /// The states of the entry set entered by default.
    pub(crate) default_entry: StateSet,
    /// The configuration after the microstep.
    pub(crate) after: StateSet,
    /// Nothing to run: no exit or entry content, `after`, invocation,
    /// transition action or final state. Replaying it is `config = after`.
    pub(crate) quiet: bool,
}

/// A bounded, lock-free, insert-only table of [`StepPlan`]s (see the module
/// documentation).
pub(crate) struct StepTable {
    slots: OnceLock<Box<[OnceLock<Box<StepPlan>>]>>,
    len: AtomicUsize,
    /// A power of two, or 0: no table.
    capacity: usize,
}

impl StepTable {
    /// A table of `slots` slots (rounded up to a power of two; 0: none).
    pub(crate) fn new(slots: usize) -> Self {
        StepTable {
            slots: OnceLock::new(),
            len: AtomicUsize::new(0),
            capacity: if slots == 0 {
                0
            } else {
                slots.next_power_of_two().max(2 * PROBES)
            },
        }
    }

    /// The table is in use.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.capacity != 0
    }

    /// At most this many plans are kept.
    pub(crate) fn max_entries(&self) -> usize {
        self.capacity / 2
    }

    /// Plans kept so far (with inserts in progress on other threads).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    #[inline]
    fn home(&self, config: &StateSet, event: u32) -> usize {
        // FxHash's multiply-rotate over the configuration's words.
        const K: u64 = 0xf135_7aea_2e62_a9c5;
        let mut h = (event as u64).wrapping_add(1).wrapping_mul(K);
        for &w in config.words() {
            h = (h.rotate_left(26) ^ w).wrapping_mul(K);
        }
        (h.rotate_left(26) as usize) & (self.capacity - 1)
    }

    /// The plan for `event` in `config`, if kept.
    #[inline]
    pub(crate) fn get(&self, config: &StateSet, event: u32) -> Option<&StepPlan> {
        let slots = self.slots.get()?;
        let mask = self.capacity - 1;
        let mut i = self.home(config, event);
        for _ in 0..PROBES {
            let p = slots[i].get()?;
            if p.event == event && p.before.same(config) {
                return Some(p);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Keeps `plan` unless the table is full or its probe run is.
    pub(crate) fn insert(&self, plan: StepPlan) {
        if !self.enabled() {
            return;
        }
        // Reserve the entry before filling a slot, so that threads racing
        // to insert never keep more than `max_entries` between them; a
        // reservation not used is given back.
        if self.len.fetch_add(1, Ordering::Relaxed) >= self.max_entries() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        let slots = self.slots.get_or_init(|| {
            (0..self.capacity)
                .map(|_| OnceLock::new())
                .collect::<Vec<_>>()
                .into_boxed_slice()
        });
        let mask = self.capacity - 1;
        let mut i = self.home(&plan.before, plan.event);
        let mut plan = Box::new(plan);
        for _ in 0..PROBES {
            if let Some(p) = slots[i].get() {
                if p.event == plan.event && p.before.same(&plan.before) {
                    break;
                }
            }
            match slots[i].set(plan) {
                Ok(()) => return,
                Err(back) => plan = back,
            }
            i = (i + 1) & mask;
        }
        self.len.fetch_sub(1, Ordering::Relaxed);
    }
}
