//! The runtime's trace events in the shared format of `turno_trace`: every
//! event is written as a `turno_trace::Event`, so the writer and the one
//! reader of the family cannot drift apart (a field renamed here stops the
//! build; a test reads a real run back with the validating reader).

use turno_trace as tt;
use turno_trace::actor::{self as ta, ActorEvent as A};

use crate::ask::StaleReason;
use crate::trace::{DeadLetterReason, Dropped, EventKind as K, Lane, TraceEvent, TurnKind};

fn id(a: crate::ActorId) -> tt::ActorId {
    tt::ActorId(a.as_u64())
}

fn lane(l: Lane) -> ta::Lane {
    match l {
        Lane::User => ta::Lane::User,
        Lane::System => ta::Lane::System,
    }
}

fn turn(t: TurnKind) -> ta::TurnKind {
    match t {
        TurnKind::Started => ta::TurnKind::Started,
        TurnKind::Stopped => ta::TurnKind::Stopped,
        TurnKind::Message => ta::TurnKind::Message,
        TurnKind::Unstashed => ta::TurnKind::Unstashed,
        TurnKind::Reply => ta::TurnKind::Reply,
        TurnKind::AskTimeout => ta::TurnKind::AskTimeout,
        TurnKind::Timer => ta::TurnKind::Timer,
        TurnKind::Terminated => ta::TurnKind::Terminated,
    }
}

fn stale(r: StaleReason) -> ta::StaleReason {
    match r {
        StaleReason::Superseded => ta::StaleReason::Superseded,
        StaleReason::TimedOut => ta::StaleReason::TimedOut,
        StaleReason::Abandoned => ta::StaleReason::Abandoned,
        StaleReason::Restarted => ta::StaleReason::Restarted,
        StaleReason::AlreadyAnswered => ta::StaleReason::AlreadyAnswered,
        StaleReason::Unknown => ta::StaleReason::Unknown,
    }
}

