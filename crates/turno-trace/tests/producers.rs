//! A real trace from each producer (the JavaScript explorer, the turno
//! runtime, turno-chart on the runtime), recorded by `data/record.sh`: the
//! reader knows every kind and field they write.

use std::io::Cursor;

use serde_json::Value;
use turno_trace::js::{DrivenBy, MainThread, TaskSource};
use turno_trace::{read_all, DropPolicy, Index, JsEvent, Kind, Queue};

const JS_ANIM: &str = include_str!("data/html_anim_input.jsonl");
const JS_NODE: &str = include_str!("data/node_combinators.jsonl");
const JS_RAF: &str = include_str!("data/html_raf.jsonl");
const RUNTIME: &str = include_str!("data/overload_keep_oldest.jsonl");
const CHART: &str = include_str!("data/chart_crossing.jsonl");

const ALL: [(&str, &str); 5] = [
    ("html_anim_input", JS_ANIM),
    ("node_combinators", JS_NODE),
    ("html_raf", JS_RAF),
    ("overload_keep_oldest", RUNTIME),
    ("chart_crossing", CHART),
];

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim().is_empty())
}

#[test]
fn every_kind_every_producer_writes_is_known() {
    for (name, text) in ALL {
        let (_, events) = read_all(text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        for e in &events {
            assert!(
                !matches!(e.kind, Kind::Other(_)),
                "{name}: seq {} has a kind the reader does not know: {}",
                e.seq,
                e.kind_name()
            );
        }
        let index = Index::build(Cursor::new(text)).unwrap();
        assert!(index.error().is_none(), "{name}");
        assert_eq!(index.unknown_kinds(), 0, "{name}");
        assert_eq!(index.len() as usize, events.len(), "{name}");
    }
}

#[test]
fn no_field_is_lost_in_the_typed_events() {
    // Each line as the producer wrote it equals, as JSON, the typed event
    // written back: every field was read, none invented.
    for (name, text) in ALL {
        let (_, events) = read_all(text.as_bytes()).unwrap();
        for (line, e) in lines(text).skip(1).zip(&events) {
            let written: Value = serde_json::from_str(line).unwrap();
            let again: Value = serde_json::from_str(&e.to_line()).unwrap();
            assert_eq!(written, again, "{name}: {line}");
        }
    }
}

#[test]
fn the_runtime_traces_round_trip_byte_for_byte() {
    // The runtime and turno-chart write through turno-trace's types: reading
    // and writing again gives the same bytes (the wire format is the one
    // recorded).
    for (name, text) in [("overload_keep_oldest", RUNTIME), ("chart_crossing", CHART)] {
        let (header, events) = read_all(text.as_bytes()).unwrap();
        let mut again = header.to_line();
        again.push('\n');
        for e in &events {
            again.push_str(&e.to_line());
            again.push('\n');
        }
        assert_eq!(again, text, "{name}");
    }
}

#[test]
fn the_html_trace_reconstructs_animations_input_and_the_compositor() {
    let index = Index::build_with(Cursor::new(JS_ANIM), 8).unwrap();
    let (_, events) = read_all(JS_ANIM.as_bytes()).unwrap();
    // Scripted input became user-interaction tasks that say when it came.
    let inputs: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::Js(JsEvent::Enqueue {
                queue: Queue::Task,
                source: Some(TaskSource::UserInteraction),
                input_at_ns,
                ..
            }) => *input_at_ns,
            _ => None,
        })
        .collect();
    assert_eq!(inputs, [10_000_000, 80_000_000]);
    // Right after both animations started: one on the compositor, one on
    // the main thread.
    let started = events
        .iter()
        .filter(|e| matches!(e.kind, Kind::Js(JsEvent::AnimationStart { .. })))
        .map(|e| e.seq)
        .max()
        .unwrap();
    let w = index.world_at(Cursor::new(JS_ANIM), started + 1).unwrap();
    let drivers: Vec<DrivenBy> = w.js.animations.values().map(|a| a.driven_by).collect();
    assert_eq!(drivers, [DrivenBy::Compositor, DrivenBy::MainThread]);
    // The compositor drew while the 40 ms loop blocked the main thread.
    let end = index.world_at(Cursor::new(JS_ANIM), index.len()).unwrap();
    let frames = events
        .iter()
        .filter(|e| matches!(e.kind, Kind::Js(JsEvent::CompositorFrame { .. })))
        .count() as u64;
    assert!(frames >= 2, "{frames}");
    assert_eq!(end.js.compositor_frames, frames);
    let first_frame = events
        .iter()
        .find_map(|e| match &e.kind {
            Kind::Js(JsEvent::CompositorFrame { main_thread, .. }) => Some(*main_thread),
            _ => None,
        })
        .unwrap();
    assert_eq!(first_frame, MainThread::Busy);
    // `grow` was cancelled; `slide` (200 ms) outlives the run.
    let left: Vec<DrivenBy> = end.js.animations.values().map(|a| a.driven_by).collect();
    assert_eq!(left, [DrivenBy::Compositor]);
    assert!(end.t_ns < 200_000_000);
}

#[test]
fn the_runtime_and_chart_traces_reconstruct() {
    let index = Index::build(Cursor::new(RUNTIME)).unwrap();
    let end = index.world_at(Cursor::new(RUNTIME), index.len()).unwrap();
    let drops = RUNTIME.matches("\"kind\":\"drop\"").count() as u64;
    assert!(drops > 0);
    assert_eq!(
        end.totals.dropped.get(&DropPolicy::KeepOldest),
        Some(&drops)
    );

    let index = Index::build(Cursor::new(CHART)).unwrap();
    let end = index.world_at(Cursor::new(CHART), index.len()).unwrap();
    let chart = end.charts.values().next().unwrap();
    assert_eq!(chart.machine.as_deref(), Some("crossing"));
    assert!(chart.active.contains("crossing.off"), "{:?}", chart.active);
}
