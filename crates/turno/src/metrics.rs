//! Metrics, through the [`metrics`] facade.
//!
//! Install any `metrics` recorder (Prometheus exporter, `metrics-util`'s
//! debugging recorder…) and turno reports, per actor (label `actor`, the
//! actor's name, the last segment of its path: siblings differ, cousins may
//! share one):
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | `turno_mailbox_depth` | gauge | user-lane depth after each take (registered at the first take that leaves mail queued: until then every take left the lane empty, and an absent gauge reads as 0) |
//! | `turno_mailbox_dropped_total` | counter | messages lost to the policy (label `policy`) |
//! | `turno_mailbox_rejected_total` | counter | messages handed back by a reject mailbox |
//! | `turno_stash_size` | gauge | stashed messages |
//! | `turno_turn_seconds` | histogram | wall-clock time of a turn, sampled: one message turn in [`TURN_SAMPLE`] per actor, at a phase set by its id (see below) |
//! | `turno_stale_replies_total` | counter | replies discarded as stale |
//! | `turno_dead_letters_total` | counter | messages that reached no actor (system-wide) |
//!
//! Each handle is registered once per actor, when the actor first reports
//! that metric (an actor that never handles a message registers none and
//! keeps only its name), so the hot path does no label formatting or
//! allocation. With metrics
//! disabled in the system builder nothing is registered.
//!
//! What metrics cost when nobody records them: the `metrics` facade cannot
//! tell a handle of its no-op recorder from a real one, so turno never
//! reads the clock per turn. Turn time is measured on one message turn in
//! [`TURN_SAMPLE`] of each actor (two clock reads on that turn, none on the
//! others); every other metric is one branch and a call that a no-op
//! handle returns from at once.
//!
//! **Which turns are sampled.** Actor `id`'s message turns are numbered
//! from 0; turn `k` is sampled when `(k + id) % TURN_SAMPLE == 0`. Every
//! message turn of every actor is so sampled at the same rate, one in
//! [`TURN_SAMPLE`], and actors that handle one message before stopping are
//! in the histogram in proportion (one in [`TURN_SAMPLE`] of them, by id),
//! instead of each of them registering a histogram on its first turn: the
//! registration (a labelled key built and dropped even by the facade's
//! no-op recorder) cost about 800 instructions per spawned actor.

use std::sync::OnceLock;

use metrics::{Counter, Gauge, Histogram};

use crate::buffer::Policy;
use crate::ids::ActorId;
use crate::lazy::LazyBox;
use crate::path_cell::PathCell;

/// One message turn in this many has its wall-clock time measured (per
/// actor; a power of two).
pub const TURN_SAMPLE: u32 = 64;

/// Metric handles of one actor, each registered on its own first use: one
/// word per actor until then (the label, the actor's name and policy, is
/// the mailbox's, passed in through [`Metrics`]).
pub(crate) struct MailboxMetrics {
    /// Sealed when metrics are off; allocated by the first metric when on
    /// (one word, where a `OnceLock` of an optional box was two).
    handles: LazyBox<Handles>,
}

/// One actor's metric handles with their label, as a mailbox lends them.
pub(crate) struct Metrics<'a> {
    pub(crate) handles: &'a MailboxMetrics,
    /// The label is the path's last segment, the actor's name (made
    /// from the mailbox's path and the id without writing the path).
    pub(crate) actor: Label<'a>,
    pub(crate) policy: Policy,
}

/// An actor's metric label: its name, from its path (see [`PathCell`]).
#[derive(Clone, Copy)]
pub(crate) struct Label<'a> {
    pub(crate) path: &'a PathCell,
    pub(crate) id: ActorId,
}

impl Label<'_> {
    /// The name, as the label's text.
    fn name(self) -> String {
        self.path.name(self.id)
    }
}

