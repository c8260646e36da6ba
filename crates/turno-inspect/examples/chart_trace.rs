//! Records a real statechart run (turno-chart's interpreter on the
//! deterministic scheduler) as a trace, for the inspector's chart pane.
//!
//! `cargo run -p turno-inspect --example chart_trace -- OUT.jsonl` writes
//! the trace and prints, one line per macrostep, the chart's XState value.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use turno::trace::JsonLinesSink;
use turno::{DetSystem, Props, System};
use turno_chart::interpreter::{ChartActor, ChartMsg};
use turno_chart::{load_json, stdlib, Event};

/// A crossing: a light whose red phase is parallel (pedestrians, cars).
/// Green has two `TIMER` transitions to yellow that differ only by guard
/// (a rush hour that is not on): the second is taken, which only the
/// transition's recorded position tells from the first.
pub const CROSSING: &str = r#"{"id": "crossing", "initial": "light", "context": {"rush": false}, "states": {
  "light": {"initial": "green", "on": {"POWER_OFF": "off"}, "states": {
    "green": {"on": {"TIMER": [
      {"target": "yellow", "guard": {"type": "ctxEq", "params": {"key": "rush", "value": true}}},
      {"target": "yellow"}]}},
    "yellow": {"on": {"TIMER": "red"}},
    "red": {"type": "parallel", "on": {"TIMER": "green"}, "states": {
      "walk": {"initial": "go", "states": {"go": {"on": {"PED_DONE": "stop"}}, "stop": {}}},
      "cars": {"initial": "halt", "states": {"halt": {}}}}}}},
  "off": {"type": "final"}}}"#;

/// The events sent, one per virtual second.
pub const EVENTS: [&str; 5] = ["TIMER", "TIMER", "PED_DONE", "TIMER", "POWER_OFF"];

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "chart.jsonl".into());
    let file = std::fs::File::create(&out).expect("trace file");
    let values = Arc::new(Mutex::new(Vec::new()));
    let v = values.clone();
    let machine = Arc::new(load_json(CROSSING, &stdlib::implementations()).expect("machine"));
    let mut sys = DetSystem::builder()
        .trace(JsonLinesSink::new(std::io::BufWriter::new(file)))
        .build();
    let chart = sys
        .spawn(Props::new().name("crossing"), move || {
            let v = v.clone();
            ChartActor::new(machine.clone())
                .on_snapshot(move |value, _| v.lock().expect("values").push(value.to_string()))
        })
        .expect("chart");
    sys.run_until_idle().expect("start");
    for e in EVENTS {
        sys.advance(Duration::from_secs(1)).expect("advance");
        let _ = chart.try_send(ChartMsg::Event(Event::new(e)));
        sys.run_until_idle().expect("event");
    }
    sys.flush_trace();
    for v in values.lock().expect("values").iter() {
        println!("{v}");
    }
}
