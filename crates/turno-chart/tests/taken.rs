//! An extension that asks for them ([`Extension::TAKEN`]) is told the
//! transitions each macrostep took, by their position in the machine,
//! where the configuration before and after cannot tell them apart: a
//! self-transition, and one of two transitions that differ only by guard.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use turno::{DetSystem, Props, System};
use turno_chart::interpreter::{ChartActor, ChartMsg, Extension, Stepped, Turn};
use turno_chart::{load_json, stdlib, Event, Machine};

/// Every macrostep's `taken`, in order.
struct Record<const TAKEN: bool>(Arc<Mutex<Vec<Vec<u32>>>>);

impl<const T: bool> Extension<Value> for Record<T> {
    type Msg = ();
    const TAKEN: bool = T;

    fn handle(_: &mut Turn<'_, '_, Value, Self>, _: ()) {}

    fn stepped(
        &mut self,
        _: &mut turno::Context<'_, ChartActor<Value, Self>>,
        step: Stepped<'_, Value>,
    ) {
        self.0.lock().unwrap().push(step.taken.to_vec());
    }
}

const MACHINE: &str = r#"{"id": "m", "initial": "start", "context": {"fast": false},
  "states": {
    "start": {"always": "a"},
    "a": {"on": {
      "GO": [
        {"target": "b", "guard": {"type": "ctxEq", "params": {"key": "fast", "value": true}}},
        {"target": "b"}],
      "AGAIN": {"target": "a", "reenter": true}}},
    "b": {"on": {"BACK": "a"}}}}"#;

fn run<const T: bool>(m: &Arc<Machine<Value>>) -> Vec<Vec<u32>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut sys = DetSystem::builder().build();
    let (machine, s) = (m.clone(), seen.clone());
    let chart = sys
        .spawn(Props::new(), move || {
            ChartActor::with_extension(machine.clone(), Record::<T>(s.clone()))
        })
        .unwrap();
    for e in ["AGAIN", "GO", "IGNORED", "BACK"] {
        let _ = chart.try_send(ChartMsg::Event(Event::new(e)));
        sys.run_until_idle().unwrap();
    }
    let out = seen.lock().unwrap().clone();
    out
}

#[test]
fn each_macrostep_names_the_transitions_it_took() {
    let m = Arc::new(load_json::<Value>(MACHINE, &stdlib::implementations()).unwrap());
    let find = |source: &str, event: Option<&str>, guarded: bool| -> u32 {
        let i = m
            .transitions()
            .iter()
            .position(|t| {
                *m.state(t.source).id == *source
                    && t.event.as_deref() == event
                    && t.guard.is_some() == guarded
            })
            .unwrap();
        i as u32
    };
    let go = find("m.a", Some("GO"), false);
    assert_eq!(find("m.a", Some("GO"), true) + 1, go);
    assert_eq!(
        run::<true>(&m),
        [
            vec![find("m.start", None, false)],
            vec![find("m.a", Some("AGAIN"), false)],
            vec![go],
            vec![],
            vec![find("m.b", Some("BACK"), false)],
        ]
    );
    // Not asked for, not collected.
    assert!(run::<false>(&m).iter().all(Vec::is_empty));
}
