//! What one step moved: the element pushed or popped and the lane it went
//! to or came from, so the page can highlight it.

use serde::Serialize;
use turno_trace::actor::{Dropped, TurnKind};
use turno_trace::world::JsWorld;
use turno_trace::{ActorEvent, Event, JsEvent, Kind, World};

/// One element that moved at a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Moved {
    /// The lane: `queue:NAME`, `stack`, `promise:ID`, `actor:ID:user`,
    /// `actor:ID:stash`, `actor:ID:timers`, `chart:ID`, `console`.
    pub lane: String,
    /// `push`, `pop`, `drop`, `change`.
    pub action: &'static str,
    /// The element's key within its lane (a JavaScript entry id, a box's
    /// `enqueue` seq, a state id), when it has one.
    pub item: Option<String>,
    /// A short description (a label, a frame).
    pub label: String,
}

fn m(lane: String, action: &'static str, item: Option<String>, label: impl Into<String>) -> Moved {
    Moved {
        lane,
        action,
        item,
        label: label.into(),
    }
}

fn boxname(b: Option<u64>) -> (Option<String>, String) {
    match b {
        Some(s) => (Some(s.to_string()), format!("msg #{s}")),
        None => (None, "msg".into()),
    }
}

/// What `event` moved, given the world just before it.
pub fn moved(before: &World, event: &Event) -> Vec<Moved> {
    match &event.kind {
        Kind::Js(j) => match before.js_loop(event.loop_id.unwrap_or(0)) {
            Some(js_world) => js(js_world, j),
            None => js(&JsWorld::default(), j),
        },
        Kind::Actor(a) => actor(before, event.seq, a),
        Kind::Other(_) => Vec::new(),
    }
}

/// What a JavaScript event moved in its own loop (`before` is that loop).
fn js(before: &JsWorld, e: &JsEvent) -> Vec<Moved> {
    match e {
        JsEvent::Enqueue {
            queue, id, label, ..
        } => vec![m(
            format!("queue:{}", queue.name()),
            "push",
            Some(id.0.to_string()),
            label.clone().unwrap_or_else(|| {
                before
                    .queues
                    .get(queue)
                    .and_then(|q| q.iter().find(|x| x.id == *id))
                    .map(|x| x.label.clone())
                    .unwrap_or_default()
            }),
        )],
        JsEvent::Dequeue { queue, id, .. } | JsEvent::Cancel { queue, id } => {
            let label = before
                .queues
                .get(queue)
                .and_then(|q| q.iter().find(|x| x.id == *id))
                .map(|x| x.label.clone())
                .unwrap_or_default();
            let action = if matches!(e, JsEvent::Cancel { .. }) {
                "drop"
            } else {
                "pop"
            };
            vec![m(
                format!("queue:{}", queue.name()),
                action,
                Some(id.0.to_string()),
                label,
            )]
        }
        JsEvent::StackPush { frame, depth } => vec![m(
            "stack".into(),
            "push",
            Some(depth.to_string()),
            frame.clone(),
        )],
        JsEvent::StackPop { frame, depth } => vec![m(
            "stack".into(),
            "pop",
            Some((depth + 1).to_string()),
            frame.clone(),
        )],
        JsEvent::PromiseObserved { promise, via } => vec![m(
            format!("promise:{}", promise.0),
            "push",
            None,
            via.clone(),
        )],
        JsEvent::Promise { promise, .. } => {
            vec![m(format!("promise:{}", promise.0), "change", None, "slots")]
        }
        JsEvent::Output { text, .. } => vec![m("console".into(), "push", None, text.clone())],
        _ => Vec::new(),
    }
}

fn actor(before: &World, seq: u64, e: &ActorEvent) -> Vec<Moved> {
    use ActorEvent as A;
    let id = e.actor();
    let lane = |what: &str| format!("actor:{}:{what}", id.0);
    let view = before.actors.get(&id);
    let front = || view.and_then(|a| a.user.boxes.front().copied()).flatten();
    match e {
        A::Enqueue {
            lane: turno_trace::Lane::User,
            ..
        } => vec![m(
            lane("user"),
            "push",
            Some(seq.to_string()),
            format!("msg #{seq}"),
        )],
        A::Enqueue { .. } => vec![m(lane("system"), "push", None, "system message")],
        A::Drop { which, .. } => {
            let (item, label) = match which {
                Dropped::Oldest => boxname(front()),
                Dropped::Incoming => (None, "incoming msg".into()),
            };
            vec![m(lane("user"), "drop", item, label)]
        }
        A::Reject { .. } | A::Full { .. } | A::DeadLetter { .. } => {
            vec![m(lane("user"), "drop", None, "refused msg")]
        }
        A::TurnStart {
            what: TurnKind::Message | TurnKind::Reply,
            ..
        }
        | A::StaleReply { .. } => {
            let (item, label) = boxname(front());
            vec![m(lane("user"), "pop", item, label)]
        }
        A::TurnStart {
            what: TurnKind::Unstashed,
            ..
        } => {
            let b = view.and_then(|a| a.redelivery.front().copied()).flatten();
            let (item, label) = boxname(b);
            vec![m(lane("stash"), "pop", item, label)]
        }
        A::Stash { .. } => {
            let b = view.and_then(|a| a.current).flatten();
            let (item, label) = boxname(b);
            vec![m(lane("stash"), "push", item, label)]
        }
        A::TimerSet { timer, .. } => {
            vec![m(
                lane("timers"),
                "push",
                Some(timer.0.to_string()),
                timer.to_string(),
            )]
        }
        A::TimerFire { timer, .. } => {
            vec![m(
                lane("timers"),
                "pop",
                Some(timer.0.to_string()),
                timer.to_string(),
            )]
        }
        A::TimerCancel { timer, .. } => {
            vec![m(
                lane("timers"),
                "drop",
                Some(timer.0.to_string()),
                timer.to_string(),
            )]
        }
        A::ChartEnter { state, .. } => vec![m(
            format!("chart:{}", id.0),
            "push",
            Some(state.clone()),
            state.clone(),
        )],
        A::ChartExit { state, .. } => vec![m(
            format!("chart:{}", id.0),
            "pop",
            Some(state.clone()),
            state.clone(),
        )],
        _ => Vec::new(),
    }
}
