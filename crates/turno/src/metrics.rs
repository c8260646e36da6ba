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
//! | `turno_turn_seconds` | histogram | wall-clock time of each turn |
//! | `turno_stale_replies_total` | counter | replies discarded as stale |
//! | `turno_dead_letters_total` | counter | messages that reached no actor (system-wide) |
//!
//! Handles are registered once per actor, so the hot path does no label
//! formatting or allocation. With metrics disabled in the system builder the
//! handles are no-ops.

use metrics::{Counter, Gauge, Histogram};

use crate::buffer::Policy;
use crate::shared::SystemShared;

/// Metric handles of one actor: one pointer when metrics are off.
pub(crate) struct MailboxMetrics(Option<Box<Handles>>);

struct Handles {
    depth: Gauge,
    dropped: Counter,
    rejected: Counter,
    stash: Gauge,
    turn_seconds: Histogram,
    stale: Counter,
}

impl MailboxMetrics {
    pub(crate) fn new(shared: &SystemShared, name: &str, policy: Policy) -> Self {
        if !shared.metrics {
            return MailboxMetrics(None);
        }
        let actor = name.to_owned();
        MailboxMetrics(Some(Box::new(Handles {
            depth: metrics::gauge!("turno_mailbox_depth", "actor" => actor.clone()),
            dropped: metrics::counter!("turno_mailbox_dropped_total", "actor" => actor.clone(), "policy" => policy.name()),
            rejected: metrics::counter!("turno_mailbox_rejected_total", "actor" => actor.clone()),
            stash: metrics::gauge!("turno_stash_size", "actor" => actor.clone()),
            turn_seconds: metrics::histogram!("turno_turn_seconds", "actor" => actor.clone()),
            stale: metrics::counter!("turno_stale_replies_total", "actor" => actor),
        })))
    }

    pub(crate) fn enabled(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn depth(&self, depth: usize) {
        if let Some(h) = &self.0 {
            h.depth.set(depth as f64);
        }
    }

    pub(crate) fn dropped(&self) {
        if let Some(h) = &self.0 {
            h.dropped.increment(1);
        }
    }

    pub(crate) fn rejected(&self) {
        if let Some(h) = &self.0 {
            h.rejected.increment(1);
        }
    }

    pub(crate) fn stash(&self, size: usize) {
        if let Some(h) = &self.0 {
            h.stash.set(size as f64);
        }
    }

    pub(crate) fn turn(&self, seconds: f64) {
        if let Some(h) = &self.0 {
            h.turn_seconds.record(seconds);
        }
    }

    pub(crate) fn stale(&self) {
        if let Some(h) = &self.0 {
            h.stale.increment(1);
        }
    }
}
