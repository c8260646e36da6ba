//! `turno chart run` for SCXML (the JSON-config contract), the null data
//! model's `In()`, and the Mermaid export.

use serde_json::json;
use turno_scxml::{load_str, mermaid::to_mermaid, script};

/// The items of a `turno chart run` EVENTS array, for these tests (the
/// command's contract is turno-cli's: `crates/turno-cli/src/events.rs`).
fn items(v: &serde_json::Value) -> Vec<script::Item> {
    let item = |i: &serde_json::Value| match i.get("advance_ms") {
        Some(ms) => script::Item::Advance(ms.as_u64().expect("milliseconds")),
        None => {
            let mut o = i.as_object().expect("an event object").clone();
            let name = o.remove("type").expect("a type");
            let data = (!o.is_empty()).then_some(serde_json::Value::Object(o));
            script::Item::Event(turno_scxml::Event::external(
                name.as_str().expect("a string type"),
                data,
            ))
        }
    };
    v.as_array().expect("an array").iter().map(item).collect()
}

fn lines(doc: &str, events: serde_json::Value) -> Vec<String> {
    let doc = load_str(doc, None).unwrap();
    script::run(&doc, &items(&events))
        .unwrap()
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect()
}

#[test]
fn delayed_events_fire_on_advance_and_done_is_reported() {
    let out = lines(
        r#"<scxml initial="idle">
             <state id="idle"><transition event="start" target="busy"/></state>
             <state id="busy">
               <onentry><send event="timeout" delay="1s" id="t"/></onentry>
               <transition event="timeout" target="over"/>
               <transition event="abort" target="idle"><cancel sendid="t"/></transition>
             </state>
             <final id="over"/>
           </scxml>"#,
        json!([{"type": "start"}, {"advance_ms": 999}, {"type": "abort"}, {"advance_ms": 5000},
               {"type": "start"}, {"advance_ms": 1000}]),
    );
    assert_eq!(
        out,
        [
            r#"{"step":0,"value":"idle","status":"active"}"#,
            r#"{"step":1,"value":"busy","status":"active"}"#,
            r#"{"step":2,"value":"busy","status":"active"}"#,
            r#"{"step":3,"value":"idle","status":"active"}"#,
            r#"{"step":4,"value":"idle","status":"active"}"#,
            r#"{"step":5,"value":"busy","status":"active"}"#,
            r#"{"step":6,"value":"over","status":"done"}"#,
        ]
    );
}

#[test]
fn null_data_model_in_predicate_and_nested_values() {
    let out = lines(
        r#"<scxml initial="p" datamodel="null">
             <parallel id="p">
               <state id="a" initial="a1">
                 <state id="a1"><transition event="go" target="a2"/></state>
                 <state id="a2"/>
               </state>
               <state id="b" initial="b1">
                 <state id="b1"><transition event="go" cond="In('a2')" target="b2"/></state>
                 <state id="b2"/>
               </state>
             </parallel>
           </scxml>"#,
        json!([{"type": "go"}, {"type": "go"}]),
    );
    assert_eq!(
        out,
        [
            r#"{"step":0,"value":{"p":{"a":"a1","b":"b1"}},"status":"active"}"#,
            // Both regions see `go` in the same microstep, before a2 is entered.
            r#"{"step":1,"value":{"p":{"a":"a2","b":"b1"}},"status":"active"}"#,
            r#"{"step":2,"value":{"p":{"a":"a2","b":"b2"}},"status":"active"}"#,
        ]
    );
}

#[cfg(feature = "ecmascript")]
#[test]
fn event_fields_become_event_data() {
    let out = lines(
        r#"<scxml initial="s" datamodel="ecmascript">
             <datamodel><data id="total" expr="0"/></datamodel>
             <state id="s">
               <transition event="add" cond="_event.data.n > 0"><assign location="total" expr="total + _event.data.n"/></transition>
               <transition event="check" cond="total === 5" target="ok"/>
             </state>
             <final id="ok"/>
           </scxml>"#,
        json!([{"type": "add", "n": 2}, {"type": "add", "n": -7}, {"type": "add", "n": 3}, {"type": "check"}]),
    );
    assert_eq!(out[4], r#"{"step":4,"value":"ok","status":"done"}"#);
}

#[test]
fn mermaid_shows_composites_regions_history_and_finals() {
    let doc = load_str(
        r#"<scxml initial="main">
             <state id="main" initial="p">
               <parallel id="p">
                 <state id="r1"><state id="x"/><history id="h" type="deep"><transition target="x"/></history></state>
                 <state id="r2"/>
               </parallel>
               <transition event="stop" cond="In('x')" target="end.state"/>
             </state>
             <final id="end.state"/>
           </scxml>"#,
        None,
    )
    .unwrap();
    let m = to_mermaid(&doc);
    let expected = "stateDiagram-v2
  [*] --> main
  state main {
    [*] --> p
    state p {
      state r1 {
        [*] --> x
        x
        h : H*
      }
      --
      r2
    }
  }
  state \"end.state\" as s7_end_state
  s7_end_state --> [*]
  h --> x
  main --> s7_end_state : stop [In('x')]
";
    assert_eq!(m, expected);
}
