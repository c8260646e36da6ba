//! Each point where [`Semantics::Scxml`] departs from XState: the same
//! definition run under both rule sets, and the difference asserted.

use std::sync::Arc;

use serde_json::{json, Value};

use super::Semantics;
use crate::actions::ActionScope;
use crate::spec::{
    ActionSpec, GuardSpec, InitialSpec, KindSpec, OutputSpec, StateSpec, TransitionSpec,
};
use crate::{continue_macrostep, exit_interpreter, initial_transition, transition_in_place};
use crate::{ChartError, Event, Machine, Snapshot, Status};

/// An action appending `name` to the context's `log`.
fn log(name: &str) -> ActionSpec<Value> {
    let n = name.to_owned();
    ActionSpec {
        name: n.clone(),
        params: Value::Null,
        imp: Arc::new(move |s: &mut ActionScope<'_, Value>| {
            let c = s.context_mut();
            c["log"]
                .as_array_mut()
                .expect("log")
                .push(Value::String(n.clone()));
        }),
    }
}

/// An action that changes nothing (XState then does not re-select
/// eventless transitions).
fn noop() -> ActionSpec<Value> {
    ActionSpec {
        name: "noop".into(),
        params: Value::Null,
        imp: Arc::new(|_: &mut ActionScope<'_, Value>| {}),
    }
}

fn st(key: &str) -> StateSpec<Value> {
    let mut s = StateSpec::new(key, format!("$.{key}"));
    s.id = Some(key.to_owned());
    s.entry.push(log(&format!("enter {key}")));
    s.exit.push(log(&format!("exit {key}")));
    s
}

fn compound(key: &str, initial: &str, kids: Vec<StateSpec<Value>>) -> StateSpec<Value> {
    let mut s = st(key);
    s.initial = Some(InitialSpec {
        target: initial.into(),
        actions: vec![log(&format!("initial {key}"))],
        path: format!("$.{key}.initial"),
    });
    s.states = kids;
    s
}

fn parallel(key: &str, kids: Vec<StateSpec<Value>>) -> StateSpec<Value> {
    let mut s = st(key);
    s.kind = KindSpec::Parallel;
    s.states = kids;
    s
}

fn on(s: &mut StateSpec<Value>, event: &str, targets: &[&str], actions: Vec<ActionSpec<Value>>) {
    let mut t = TransitionSpec::to(targets.iter().map(|t| format!("#{t}")).collect(), "$.t");
    t.actions = actions;
    s.on.push((event.into(), vec![t]));
}

fn run(
    spec: impl Fn() -> StateSpec<Value>,
    sem: Semantics,
    events: &[&str],
) -> (Machine<Value>, Snapshot<Value>) {
    let m = Machine::with_semantics(spec(), json!({"log": []}), None, sem).unwrap();
    let (mut s, _) = initial_transition(&m).unwrap();
    for e in events {
        let mut a = Vec::new();
        transition_in_place(&m, &mut s, Event::new(*e), &mut a).unwrap();
    }
    (m, s)
}

fn logged(s: &Snapshot<Value>) -> Vec<String> {
    s.context["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn active(m: &Machine<Value>, s: &Snapshot<Value>) -> Vec<String> {
    s.active_ids(m).into_iter().map(str::to_owned).collect()
}

#[test]
fn descriptors_match_by_prefix_in_document_order_under_scxml() {
    let spec = || {
        let mut a = st("a");
        on(&mut a, "e", &["x"], vec![]);
        on(&mut a, "e.f", &["y"], vec![]);
        compound("m", "a", vec![a, st("x"), st("y")])
    };
    // XState: the exact descriptor first.
    let (m, s) = run(spec, Semantics::XState, &["e.f"]);
    assert_eq!(active(&m, &s), ["m", "y"]);
    // SCXML: document order, and `e` matches `e.f`.
    let (m, s) = run(spec, Semantics::Scxml, &["e.f"]);
    assert_eq!(active(&m, &s), ["m", "x"]);
    // A descriptor list.
    let spec2 = || {
        let mut a = st("a");
        on(&mut a, "p q.*", &["x"], vec![]);
        compound("m", "a", vec![a, st("x")])
    };
    let (m, s) = run(spec2, Semantics::Scxml, &["q.r"]);
    assert_eq!(active(&m, &s), ["m", "x"]);
}

#[test]
fn a_parallel_states_transition_competes_with_its_regions_under_scxml() {
    // r1's atomic state has a targetless transition; r2's has none, so
    // SCXML walks up to the parallel state and takes its transition too.
    let spec = || {
        let mut a = st("a");
        on(&mut a, "e", &[], vec![log("a's action")]);
        let mut p = parallel(
            "p",
            vec![
                compound("r1", "a", vec![a]),
                compound("r2", "b", vec![st("b")]),
            ],
        );
        on(&mut p, "e", &[], vec![log("p's action")]);
        compound("m", "p", vec![p])
    };
    let (_, s) = run(spec, Semantics::XState, &["e"]);
    assert!(logged(&s).ends_with(&["a's action".to_owned()]));
    let (_, s) = run(spec, Semantics::Scxml, &["e"]);
    assert!(logged(&s).ends_with(&["a's action".to_owned(), "p's action".to_owned()]));
}

#[test]
fn the_domain_skips_parallel_ancestors_under_scxml() {
    // A transition from one region to the other: XState's domain is the
    // parallel state (it stays); SCXML's is the compound above it, so the
    // parallel state is exited and entered again.
    let spec = || {
        let mut a = st("a");
        on(&mut a, "e", &["b2"], vec![]);
        let p = parallel(
            "p",
            vec![
                compound("r1", "a", vec![a]),
                compound("r2", "b", vec![st("b"), st("b2")]),
            ],
        );
        compound("m", "p", vec![p])
    };
    let (_, s) = run(spec, Semantics::XState, &["e"]);
    assert!(!logged(&s).contains(&"exit p".to_owned()));
    let (_, s) = run(spec, Semantics::Scxml, &["e"]);
    assert!(logged(&s).contains(&"exit p".to_owned()));
    assert!(logged(&s).ends_with(&[
        "enter p".into(),
        "enter r1".into(),
        "initial r1".into(),
        "enter a".into(),
        "enter r2".into(),
        "enter b2".into()
    ]));
}

#[test]
fn a_non_reentering_transition_to_its_own_source_exits_it_under_scxml() {
    // XState: `reenter: false` to the source itself exits nothing. SCXML: an
    // internal transition keeps its source only for proper descendants.
    let spec = || {
        let mut s = compound("s", "c", vec![st("c")]);
        on(&mut s, "e", &["s"], vec![]);
        s.on[0].1[0].reenter = false;
        compound("m", "s", vec![s])
    };
    let (_, s) = run(spec, Semantics::XState, &["e"]);
    assert!(!logged(&s).contains(&"exit s".to_owned()));
    let (_, s) = run(spec, Semantics::Scxml, &["e"]);
    assert!(logged(&s).contains(&"exit s".to_owned()));
    // To a descendant it keeps the source in both.
    let spec2 = || {
        let mut s = compound("s", "c", vec![st("c"), st("d")]);
        on(&mut s, "e", &["d"], vec![]);
        s.on[0].1[0].reenter = false;
        compound("m", "s", vec![s])
    };
    for sem in [Semantics::XState, Semantics::Scxml] {
        let (_, s) = run(spec2, sem, &["e"]);
        assert!(!logged(&s).contains(&"exit s".to_owned()), "{sem:?}");
    }
}

#[test]
fn done_events_are_scxmls_with_data_and_do_not_bubble_past_the_grandparent() {
    // p (parallel) > q (parallel) > r (compound) > f (final): XState
    // raises done for r, q and p; SCXML for r and q only.
    let spec = || {
        let mut f = st("f");
        f.kind = KindSpec::Final;
        f.output = Some(OutputSpec::Value(json!({"k": 1})));
        let mut start = st("start");
        on(&mut start, "go", &["f"], vec![]);
        let r = compound("r", "start", vec![start, f]);
        let q = parallel("q", vec![r]);
        let mut p = parallel("p", vec![q]);
        for (d, name) in [
            ("xstate.done.state.r", "x r"),
            ("xstate.done.state.q", "x q"),
            ("xstate.done.state.p", "x p"),
            ("done.state.r", "s r"),
            ("done.state.q", "s q"),
            ("done.state.p", "s p"),
        ] {
            let mut t = TransitionSpec::to(vec![], "$.t");
            t.actions = vec![log(name)];
            p.on.push((d.into(), vec![t]));
        }
        compound("m", "p", vec![p])
    };
    let (_, s) = run(spec, Semantics::XState, &["go"]);
    let l = logged(&s);
    assert!(
        l.ends_with(&["x r".into(), "x q".into(), "x p".into()]),
        "{l:?}"
    );
    let (_, s) = run(spec, Semantics::Scxml, &["go"]);
    let l = logged(&s);
    assert!(l.ends_with(&["s r".into(), "s q".into()]), "{l:?}");
    assert!(!l.contains(&"s p".to_owned()));
}

#[test]
fn the_done_event_carries_the_done_data_under_data() {
    let spec = || {
        let mut f = st("f");
        f.kind = KindSpec::Final;
        f.output = Some(OutputSpec::Value(json!(7)));
        let mut r = compound("r", "f", vec![f]);
        r.on.push((
            "done.state.r".into(),
            vec![TransitionSpec::to(vec!["#after".into()], "$.t")],
        ));
        compound("m", "r", vec![r, st("after")])
    };
    let m = Machine::with_semantics(spec(), json!({"log": []}), None, Semantics::Scxml)
        .unwrap()
        .with_event_hook(Arc::new(|c: &mut Value, e: &Event| {
            if e.name() == "done.state.r" {
                c["seen"] = e.get("data").cloned().unwrap_or(Value::Null);
            }
            Vec::new()
        }));
    let (s, _) = initial_transition(&m).unwrap();
    assert_eq!(s.context["seen"], json!(7));
    assert_eq!(active(&m, &s), ["m", "after"]);
}

#[test]
fn scxml_reselects_eventless_transitions_after_every_microstep() {
    // A targetless eventless transition that changes nothing: XState stops
    // after one microstep, SCXML takes it again and again (a runaway loop).
    let spec = || {
        let mut a = st("a");
        let mut t = TransitionSpec::to(vec![], "$.t");
        t.actions = vec![noop()];
        a.always.push(t);
        compound("m", "a", vec![a])
    };
    let m = Machine::with_semantics(spec(), json!({"log": []}), None, Semantics::XState).unwrap();
    assert!(initial_transition(&m).is_ok());
    let m = Machine::with_semantics(spec(), json!({"log": []}), None, Semantics::Scxml)
        .unwrap()
        .with_max_microsteps(50);
    assert!(matches!(
        initial_transition(&m),
        Err(ChartError::RunawayLoop { .. })
    ));
}

#[test]
fn a_failing_guard_raises_its_error_and_counts_as_false() {
    for sem in [Semantics::XState, Semantics::Scxml] {
        let spec = || {
            let mut a = st("a");
            let mut t = TransitionSpec::to(vec!["#b".into()], "$.t");
            t.guard = Some(GuardSpec::Try {
                name: "throws".into(),
                imp: Arc::new(|_, _| Err(Event::new("error.execution"))),
            });
            a.on.push(("e".into(), vec![t]));
            on(&mut a, "error.execution", &["c"], vec![]);
            compound("m", "a", vec![a, st("b"), st("c")])
        };
        let (m, s) = run(spec, sem, &["e"]);
        assert_eq!(active(&m, &s), ["m", "c"], "{sem:?}");
    }
}

#[test]
fn scxml_initial_transitions_may_target_deep_states_and_run_their_content() {
    let spec = || {
        let inner = compound("inner", "i1", vec![st("i1"), st("i2")]);
        let mut outer = compound("outer", "inner", vec![inner, st("o2")]);
        outer.initial_targets = vec!["#i2".into()];
        compound("m", "outer", vec![outer])
    };
    let (m, s) = run(spec, Semantics::Scxml, &[]);
    assert_eq!(active(&m, &s), ["m", "outer", "inner", "i2"]);
    let l = logged(&s);
    // outer's initial transition ran; inner was entered as an ancestor of
    // the target, not by its own initial transition.
    assert!(l.contains(&"initial outer".to_owned()));
    assert!(!l.contains(&"initial inner".to_owned()));
    // XState's initial states are `initial` children: it ignores them.
    let (m, s) = run(spec, Semantics::XState, &[]);
    assert_eq!(active(&m, &s), ["m", "outer", "inner", "i1"]);
}

#[test]
fn scxml_enters_sibling_regions_and_remembered_states_by_their_initial_transition() {
    // A transition into region r1 enters r2 as a sibling region: SCXML
    // runs r2's initial transition content, XState does not.
    let spec = || {
        let mut start = st("start");
        on(&mut start, "e", &["a"], vec![]);
        let p = parallel(
            "p",
            vec![
                compound("r1", "a", vec![st("a")]),
                compound("r2", "b", vec![st("b")]),
            ],
        );
        compound("m", "start", vec![start, p])
    };
    let (_, s) = run(spec, Semantics::XState, &["e"]);
    assert!(!logged(&s).contains(&"initial r2".to_owned()));
    let (_, s) = run(spec, Semantics::Scxml, &["e"]);
    assert!(logged(&s).contains(&"initial r2".to_owned()));
}

#[test]
fn a_history_default_runs_its_content_after_the_parents_entry_under_scxml() {
    let spec = || {
        let mut h = StateSpec::new("h", "$.h");
        h.id = Some("h".into());
        h.kind = KindSpec::History { deep: false };
        h.history_target = Some(vec!["#y".into()]);
        h.history_actions = vec![log("history default")];
        let mut start = st("start");
        on(&mut start, "e", &["h"], vec![]);
        let s = compound("s", "x", vec![h, st("x"), st("y")]);
        compound("m", "start", vec![start, s])
    };
    let (m, s) = run(spec, Semantics::Scxml, &["e"]);
    assert_eq!(active(&m, &s), ["m", "s", "y"]);
    let l = logged(&s);
    let at = |n: &str| {
        l.iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n} in {l:?}"))
    };
    assert!(at("enter s") < at("history default") && at("history default") < at("enter y"));
    let (_, s) = run(spec, Semantics::XState, &["e"]);
    assert!(!logged(&s).contains(&"history default".to_owned()));
}

#[test]
fn a_top_level_final_halts_with_its_done_data_read_on_exit_under_scxml() {
    let spec = || {
        let mut f = st("f");
        f.kind = KindSpec::Final;
        f.output = Some(OutputSpec::Try(Arc::new(|c: &Value, _| {
            Ok(json!(c["log"].as_array().unwrap().len()))
        })));
        let mut a = st("a");
        on(&mut a, "e", &["f"], vec![]);
        let mut root = compound("m", "a", vec![a, f]);
        // Under XState the root's own output is the machine's.
        root.output = Some(OutputSpec::Value(json!("xstate output")));
        root
    };
    let (_, s) = run(spec, Semantics::Scxml, &["e"]);
    assert_eq!(s.status, Status::Done);
    let l = logged(&s);
    // f's exit ran before its done data was read; no done event for the root.
    assert_eq!(l.last().unwrap(), "exit m");
    let n = l.iter().position(|x| x == "exit f").unwrap() + 1;
    assert_eq!(s.output.as_deref(), Some(&json!(n)));
    let (_, s) = run(spec, Semantics::XState, &["e"]);
    assert_eq!(s.output.as_deref(), Some(&json!("xstate output")));
}

#[test]
fn the_event_hook_sees_every_event_and_its_errors_are_queued() {
    let spec = || {
        let mut a = st("a");
        on(&mut a, "e", &[], vec![]);
        on(&mut a, "hook.error", &["b"], vec![]);
        compound("m", "a", vec![a, st("b")])
    };
    let m = Machine::with_semantics(
        spec(),
        json!({"log": [], "seen": []}),
        None,
        Semantics::Scxml,
    )
    .unwrap()
    .with_event_hook(Arc::new(|c: &mut Value, e: &Event| {
        c["seen"].as_array_mut().unwrap().push(json!(e.name()));
        if e.name() == "e" {
            vec![Event::new("hook.error")]
        } else {
            Vec::new()
        }
    }));
    let (mut s, _) = initial_transition(&m).unwrap();
    transition_in_place(&m, &mut s, Event::new("e"), &mut Vec::new()).unwrap();
    assert_eq!(s.context["seen"], json!(["e", "hook.error"]));
    assert_eq!(active(&m, &s), ["m", "b"]);
}

#[test]
fn continue_macrostep_and_exit_interpreter() {
    let spec = || {
        let mut a = st("a");
        on(&mut a, "late", &["b"], vec![]);
        compound("m", "a", vec![a, st("b")])
    };
    let m = Machine::with_semantics(spec(), json!({"log": []}), None, Semantics::Scxml).unwrap();
    let (mut s, _) = initial_transition(&m).unwrap();
    continue_macrostep(&m, &mut s, vec![Event::new("late")], &mut Vec::new()).unwrap();
    assert_eq!(active(&m, &s), ["m", "b"]);
    exit_interpreter(&m, &mut s, Event::new("stop"), &mut Vec::new());
    assert_eq!(s.status, Status::Stopped);
    assert!(logged(&s).ends_with(&["exit b".into(), "exit m".into()]));
    // The configuration is kept.
    assert_eq!(active(&m, &s), ["m", "b"]);
}