/// The event in the shared format; `None` only if a field holds a value
/// the format has no word for (then the caller writes the event as it is).
pub(crate) fn to_wire(e: &TraceEvent) -> Option<tt::Event> {
    let kind = match &e.kind {
        K::Spawn {
            actor,
            name,
            parent,
            policy,
        } => A::Spawn {
            actor: id(*actor),
            name: name.clone(),
            parent: parent.map(id),
            policy: policy.parse().ok()?,
        },
        K::Enqueue {
            actor,
            lane: l,
            depth,
        } => A::Enqueue {
            actor: id(*actor),
            lane: lane(*l),
            depth: *depth,
        },
        K::Drop {
            actor,
            policy,
            which,
        } => A::Drop {
            actor: id(*actor),
            policy: match *policy {
                "keep_newest" => tt::DropPolicy::KeepNewest,
                "keep_oldest" => tt::DropPolicy::KeepOldest,
                _ => return None,
            },
            which: match which {
                Dropped::Incoming => ta::Dropped::Incoming,
                Dropped::Oldest => ta::Dropped::Oldest,
            },
        },
        K::Reject { actor } => A::Reject { actor: id(*actor) },
        K::Full { actor } => A::Full { actor: id(*actor) },
        K::DeadLetter { actor, reason } => A::DeadLetter {
            actor: id(*actor),
            reason: match reason {
                DeadLetterReason::Closed => ta::DeadLetterReason::Closed,
                DeadLetterReason::Drained => ta::DeadLetterReason::Drained,
            },
        },
        K::TurnStart { actor, what } => A::TurnStart {
            actor: id(*actor),
            what: turn(*what),
        },
        K::TurnEnd { actor, ok } => A::TurnEnd {
            actor: id(*actor),
            ok: *ok,
        },
        K::Stash { actor, size } => A::Stash {
            actor: id(*actor),
            size: *size,
        },
        K::Unstash { actor, count } => A::Unstash {
            actor: id(*actor),
            count: *count,
        },
        K::TimerSet {
            actor,
            timer,
            deadline_ns,
        } => A::TimerSet {
            actor: id(*actor),
            timer: tt::TimerId(*timer),
            deadline_ns: *deadline_ns,
        },
        K::TimerFire { actor, timer } => A::TimerFire {
            actor: id(*actor),
            timer: tt::TimerId(*timer),
        },
        K::TimerCancel { actor, timer } => A::TimerCancel {
            actor: id(*actor),
            timer: tt::TimerId(*timer),
        },
        K::Ask { actor, request, to } => A::Ask {
            actor: id(*actor),
            request: tt::RequestId(*request),
            to: id(*to),
        },
        K::StaleReply {
            actor,
            request,
            reason,
        } => A::StaleReply {
            actor: id(*actor),
            request: tt::RequestId(*request),
            reason: stale(*reason),
        },
        K::Fail { actor, error } => A::Fail {
            actor: id(*actor),
            error: error.clone(),
        },
        K::Restart {
            actor,
            restarts_in_period,
        } => A::Restart {
            actor: id(*actor),
            restarts_in_period: *restarts_in_period,
        },
        K::Escalate { actor, child } => A::Escalate {
            actor: id(*actor),
            child: id(*child),
        },
        K::Stop { actor, reason } => A::Stop {
            actor: id(*actor),
            reason: reason.clone(),
        },
        K::Mute { actor, by } => A::Mute {
            actor: id(*actor),
            by: id(*by),
        },
        K::Unmute { actor } => A::Unmute { actor: id(*actor) },
        K::ChartDefine {
            actor,
            machine,
            states,
            transitions,
        } => A::ChartDefine {
            actor: id(*actor),
            machine: machine.clone(),
            states: states
                .iter()
                .map(|s| serde_json::from_value(s.clone()).ok())
                .collect::<Option<_>>()?,
            transitions: transitions
                .iter()
                .map(|t| serde_json::from_value(t.clone()).ok())
                .collect::<Option<_>>()?,
        },
        K::ChartEvent {
            actor,
            event,
            origin,
        } => A::ChartEvent {
            actor: id(*actor),
            event: event.clone(),
            origin: match *origin {
                "external" => ta::EventOrigin::External,
                "internal" => ta::EventOrigin::Internal,
                _ => return None,
            },
        },
        K::ChartExit { actor, state } => A::ChartExit {
            actor: id(*actor),
            state: state.clone(),
        },
        K::ChartTransition {
            actor,
            source,
            event,
            targets,
        } => A::ChartTransition {
            actor: id(*actor),
            source: source.clone(),
            event: event.clone(),
            targets: targets.clone(),
        },
        K::ChartEnter { actor, state } => A::ChartEnter {
            actor: id(*actor),
            state: state.clone(),
        },
    };
    Some(tt::Event::new(e.seq, e.t_ns, tt::Kind::Actor(kind)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::trace::RingSink;
    use crate::{Actor, Addr, Context, DetSystem, Policy, Props, System};

    struct Sink;
    impl Actor for Sink {
        type Msg = u32;
        fn handle(&mut self, ctx: &mut Context<'_, Self>, m: u32) {
            if m == 0 {
                ctx.stop();
            }
            ctx.simulate_work(Duration::from_millis(10));
        }
    }

    struct Ticker {
        to: Vec<Addr<u32>>,
        n: u32,
    }
    impl Actor for Ticker {
        type Msg = ();
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.send_after(Duration::ZERO, ());
        }
        fn handle(&mut self, ctx: &mut Context<'_, Self>, _: ()) {
            self.n += 1;
            // The last message (0) stops each sink.
            let m = if self.n == 50 { 0 } else { self.n };
            for to in &self.to {
                let _ = ctx.send(to, m);
            }
            if self.n < 50 {
                ctx.send_after(Duration::from_millis(2), ());
            }
        }
    }

    /// A run with drops of both kinds, rejections, timers, dead letters and
    /// stops: each event written through `turno_trace` is the same line
    /// the runtime's own types serialise to, and the validating reader
    /// reads it back as a known kind.
    #[test]
    fn the_shared_format_is_the_documented_one_for_a_real_run() {
        let ring = RingSink::new(100_000);
        let mut sys = DetSystem::builder().trace(ring.clone()).build();
        let mut to = Vec::new();
        for p in [
            Policy::KeepNewest(3),
            Policy::KeepOldest(3),
            Policy::Reject(3),
            Policy::Suspend(3),
        ] {
            to.push(sys.spawn(Props::new().mailbox(p), || Sink).unwrap());
        }
        sys.spawn(Props::new().name("ticker"), move || Ticker {
            to: to.clone(),
            n: 0,
        })
        .unwrap();
        sys.advance(Duration::from_secs(1)).unwrap();
        let events = ring.events();
        let mut text = turno_trace::Header::turno().to_line();
        text.push('\n');
        let mut kinds = std::collections::BTreeSet::new();
        for e in &events {
            let wire = to_wire(e).expect("every runtime event has a wire form");
            let line = wire.to_line();
            assert_eq!(line, serde_json::to_string(e).unwrap());
            kinds.insert(wire.kind_name());
            text.push_str(&line);
            text.push('\n');
        }
        for k in [
            "spawn",
            "enqueue",
            "drop",
            "reject",
            "turn_start",
            "turn_end",
            "timer_set",
            "timer_fire",
            "stop",
        ] {
            assert!(kinds.contains(k), "{k} not exercised: {kinds:?}");
        }
        let (_, read) = turno_trace::read_all(text.as_bytes()).unwrap();
        assert_eq!(read.len(), events.len());
        assert!(read.iter().all(|e| matches!(e.kind, tt::Kind::Actor(_))));
    }
}
