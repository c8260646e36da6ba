//! Bad documents and runaway charts: typed errors with positions, never a
//! panic or a hang.

use std::sync::Arc;

use turno_scxml::{load_str, script, LoadError, Processor};

const GOOD: &str = r#"<?xml version="1.0"?>
<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="ecmascript" initial="a">
  <datamodel><data id="n" expr="0"/></datamodel>
  <state id="a">
    <onentry><assign location="n" expr="n + 1"/><send event="tick" delay="1s"/></onentry>
    <transition event="tick" cond="n &gt; 0" target="p"/>
  </state>
  <parallel id="p">
    <state id="r1"><state id="x"/><history id="h" type="deep"><transition target="x"/></history></state>
    <state id="r2"><final id="f"/></state>
  </parallel>
</scxml>"#;

#[test]
fn every_truncation_is_an_error_with_a_position_or_a_document() {
    for (i, _) in GOOD.char_indices() {
        match load_str(&GOOD[..i], None) {
            Ok(_) => {}
            Err(e) => assert!(e.position().is_some(), "prefix {i}: {e}"),
        }
    }
    assert!(load_str(GOOD, None).is_ok());
}

#[test]
fn malformed_xml_names_line_and_column() {
    let e = load_str("<scxml>\n  <state id='a'>\n  </stat>\n</scxml>", None).unwrap_err();
    assert!(matches!(e, LoadError::Xml { .. }), "{e:?}");
    assert_eq!(e.position().unwrap().line, 3, "{e}");
    let e = load_str(
        "<scxml>\n  <state id='a'>\n    <onentry><raise/></onentry>",
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not closed"), "{e}");
    let e = load_str(
        "<scxml>\n<state id=\"a\">\n\t<bogus/></state></scxml>",
        None,
    )
    .unwrap_err();
    assert!(matches!(e, LoadError::Invalid { .. }));
    assert_eq!(
        (e.position().unwrap().line, e.position().unwrap().column),
        (3, 2),
        "{e}"
    );
}

#[test]
fn missing_src_is_an_io_error_at_the_element() {
    let e = load_str(
        "<scxml datamodel='ecmascript'>\n<datamodel><data id='d' src='file:no-such-file.json'/></datamodel></scxml>",
        None,
    )
    .unwrap_err();
    assert!(matches!(e, LoadError::Io { .. }), "{e:?}");
    assert_eq!(e.position().unwrap().line, 2);
    let e = load_str("<scxml><script src='/dev/zero'/></scxml>", None).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[test]
fn an_eventless_cycle_stops_with_an_error() {
    let doc = load_str(
        "<scxml><state id='a'><transition target='b'/></state><state id='b'><transition target='a'/></state></scxml>",
        None,
    )
    .unwrap();
    let mut sys = Processor::new();
    let s = sys.start(Arc::new(doc.clone())).unwrap();
    assert!(sys
        .session(s)
        .unwrap()
        .failure()
        .unwrap()
        .contains("microsteps"));
    assert!(!sys.is_running(s));
    let e = script::run(&doc, &[]).unwrap_err();
    assert!(e.to_string().contains("microsteps"));
}

#[test]
fn a_self_feeding_session_hits_the_step_budget() {
    let doc = load_str(
        "<scxml><state id='a'><onentry><send event='e'/></onentry><transition event='e' target='a'/></state></scxml>",
        None,
    )
    .unwrap();
    let mut sys = Processor::new();
    let _ = sys.start(Arc::new(doc)).unwrap();
    assert!(sys.run_until(0.0).is_err());
}

#[cfg(feature = "ecmascript")]
#[test]
fn a_runaway_script_is_an_error_not_a_hang() {
    use turno_scxml::datamodel::{DataModel, EcmaScript};
    let mut dm = EcmaScript::with_loop_limit(1000).unwrap();
    let e = dm.run_script("while (true) {}").unwrap_err();
    assert!(!e.0.is_empty());
    assert!(dm.eval_bool("(function () { for (;;) {} })()").is_err());
    // The engine is still usable afterwards.
    assert!(dm.eval_bool("1 + 1 === 2").unwrap());
}

#[test]
fn events_for_an_ended_session_or_a_foreign_handle_are_refused() {
    let doc = Arc::new(load_str("<scxml><final id='f'/></scxml>", None).unwrap());
    let mut sys = Processor::new();
    let s = sys.start(doc.clone()).unwrap();
    assert!(!sys.is_running(s));
    assert!(!sys.send(s, turno_scxml::Event::external("e", None)));
    assert_eq!(sys.atomic_states(s), ["f"]);
    let mut other = Processor::new();
    assert!(!other.send(s, turno_scxml::Event::external("e", None)));
    assert!(other.session(s).is_none());
}
