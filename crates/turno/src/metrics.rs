//! Metrics, through the [`metrics`] facade.
//!
//! Install any `metrics` recorder (Prometheus exporter, `metrics-util`'s
//! debugging recorder…) and turno reports, per actor (label `actor`, the
//! actor's name):
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | `turno_mailbox_depth` | gauge | user-lane depth after each take |
//! | `turno_mailbox_dropped_total` | counter | messages lost to the policy (label `policy`) |
//! | `turno_mailbox_rejected_total` | counter | messages handed back by a reject mailbox |
//! | `turno_stash_size` | gauge | stashed messages |
//! | `turno_turn_seconds` | histogram | wall-clock time of a turn, sampled: one message turn in [`TURN_SAMPLE`] per actor (the 1st, the 65th...) |
//! | `turno_stale_replies_total` | counter | replies discarded as stale |
//! | `turno_dead_letters_total` | counter | messages that reached no actor (system-wide) |
//!
//! Handles are registered once per actor, on its first metric (an actor
//! that never handles a message registers none and keeps only its name),
//! so the hot path does no label formatting or allocation. With metrics
//! disabled in the system builder nothing is registered.
//!
//! What metrics cost when nobody records them: the `metrics` facade cannot
//! tell a handle of its no-op recorder from a real one, so turno never
//! reads the clock per turn. Turn time is measured on one message turn in
//! [`TURN_SAMPLE`] of each actor (two clock reads on that turn, none on the
//! others); every other metric is one branch and a call that a no-op
//! handle returns from at once.

use std::sync::{Arc, OnceLock};

use metrics::{Counter, Gauge, Histogram};

use crate::buffer::Policy;
use crate::shared::SystemShared;

/// One message turn in this many has its wall-clock time measured (per
/// actor; a power of two).
pub const TURN_SAMPLE: u32 = 64;

/// Metric handles of one actor, registered on first use.
pub(crate) enum MailboxMetrics {
    Off,
    On {
        actor: Arc<str>,
        policy: Policy,
        handles: OnceLock<Box<Handles>>,
    },
}

pub(crate) struct Handles {
    depth: Gauge,
    dropped: Counter,
    rejected: Counter,
    stash: Gauge,
    turn_seconds: Histogram,
    stale: Counter,
}

impl Handles {
    fn register(actor: &str, policy: Policy) -> Box<Handles> {
        let actor = actor.to_owned();
        Box::new(Handles {
            depth: metrics::gauge!("turno_mailbox_depth", "actor" => actor.clone()),
            dropped: metrics::counter!("turno_mailbox_dropped_total", "actor" => actor.clone(), "policy" => policy.name()),
            rejected: metrics::counter!("turno_mailbox_rejected_total", "actor" => actor.clone()),
            stash: metrics::gauge!("turno_stash_size", "actor" => actor.clone()),
            turn_seconds: metrics::histogram!("turno_turn_seconds", "actor" => actor.clone()),
            stale: metrics::counter!("turno_stale_replies_total", "actor" => actor),
        })
    }
}

impl MailboxMetrics {
    pub(crate) fn new(shared: &SystemShared, name: &Arc<str>, policy: Policy) -> Self {
        if !shared.metrics {
            return MailboxMetrics::Off;
        }
        MailboxMetrics::On {
            actor: name.clone(),
            policy,
            handles: OnceLock::new(),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        matches!(self, MailboxMetrics::On { .. })
    }

    /// The handles, registered on the first call; `None` when off.
    #[inline]
    fn get(&self) -> Option<&Handles> {
        match self {
            MailboxMetrics::Off => None,
            MailboxMetrics::On {
                actor,
                policy,
                handles,
            } => Some(handles.get_or_init(|| Handles::register(actor, *policy))),
        }
    }

    pub(crate) fn depth(&self, depth: usize) {
        if let Some(h) = self.get() {
            h.depth.set(depth as f64);
        }
    }

    pub(crate) fn dropped(&self) {
        if let Some(h) = self.get() {
            h.dropped.increment(1);
        }
    }

    pub(crate) fn rejected(&self) {
        if let Some(h) = self.get() {
            h.rejected.increment(1);
        }
    }

    pub(crate) fn stash(&self, size: usize) {
        if let Some(h) = self.get() {
            h.stash.set(size as f64);
        }
    }

    pub(crate) fn turn(&self, seconds: f64) {
        if let Some(h) = self.get() {
            h.turn_seconds.record(seconds);
        }
    }

    pub(crate) fn stale(&self) {
        if let Some(h) = self.get() {
            h.stale.increment(1);
        }
    }
}
