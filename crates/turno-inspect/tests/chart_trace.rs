//! A real statechart run (turno-chart's interpreter) read back: every
//! chart event of the runtime's trace is a typed extension event, and the
//! configuration reconstructed after each macrostep is the one the chart
//! itself reported.

use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use turno::trace::JsonLinesSink;
use turno::{DetSystem, Props, System};
use turno_chart::interpreter::{ChartActor, ChartMsg};
use turno_chart::{load_json, stdlib, Event};
use turno_trace::{ActorEvent, Index, Kind, Reader};

#[path = "../examples/chart_trace.rs"]
#[allow(dead_code)]
mod example;

/// The leaf state names of an XState value (`"a"`, `{"a": "b"}`, ...).
fn leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Object(m) => m.values().for_each(|x| leaves(x, out)),
        _ => {}
    }
}

fn last_segment(id: &str) -> String {
    id.rsplit('.').next().unwrap_or(id).to_owned()
}

#[test]
fn reconstructed_configurations_match_the_charts_own_snapshots() {
    let (sink, buffer) = JsonLinesSink::in_memory();
    let values = Arc::new(Mutex::new(Vec::<Value>::new()));
    let v = values.clone();
    let machine = Arc::new(load_json(example::CROSSING, &stdlib::implementations()).unwrap());
    let mut sys = DetSystem::builder().trace(sink).build();
    let chart = sys
        .spawn(Props::new().name("crossing"), move || {
            let v = v.clone();
            ChartActor::new(machine.clone())
                .on_snapshot(move |value, _| v.lock().unwrap().push(value.clone()))
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    for e in example::EVENTS {
        sys.advance(Duration::from_secs(1)).unwrap();
        let _ = chart.try_send(ChartMsg::Event(Event::new(e)));
        sys.run_until_idle().unwrap();
    }
    sys.flush_trace();
    let text = buffer.text();

    let reader = Reader::new(text.as_bytes()).unwrap();
    let events: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    assert!(
        events.iter().all(|e| !matches!(e.kind, Kind::Other(_))),
        "every kind is known"
    );
    assert!(events.iter().any(|e| matches!(&e.kind, Kind::Actor(ActorEvent::ChartDefine { states, .. }) if states.len() >= 9)));

    // After each turn of the chart actor that delivered a macrostep, the
    // active leaves are the leaves of the value the chart reported.
    let index = Index::build_with(Cursor::new(&text), 7).unwrap();
    let id = chart.id().as_u64();
    let mut seen = Vec::new();
    for (k, e) in events.iter().enumerate() {
        if let Kind::Actor(ActorEvent::TurnEnd { actor, .. }) = &e.kind {
            if actor.0 != id {
                continue;
            }
            let w = index.world_at(Cursor::new(&text), k as u64 + 1).unwrap();
            let c = &w.charts[&turno_trace::ActorId(id)];
            // A leaf: a defined state none of whose children is active (the
            // machine's root is entered but, having no parent, not defined).
            let parent_of = |s: &str| {
                c.states
                    .iter()
                    .find(|d| d.id == s)
                    .map(|d| d.parent.clone())
            };
            let mut active: Vec<String> = c
                .active
                .iter()
                .filter(|s| parent_of(s).is_some())
                .filter(|s| {
                    !c.active
                        .iter()
                        .any(|o| parent_of(o) == Some(Some((*s).clone())))
                })
                .map(|s| last_segment(s))
                .collect();
            active.sort();
            if seen.last() != Some(&active) {
                seen.push(active);
            }
        }
    }
    let want: Vec<Vec<String>> = values
        .lock()
        .unwrap()
        .iter()
        .map(|v| {
            let mut l = Vec::new();
            leaves(v, &mut l);
            l.sort();
            l
        })
        .collect();
    assert_eq!(seen, want);
    assert_eq!(want.last().unwrap(), &["off"]);
    assert!(want.contains(&vec!["go".to_string(), "halt".to_string()]));
}
