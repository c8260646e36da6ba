//! Reconstructing the world at step k from the index (a checkpoint, then a
//! short replay) equals replaying events 0..k one by one.

use std::io::Cursor;

use proptest::prelude::*;
use turno_trace::actor::{
    ChartStateDef, DeadLetterReason, Dropped, EventOrigin, StaleReason, StateKind,
};
use turno_trace::js::{
    AnimationRef, DrivenBy, MainThread, Phase, PromiseState, Stream, TaskSource,
};
use turno_trace::{
    ActorEvent, ActorId, AnimationId, DropPolicy, EntryId, Event, Header, Index, JsEvent, Kind,
    Lane, Model, Policy, PromiseId, Queue, RequestId, TimerId, TurnKind, World,
};

fn id() -> impl Strategy<Value = ActorId> {
    (0u64..5).prop_map(ActorId)
}

fn actor_event() -> impl Strategy<Value = ActorEvent> {
    let state = prop::sample::select(vec!["a", "b", "a.x", "a.y"]).prop_map(str::to_owned);
    prop_oneof![
        (id(), 0usize..4).prop_map(|(actor, n)| ActorEvent::Spawn {
            actor,
            name: format!("n{n}"),
            path: Some(format!("/n{n}")),
            parent: Some(ActorId(0)),
            policy: [
                Policy::KeepNewest(2),
                Policy::KeepOldest(2),
                Policy::Reject(3),
                Policy::Suspend(2)
            ][n],
        }),
        (id(), any::<bool>(), 0usize..6).prop_map(|(actor, user, depth)| ActorEvent::Enqueue {
            actor,
            lane: if user { Lane::User } else { Lane::System },
            depth,
        }),
        (id(), any::<bool>()).prop_map(|(actor, newest)| ActorEvent::Drop {
            actor,
            policy: if newest {
                DropPolicy::KeepNewest
            } else {
                DropPolicy::KeepOldest
            },
            which: if newest {
                Dropped::Oldest
            } else {
                Dropped::Incoming
            },
        }),
        id().prop_map(|actor| ActorEvent::Reject { actor }),
        id().prop_map(|actor| ActorEvent::Full { actor }),
        id().prop_map(|actor| ActorEvent::DeadLetter {
            actor,
            reason: DeadLetterReason::Drained
        }),
        (id(), 0usize..8).prop_map(|(actor, w)| ActorEvent::TurnStart {
            actor,
            what: [
                TurnKind::Started,
                TurnKind::Stopped,
                TurnKind::Message,
                TurnKind::Unstashed,
                TurnKind::Reply,
                TurnKind::AskTimeout,
                TurnKind::Timer,
                TurnKind::Terminated,
            ][w],
        }),
        (id(), any::<bool>()).prop_map(|(actor, ok)| ActorEvent::TurnEnd { actor, ok }),
        (id(), 0usize..4).prop_map(|(actor, size)| ActorEvent::Stash { actor, size }),
        (id(), 0usize..3).prop_map(|(actor, count)| ActorEvent::Unstash { actor, count }),
        (id(), 10u64..14, any::<u64>()).prop_map(|(actor, t, deadline_ns)| ActorEvent::TimerSet {
            actor,
            timer: TimerId(t),
            deadline_ns,
        }),
        (id(), 10u64..14).prop_map(|(actor, t)| ActorEvent::TimerFire {
            actor,
            timer: TimerId(t)
        }),
        (id(), 10u64..14).prop_map(|(actor, t)| ActorEvent::TimerCancel {
            actor,
            timer: TimerId(t)
        }),
        (id(), 20u64..24, id()).prop_map(|(actor, r, to)| ActorEvent::Ask {
            actor,
            request: RequestId(r),
            to,
        }),
        (id(), 20u64..24).prop_map(|(actor, r)| ActorEvent::StaleReply {
            actor,
            request: RequestId(r),
            reason: StaleReason::Superseded,
        }),
        id().prop_map(|actor| ActorEvent::Fail {
            actor,
            error: "boom".into()
        }),
        id().prop_map(|actor| ActorEvent::Restart {
            actor,
            restarts_in_period: 1
        }),
        (id(), id()).prop_map(|(actor, child)| ActorEvent::Escalate { actor, child }),
        id().prop_map(|actor| ActorEvent::Stop {
            actor,
            reason: "stopped".into()
        }),
        (id(), id()).prop_map(|(actor, by)| ActorEvent::Mute { actor, by }),
        id().prop_map(|actor| ActorEvent::Unmute { actor }),
        id().prop_map(|actor| ActorEvent::ChartDefine {
            actor,
            machine: "m".into(),
            states: vec![ChartStateDef {
                id: "a".into(),
                parent: None,
                kind: StateKind::Compound,
                history: None,
                initial: None,
            }],
            transitions: vec![],
            root: Some("m".into()),
            initial: Some("a".into()),
            root_kind: Some(StateKind::Compound),
        }),
        (id(), any::<bool>()).prop_map(|(actor, ext)| ActorEvent::ChartEvent {
            actor,
            event: "go".into(),
            origin: if ext {
                EventOrigin::External
            } else {
                EventOrigin::Internal
            },
        }),
        (id(), state.clone()).prop_map(|(actor, state)| ActorEvent::ChartExit { actor, state }),
        (id(), state.clone()).prop_map(|(actor, state)| ActorEvent::ChartEnter { actor, state }),
        (id(), state, prop::option::of(0u32..4)).prop_map(|(actor, source, index)| {
            ActorEvent::ChartTransition {
                actor,
                source,
                event: None,
                targets: vec!["b".into()],
                index,
            }
        }),
    ]
}

