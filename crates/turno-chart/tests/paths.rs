//! Shortest and simple paths, and model-based checks of an implementation.

use std::collections::HashMap;

use serde_json::Value;
use turno_chart::paths::{check_paths, default_key, Explorer, PathStep};
use turno_chart::{load_json, stdlib, Machine};

const DOOR: &str = r#"{"id": "door", "initial": "closed", "context": {"opened": 0},
  "states": {
    "closed": {"on": {"OPEN": {"target": "open", "actions": {"type": "inc", "params": {"key": "opened"}}},
                      "LOCK": "locked"}},
    "open": {"on": {"CLOSE": "closed"}, "after": {"3000": "alarm"}},
    "locked": {"on": {"UNLOCK": "closed"}},
    "alarm": {"on": {"CLOSE": "closed"}}
  }}"#;

fn door() -> Machine<Value> {
    load_json(DOOR, &stdlib::implementations()).unwrap()
}

fn limited(m: &Machine<Value>) -> Explorer<'_, Value> {
    // Bound the counter so the state space is finite.
    Explorer::new(m).events(|m, s| {
        let mut e = turno_chart::paths::handled_events(m, s);
        if s.context["opened"].as_u64().unwrap_or(0) >= 2 {
            e.retain(|e| e.name() != "OPEN");
        }
        e
    })
}

#[test]
fn shortest_paths_are_no_longer_than_any_simple_path_to_the_same_state() {
    let m = door();
    let shortest = limited(&m).shortest_paths().unwrap();
    let simple = limited(&m).simple_paths().unwrap();
    let mut best: HashMap<String, usize> = HashMap::new();
    for p in &simple {
        let k = default_key(&m, p.state());
        let e = best.entry(k).or_insert(usize::MAX);
        *e = (*e).min(p.steps.len());
    }
    assert_eq!(best.len(), shortest.len(), "both reach the same states");
    for p in &shortest {
        let k = default_key(&m, p.state());
        assert_eq!(best[&k], p.steps.len(), "{:?}", p.items());
    }
    // The alarm is reached by time passing.
    let alarm = shortest
        .iter()
        .find(|p| p.state().value(&m).to_json() == "alarm")
        .unwrap();
    assert_eq!(
        alarm.items(),
        vec![
            serde_json::json!({"type": "OPEN"}),
            serde_json::json!({"advance_ms": 3000})
        ]
    );
    assert!(simple.len() > shortest.len());
}

#[test]
fn the_limit_is_a_typed_error() {
    let m = door();
    // Unbounded counter: infinitely many states.
    let e = Explorer::new(&m).limit(50).shortest_paths().unwrap_err();
    assert!(e.to_string().contains("more than 50"), "{e}");
}

/// A hand-written door, as an implementation under test.
#[derive(Default)]
struct Door {
    state: &'static str,
    opened: u64,
    open_since: u64,
    now: u64,
    bug: bool,
}

impl Door {
    fn apply(&mut self, step: &PathStep) {
        match step {
            PathStep::Advance(ms) => {
                self.now += ms;
                if self.state == "open" && self.now - self.open_since >= 3000 {
                    self.state = "alarm";
                }
            }
            PathStep::Event(e) => {
                self.state = match (self.state, e.name()) {
                    ("closed", "OPEN") => {
                        self.opened += 1;
                        self.open_since = self.now;
                        "open"
                    }
                    // The bug: the lock does not engage.
                    ("closed", "LOCK") if self.bug => "closed",
                    ("closed", "LOCK") => "locked",
                    ("open" | "alarm", "CLOSE") => "closed",
                    ("locked", "UNLOCK") => "closed",
                    (s, _) => s,
                }
            }
        }
    }
}

#[test]
fn check_paths_passes_a_correct_implementation_and_names_where_a_wrong_one_fails() {
    let m = door();
    let paths = limited(&m).shortest_paths().unwrap();
    let check = |d: &Door, s: &turno_chart::Snapshot<Value>| {
        let want = s.value(&m).to_json();
        if want != d.state {
            return Err(format!("expected {want}, the door is {}", d.state));
        }
        if s.context["opened"] != d.opened {
            return Err("opened count differs".into());
        }
        Ok(())
    };
    let n = check_paths(
        &paths,
        || Door {
            state: "closed",
            ..Door::default()
        },
        Door::apply,
        check,
    )
    .unwrap();
    assert!(n > paths.len());
    let e = check_paths(
        &paths,
        || Door {
            state: "closed",
            bug: true,
            ..Door::default()
        },
        Door::apply,
        check,
    )
    .unwrap_err();
    assert_eq!(e.items, r#"[{"type":"LOCK"}]"#, "{e}");
    assert_eq!(e.step, 1);
    assert!(e.message.contains("expected \"locked\""), "{e}");
}
