//! The `tracing` face of the trace (feature `tracing`).
//!
//! Every trace event also becomes a `tracing` event, at a level chosen for
//! what it means to someone reading a service's log:
//!
//! | level | events |
//! |---|---|
//! | `ERROR` | a turn panicked (`fail`), a supervisor gave up (`escalate`) |
//! | `WARN` | an actor was restarted; an actor stopped because it failed |
//! | `DEBUG` | messages lost to a policy (`drop`), handed back (`reject`), dead letters, stale replies, spawns, stops |
//! | `TRACE` | everything else: enqueues, mute/unmute, full, stash, timers, asks |
//!
//! Drops are `DEBUG`, not `WARN`: under keep-newest or keep-oldest they are
//! the policy working as configured, and they are counted anyway. Turns are
//! spans, not events (`turn`, at `DEBUG`, with the actor's name and id and
//! what the turn handles), so every event of a turn nests under it: a
//! failure is reported inside the span of the turn that panicked. The
//! target is `turno`.

use crate::trace::EventKind;

/// True when some subscriber may want an event: only then is the event
/// built for `tracing` alone.
#[inline]
pub(crate) fn wanted() -> bool {
    tracing::enabled!(target: "turno", tracing::Level::ERROR)
}

/// Emits `kind` as a `tracing` event.
pub(crate) fn event(kind: &EventKind) {
    use tracing::{debug, error, trace, warn};
    match kind {
        // Emitted by the cell inside the failing turn's span instead.
        EventKind::Fail { .. } => {}
        EventKind::Escalate { actor, child } => error!(
            target: "turno",
            actor = actor.as_u64(),
            child = child.as_u64(),
            "supervisor gave up on a child and escalates"
        ),
        EventKind::Restart {
            actor,
            restarts_in_period,
        } => warn!(
            target: "turno",
            actor = actor.as_u64(),
            restarts_in_period,
            "actor restarted"
        ),
        EventKind::Stop { actor, reason } if reason.starts_with("failed") => {
            warn!(target: "turno", actor = actor.as_u64(), reason = %reason, "actor stopped after failing")
        }
        EventKind::Stop { actor, reason } => {
            debug!(target: "turno", actor = actor.as_u64(), reason = %reason, "actor stopped")
        }
        EventKind::Drop {
            actor,
            policy,
            which,
        } => debug!(
            target: "turno",
            actor = actor.as_u64(),
            policy,
            which = ?which,
            "message dropped by the mailbox policy"
        ),
        EventKind::Reject { actor } => {
            debug!(target: "turno", actor = actor.as_u64(), "message rejected: mailbox full")
        }
        EventKind::DeadLetter { actor, reason } => {
            debug!(target: "turno", actor = actor.as_u64(), reason = ?reason, "dead letter")
        }
        EventKind::StaleReply {
            actor,
            request,
            reason,
        } => debug!(
            target: "turno",
            actor = actor.as_u64(),
            request,
            reason = ?reason,
            "stale reply discarded"
        ),
        EventKind::Spawn {
            actor,
            name,
            parent,
            policy,
        } => debug!(
            target: "turno",
            actor = actor.as_u64(),
            name = %name,
            parent = parent.map(|p| p.as_u64()),
            policy = %policy,
            "actor spawned"
        ),
        // Turns are spans.
        EventKind::TurnStart { .. } | EventKind::TurnEnd { .. } => {}
        other => trace!(target: "turno", event = ?other),
    }
}