fn queue() -> impl Strategy<Value = Queue> {
    prop::sample::select(Queue::ALL.to_vec())
}

fn js_event() -> impl Strategy<Value = JsEvent> {
    prop_oneof![
        (1u32..4).prop_map(|depth| JsEvent::StackPush {
            frame: format!("f{depth}"),
            depth
        }),
        (0u32..3).prop_map(|depth| JsEvent::StackPop {
            frame: "f".into(),
            depth
        }),
        (queue(), 0u64..6, prop::option::of(0u64..50)).prop_map(|(queue, id, due_ns)| {
            JsEvent::Enqueue {
                queue,
                id: EntryId(id),
                label: (id % 2 == 0).then(|| "cb".into()),
                due_ns,
                delay_ns: None,
                requested_ns: None,
                repeat: None,
                nesting: None,
                clamped: None,
                source: Some(TaskSource::Timer),
                timer: None,
                frame_due_ns: None,
                from_loop: None,
                message: None,
                input_at_ns: None,
            }
        }),
        (queue(), 0u64..6).prop_map(|(queue, id)| JsEvent::Dequeue {
            queue,
            id: EntryId(id),
            due_ns: None,
            source: None
        }),
        (queue(), 0u64..6).prop_map(|(queue, id)| JsEvent::Cancel {
            queue,
            id: EntryId(id)
        }),
        (1u64..4).prop_map(|iteration| JsEvent::Phase {
            phase: Phase::Check,
            iteration
        }),
        Just(JsEvent::MicrotaskCheckpoint),
        (1u64..4).prop_map(|frame| JsEvent::RenderStart {
            frame,
            frame_time_ns: 5,
            callbacks: vec![EntryId(1)],
            animations: Vec::new(),
        }),
        (1u64..4, prop::option::of(0u64..400), any::<bool>()).prop_map(|(a, end_ns, c)| {
            JsEvent::AnimationStart {
                animation: AnimationId(a),
                label: "div transform".into(),
                driven_by: if c {
                    DrivenBy::Compositor
                } else {
                    DrivenBy::MainThread
                },
                end_ns,
            }
        }),
        (1u64..4).prop_map(|a| JsEvent::AnimationCancel {
            animation: AnimationId(a)
        }),
        (any::<bool>()).prop_map(|busy| JsEvent::CompositorFrame {
            frame_time_ns: 16_666_667,
            animations: vec![AnimationRef {
                animation: AnimationId(1),
                label: "div transform".into()
            }],
            main_thread: if busy {
                MainThread::Busy
            } else {
                MainThread::Idle
            },
            lane: "compositor".into(),
        }),
        (1u64..4).prop_map(|frame| JsEvent::RenderEnd { frame }),
        (1u64..4).prop_map(|p| JsEvent::PromiseObserved {
            promise: PromiseId(p),
            via: "then".into()
        }),
        (1u64..4, any::<bool>()).prop_map(|(p, done)| JsEvent::Promise {
            promise: PromiseId(p),
            state: if done {
                PromiseState::Fulfilled
            } else {
                PromiseState::Pending
            },
            result: done.then(|| serde_json::json!("1")),
            fulfill_reactions: (!done).then_some(1),
            reject_reactions: (!done).then_some(0),
            is_handled: Some(done),
        }),
        "[a-z<>&]{0,6}".prop_map(|text| JsEvent::Output {
            stream: Stream::Stdout,
            text
        }),
        Just(JsEvent::Uncaught {
            message: "x".into(),
            location: None
        }),
        Just(JsEvent::Note { text: "n".into() }),
    ]
}