/// One actor's handles. Each is registered when first needed, not all six
/// on the first metric: with no recorder installed (the `metrics` facade's
/// no-op one) a registration still builds and drops a key with an `actor`
/// label, about 600 instructions, and most actors only ever set the depth
/// gauge (a short-lived actor that handles one message paid about 3 500 for
/// six registrations, a third of its spawn).
#[derive(Default)]
pub(crate) struct Handles {
    depth: OnceLock<Gauge>,
    dropped: OnceLock<Counter>,
    rejected: OnceLock<Counter>,
    stash: OnceLock<Gauge>,
    turn_seconds: OnceLock<Histogram>,
    stale: OnceLock<Counter>,
}

impl MailboxMetrics {
    /// Sets the depth gauge after a take. A registered gauge is set here,
    /// inline (it is set on every take that leaves mail queued: fan-in's
    /// consumer, every message); the look whether one is due and its
    /// registration are out of line, with the [`Metrics`] that `metrics`
    /// builds only then.
    #[inline]
    pub(crate) fn set_depth<'a>(&'a self, depth: usize, metrics: impl FnOnce() -> Metrics<'a>) {
        // Not registered yet while every take so far left the lane empty:
        // an empty lane keeps it so (see the table in the module docs), and
        // a one-shot actor registers nothing.
        match self.handles.get() {
            Some(h) => match h.depth.get() {
                Some(gauge) => gauge.set(depth as f64),
                None if depth != 0 => metrics().register_depth(depth),
                None => {}
            },
            // Off (sealed), or on and nothing registered yet.
            None if depth != 0 && !self.handles.is_sealed() => metrics().register_depth(depth),
            None => {}
        }
    }

    /// A mailbox's handles, registered on first use where `enabled` (the
    /// system's metrics switch), never where not.
    pub(crate) fn new(enabled: bool) -> Self {
        MailboxMetrics {
            handles: if enabled {
                LazyBox::new()
            } else {
                LazyBox::new_sealed()
            },
        }
    }
}

impl Metrics<'_> {
    pub(crate) fn enabled(&self) -> bool {
        !self.handles.handles.is_sealed()
    }

    /// The actor's handles (allocated on the first metric), its path and
    /// policy; `None` when off. The path, not its name: the name is a
    /// search for the last `/`, which only a registration needs (done on
    /// every metric it cost about 110 instructions per pingpong message).
    #[inline]
    fn get(&self) -> Option<(&Handles, Label<'_>, Policy)> {
        let handles = self.handles.handles.get_or_init()?;
        Some((handles, self.actor, self.policy))
    }

    /// The depth gauge's first set: registers it ([`MailboxMetrics::set_depth`]
    /// sets a registered one itself).
    #[cold]
    #[inline(never)]
    fn register_depth(&self, depth: usize) {
        if let Some((h, actor, _)) = self.get() {
            h.depth
                .get_or_init(|| metrics::gauge!("turno_mailbox_depth", "actor" => actor.name()))
                .set(depth as f64);
        }
    }

    pub(crate) fn dropped(&self) {
        if let Some((h, actor, policy)) = self.get() {
            h.dropped
                .get_or_init(|| {
                    metrics::counter!("turno_mailbox_dropped_total", "actor" => actor.name(), "policy" => policy.name())
                })
                .increment(1);
        }
    }

    pub(crate) fn rejected(&self) {
        if let Some((h, actor, _)) = self.get() {
            h.rejected
                .get_or_init(
                    || metrics::counter!("turno_mailbox_rejected_total", "actor" => actor.name()),
                )
                .increment(1);
        }
    }

    pub(crate) fn stash(&self, size: usize) {
        if let Some((h, actor, _)) = self.get() {
            h.stash
                .get_or_init(|| metrics::gauge!("turno_stash_size", "actor" => actor.name()))
                .set(size as f64);
        }
    }

    pub(crate) fn turn(&self, seconds: f64) {
        if let Some((h, actor, _)) = self.get() {
            h.turn_seconds
                .get_or_init(|| metrics::histogram!("turno_turn_seconds", "actor" => actor.name()))
                .record(seconds);
        }
    }

    pub(crate) fn stale(&self) {
        if let Some((h, actor, _)) = self.get() {
            h.stale
                .get_or_init(
                    || metrics::counter!("turno_stale_replies_total", "actor" => actor.name()),
                )
                .increment(1);
        }
    }
}
