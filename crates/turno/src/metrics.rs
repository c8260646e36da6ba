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
use crate::system::SystemShared;

/// Metric handles of one actor.
pub(crate) struct MailboxMetrics {
    pub(crate) depth: Gauge,
    pub(crate) dropped: Counter,
    pub(crate) rejected: Counter,
    pub(crate) stash: Gauge,
    pub(crate) turn_seconds: Histogram,
    pub(crate) stale: Counter,
    pub(crate) enabled: bool,
}

impl MailboxMetrics {
    pub(crate) fn new(shared: &SystemShared, name: &str, policy: Policy) -> Self {
        if !shared.metrics {
            return MailboxMetrics {
                depth: Gauge::noop(),
                dropped: Counter::noop(),
                rejected: Counter::noop(),
                stash: Gauge::noop(),
                turn_seconds: Histogram::noop(),
                stale: Counter::noop(),
                enabled: false,
            };
        }
        let actor = name.to_owned();
        MailboxMetrics {
            depth: metrics::gauge!("turno_mailbox_depth", "actor" => actor.clone()),
            dropped: metrics::counter!("turno_mailbox_dropped_total", "actor" => actor.clone(), "policy" => policy.name()),
            rejected: metrics::counter!("turno_mailbox_rejected_total", "actor" => actor.clone()),
            stash: metrics::gauge!("turno_stash_size", "actor" => actor.clone()),
            turn_seconds: metrics::histogram!("turno_turn_seconds", "actor" => actor.clone()),
            stale: metrics::counter!("turno_stale_replies_total", "actor" => actor),
            enabled: true,
        }
    }
}
