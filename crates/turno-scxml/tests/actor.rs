//! Null-data-model documents as turno actors: on the deterministic
//! scheduler's virtual time and on the threaded one's real time, the W3C
//! null-data-model test, and the documents an actor refuses.

#![cfg(feature = "actor")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use turno::{DetSystem, Props, System, ThreadedSystem};
use turno_scxml::actor::{ScxmlActor, ScxmlActorError, ScxmlMsg};
use turno_scxml::model::DataModelKind;
use turno_scxml::{load_file, load_str, Event};

fn doc(text: &str) -> Arc<turno_scxml::Document> {
    Arc::new(load_str(text, None).unwrap())
}

/// After a turn: the configuration, the actor's time, the labels logged.
type Step = (Vec<String>, f64, Vec<String>);

const DOOR: &str = r#"
<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="null">
  <state id="closed">
    <transition event="open" target="opened"/>
  </state>
  <state id="opened">
    <onentry><log label="opened"/><send event="autoclose" delay="3s"/></onentry>
    <transition event="autoclose" target="closed"/>
    <transition event="lock" target="locked"/>
  </state>
  <final id="locked"/>
</scxml>"#;

#[test]
fn delayed_events_fall_due_on_the_systems_virtual_time() {
    let d = doc(DOOR);
    ScxmlActor::check(&d).unwrap();
    let steps: Arc<Mutex<Vec<Step>>> = Arc::default();
    let mut sys = DetSystem::new(3);
    let (d2, s2) = (d.clone(), steps.clone());
    let door = sys
        .spawn(Props::new().name("door"), move || {
            let s = s2.clone();
            ScxmlActor::new(d2.clone()).on_step(move |state, logs| {
                s.lock().unwrap().push((
                    state.atomic_states.clone(),
                    state.now_ms,
                    logs.iter().filter_map(|l| l.label.clone()).collect(),
                ))
            })
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    sys.advance(Duration::from_millis(500)).unwrap();
    assert!(door
        .try_send(ScxmlMsg::Event(Event::external("open", None)))
        .is_enqueued());
    sys.run_until_idle().unwrap();
    // Not yet: 2.9 s after opening.
    sys.advance(Duration::from_millis(2900)).unwrap();
    {
        let s = steps.lock().unwrap();
        assert_eq!(s.last().unwrap().0, ["opened"]);
    }
    sys.advance(Duration::from_millis(100)).unwrap();
    let s = steps.lock().unwrap().clone();
    assert_eq!(s.first().unwrap().0, ["closed"], "the initial macrostep");
    let opened = s.iter().find(|(c, _, _)| c == &["opened"]).unwrap();
    assert_eq!(opened.1, 500.0, "the event's time is the actor's time");
    assert_eq!(opened.2, ["opened"], "the <log> of that turn");
    let closed_again = s.last().unwrap();
    assert_eq!(closed_again.0, ["closed"]);
    assert_eq!(closed_again.1, 3500.0, "3 s after the open, to the ms");
    assert!(!door.is_closed(), "closed is not final: the actor goes on");
}

#[test]
fn the_actor_stops_when_its_session_ends_and_answers_state_until_then() {
    let d = doc(DOOR);
    let sys = ThreadedSystem::builder().threads(2).build();
    let door = sys
        .spawn(Props::new(), move || ScxmlActor::new(d.clone()))
        .unwrap();
    let state = door
        .ask_blocking(ScxmlMsg::State, Duration::from_secs(5))
        .unwrap();
    assert_eq!(state.atomic_states, ["closed"]);
    assert!(state.running);
    for e in ["open", "lock"] {
        assert!(door
            .try_send(ScxmlMsg::Event(Event::external(e, None)))
            .is_enqueued());
    }
    let give_up = Instant::now() + Duration::from_secs(5);
    while !door.is_closed() {
        assert!(
            Instant::now() < give_up,
            "the session reached its final state"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn the_w3c_null_data_model_test_passes_as_an_actor() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/scxml-w3c/test436.txml.scxml"
    );
    let d = Arc::new(load_file(std::path::Path::new(path)).unwrap());
    // The suite's criterion: the final configuration (the null data model
    // cannot evaluate the test's `<log expr>`).
    let outcome: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut sys = DetSystem::new(1);
    let o = outcome.clone();
    let a = sys
        .spawn(Props::new(), move || {
            let o = o.clone();
            ScxmlActor::new(d.clone())
                .on_step(move |state, _| *o.lock().unwrap() = state.atomic_states.clone())
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    assert_eq!(*outcome.lock().unwrap(), ["pass"]);
    assert!(
        a.is_closed(),
        "a top-level final ends the session and the actor"
    );
}

#[test]
fn an_ecmascript_document_is_refused_with_the_reason() {
    let d = doc(
        r#"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="ecmascript"><state id="a"/></scxml>"#,
    );
    let err = ScxmlActor::check(&d).unwrap_err();
    assert_eq!(err, ScxmlActorError::NotNull(DataModelKind::Ecmascript));
    assert!(
        err.to_string().contains("cannot move between threads"),
        "{err}"
    );
}

#[test]
fn an_invoked_ecmascript_child_never_runs_inside_the_actor() {
    // The child would tell its parent at once; under a null-only processor
    // it cannot start, so the parent never hears from it.
    let d = doc(
        r##"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="null">
      <state id="waiting">
        <invoke type="scxml"><content>
          <scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="ecmascript">
            <state id="c"><onentry><send target="#_parent" event="hello"/></onentry></state>
          </scxml>
        </content></invoke>
        <transition event="hello" target="heard"/>
      </state>
      <state id="heard"/>
    </scxml>"##,
    );
    ScxmlActor::check(&d).unwrap();
    let last: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut sys = DetSystem::new(1);
    let l = last.clone();
    let a = sys
        .spawn(Props::new(), move || {
            let l = l.clone();
            ScxmlActor::new(d.clone())
                .on_step(move |state, _| *l.lock().unwrap() = state.atomic_states.clone())
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    sys.advance(Duration::from_secs(1)).unwrap();
    assert!(a
        .try_send(ScxmlMsg::Event(Event::external("poke", None)))
        .is_enqueued());
    sys.run_until_idle().unwrap();
    assert_eq!(*last.lock().unwrap(), ["waiting"], "the child never ran");
    assert!(!a.is_closed());
}