fn write(header: &Header, kinds: Vec<(u64, Kind, bool)>) -> (String, Vec<Event>) {
    let mut text = header.to_line();
    text.push('\n');
    let mut t = 0;
    let mut events = Vec::new();
    for (seq, (dt, kind, stack)) in kinds.into_iter().enumerate() {
        t += dt;
        let mut e = Event::new(seq as u64, t, kind);
        if stack {
            e.js_stack = Some(vec![format!("<main> (a.js:{seq}:1)")]);
        }
        text.push_str(&e.to_line());
        text.push('\n');
        events.push(e);
    }
    (text, events)
}

fn check(text: &str, events: &[Event], interval: u64, ks: &[u64]) -> Result<(), TestCaseError> {
    let index = Index::build_with(Cursor::new(text), interval).unwrap();
    prop_assert!(index.error().is_none(), "{:?}", index.error());
    prop_assert_eq!(index.len(), events.len() as u64);
    for &k in ks {
        let k = k % (events.len() as u64 + 1);
        let mut replayed = World::new();
        for e in &events[..k as usize] {
            replayed.apply(e);
        }
        let fast = index.world_at(Cursor::new(text), k).unwrap();
        prop_assert_eq!(&fast, &replayed, "step {}", k);
        let (before, next) = index.world_and_next(Cursor::new(text), k).unwrap();
        prop_assert_eq!(&before, &replayed, "step {}", k);
        prop_assert_eq!(next.as_ref(), events.get(k as usize));
        let read = index.events(Cursor::new(text), k, 3).unwrap();
        prop_assert_eq!(
            &read[..],
            &events[k as usize..(k as usize + 3).min(events.len())]
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn actor_reconstruction_equals_replay(
        kinds in prop::collection::vec((0u64..3, actor_event()), 0..300),
        interval in 1u64..40,
        ks in prop::collection::vec(any::<u64>(), 1..8),
    ) {
        let kinds = kinds.into_iter().map(|(dt, k)| (dt, Kind::Actor(k), false)).collect();
        let (text, events) = write(&Header::turno(), kinds);
        check(&text, &events, interval, &ks)?;
    }

    #[test]
    fn js_reconstruction_equals_replay(
        kinds in prop::collection::vec((0u64..3, js_event(), any::<bool>()), 0..300),
        interval in 1u64..40,
        ks in prop::collection::vec(any::<u64>(), 1..8),
    ) {
        let kinds = kinds.into_iter().map(|(dt, k, s)| (dt, Kind::Js(k), s)).collect();
        let (text, events) = write(&Header::js(Model::Node, "a.js"), kinds);
        check(&text, &events, interval, &ks)?;
    }
}

/// A trace cut from a ring can mention an actor before its `spawn`: it is
/// named as the runtime names an unnamed actor (`$<id>`, a name no spawn
/// can choose), and its `spawn`, when it comes, gives the real name.
#[test]
fn an_actor_seen_before_its_spawn_is_named_like_an_unnamed_one() {
    let text = "{\"format\":\"turno-trace\",\"version\":1}\n\
        {\"seq\":0,\"t_ns\":0,\"kind\":\"enqueue\",\"actor\":7,\"lane\":\"user\",\"depth\":1}\n\
        {\"seq\":1,\"t_ns\":0,\"kind\":\"spawn\",\"actor\":7,\"name\":\"worker\",\"parent\":0,\"policy\":\"unbounded\"}\n";
    let index = Index::build(Cursor::new(text)).unwrap();
    let before = index.world_at(Cursor::new(text), 1).unwrap();
    assert_eq!(before.actors[&ActorId(7)].name, "$7");
    let after = index.world_at(Cursor::new(text), 2).unwrap();
    assert_eq!(after.actors[&ActorId(7)].name, "worker");
}
