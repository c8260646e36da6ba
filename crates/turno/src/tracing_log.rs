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

use turno_trace::actor::ActorEvent;
use turno_trace::DropPolicy;

/// True when some subscriber may want an event: only then is the event
/// built for `tracing` alone.
#[inline]
pub(crate) fn wanted() -> bool {
    tracing::enabled!(target: "turno", tracing::Level::ERROR)
}

/// Emits `kind` as a `tracing` event.
pub(crate) fn event(kind: &ActorEvent) {
    use tracing::{debug, error, trace, warn};
    match kind {
        // Emitted by the cell inside the failing turn's span instead.
        ActorEvent::Fail { .. } => {}
        ActorEvent::Escalate { actor, child } => error!(
            target: "turno",
            actor = actor.0,
            child = child.0,
            "supervisor gave up on a child and escalates"
        ),
        ActorEvent::Restart {
            actor,
            restarts_in_period,
        } => warn!(
            target: "turno",
            actor = actor.0,
            restarts_in_period,
            "actor restarted"
        ),
        ActorEvent::Stop { actor, reason } if reason.starts_with("failed") => {
            warn!(target: "turno", actor = actor.0, reason = %reason, "actor stopped after failing")
        }
        ActorEvent::Stop { actor, reason } => {
            debug!(target: "turno", actor = actor.0, reason = %reason, "actor stopped")
        }
        ActorEvent::Drop {
            actor,
            policy,
            which,
        } => debug!(
            target: "turno",
            actor = actor.0,
            policy = match policy {
                DropPolicy::KeepNewest => "keep_newest",
                DropPolicy::KeepOldest => "keep_oldest",
            },
            which = ?which,
            "message dropped by the mailbox policy"
        ),
        ActorEvent::Reject { actor } => {
            debug!(target: "turno", actor = actor.0, "message rejected: mailbox full")
        }
        ActorEvent::DeadLetter { actor, reason } => {
            debug!(target: "turno", actor = actor.0, reason = ?reason, "dead letter")
        }
        ActorEvent::StaleReply {
            actor,
            request,
            reason,
        } => debug!(
            target: "turno",
            actor = actor.0,
            request = request.0,
            reason = ?reason,
            "stale reply discarded"
        ),
        ActorEvent::Spawn {
            actor,
            name,
            path,
            parent,
            policy,
        } => debug!(
            target: "turno",
            actor = actor.0,
            name = %name,
            path = path.as_deref().unwrap_or(""),
            parent = parent.map(|p| p.0),
            policy = %policy,
            "actor spawned"
        ),
        // Turns are spans.
        ActorEvent::TurnStart { .. } | ActorEvent::TurnEnd { .. } => {}
        other => trace!(target: "turno", event = ?other),
    }
}
