//! `turno chart run --show`: which fields a line carries, and in what
//! order (the values themselves are compared with XState's in the
//! differential corpus).

use std::sync::Arc;

use serde_json::Value;
use turno_chart::script::{self, Item, Show};
use turno_chart::tree::Charts;
use turno_chart::{load_json, stdlib, Event};

const MACHINE: &str = r#"{"id": "m", "initial": "a", "context": {"n": 0},
  "states": {"a": {"invoke": {"id": "w", "src": "never"},
    "on": {"GO": {"actions": [{"type": "inc", "params": {"key": "n"}},
      {"type": "emit", "params": {"event": {"type": "WENT", "n": 1}}},
      {"type": "log", "params": {"message": "went"}}]},
     "BAD": {"actions": {"type": "sendTo", "params": {"to": "nobody", "event": {"type": "X"}}}}}}}}"#;

fn keys(show: Show) -> Vec<Vec<String>> {
    let m = load_json::<Value>(MACHINE, &stdlib::implementations()).unwrap();
    let items = [
        Item::Event(Event::new("GO")),
        Item::Advance(10),
        Item::Event(Event::new("BAD")),
    ];
    let run = script::run_shown(&m, Arc::new(Charts::new()), &items, None, show).unwrap();
    run.lines
        .iter()
        .map(|l| {
            let text = serde_json::to_string(l).unwrap();
            // The keys in the order they are written.
            let v: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
            let mut ks: Vec<(usize, String)> = v
                .keys()
                .map(|k| (text.find(&format!("\"{k}\":")).unwrap(), k.clone()))
                .collect();
            ks.sort();
            ks.into_iter().map(|(_, k)| k).collect()
        })
        .collect()
}

#[test]
fn the_fields_asked_for_follow_step_value_status_in_a_fixed_order() {
    let plain = keys(Show::default());
    assert_eq!(plain[0], ["step", "value", "status"]);
    assert_eq!(plain[3], ["step", "value", "status", "error"]);
    let all = keys(Show::parse(" log , children,context,emitted").unwrap());
    assert_eq!(
        all[1],
        ["step", "value", "status", "context", "emitted", "log", "children"]
    );
    assert_eq!(
        all[3],
        ["step", "value", "status", "error", "context", "emitted", "log", "children"]
    );
    assert_eq!(
        keys(Show::parse("log").unwrap())[2],
        ["step", "value", "status", "log"]
    );
}

#[test]
fn the_values_are_the_items_own() {
    let m = load_json::<Value>(MACHINE, &stdlib::implementations()).unwrap();
    let items = [Item::Event(Event::new("GO")), Item::Advance(10)];
    let run = script::run_shown(&m, Arc::new(Charts::new()), &items, None, Show::ALL).unwrap();
    let line = |i: usize| serde_json::to_value(&run.lines[i]).unwrap();
    assert_eq!(line(1)["context"], serde_json::json!({"n": 1}));
    assert_eq!(
        line(1)["emitted"],
        serde_json::json!([{"type": "WENT", "n": 1}])
    );
    assert_eq!(line(1)["log"], serde_json::json!(["went"]));
    assert_eq!(
        line(1)["children"],
        serde_json::json!({"w": {"src": "never", "status": "active"}})
    );
    // What an item emitted and logged is its own line's only.
    assert_eq!(line(2)["emitted"], serde_json::json!([]));
    assert_eq!(line(2)["log"], serde_json::json!([]));
}

#[test]
fn an_unknown_field_is_named() {
    let e = Show::parse("context,state").unwrap_err();
    assert!(e.contains("\"state\""), "{e}");
    assert_eq!(Show::parse("").unwrap(), Show::default());
}
