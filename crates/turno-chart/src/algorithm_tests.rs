//! Unit tests of each step of the algorithm on small machines.

use serde_json::Value;

use super::*;
use crate::{initial_transition, load_json, stdlib, transition};

fn machine(json: &str) -> Machine<Value> {
    load_json(json, &stdlib::implementations()).unwrap()
}

fn idx(m: &Machine<Value>, id: &str) -> StateIdx {
    m.state_by_id(id).unwrap_or_else(|| panic!("no state {id}"))
}

/// A snapshot whose configuration is exactly `ids`.
fn at(m: &Machine<Value>, ids: &[&str]) -> Snapshot<Value> {
    let (mut s, _) = initial_transition(m).unwrap();
    s.config.clear();
    for id in ids {
        s.config.insert(idx(m, id));
    }
    s
}

fn ids(m: &Machine<Value>, set: &StateSet) -> Vec<String> {
    set.iter().map(|s| m.state(s).id.to_string()).collect()
}

const TREE: &str = r##"{"id": "m", "initial": "a", "states": {
  "a": {"initial": "a1", "states": {"a1": {"on": {"E": "#m.b", "G": "a2"}}, "a2": {}},
        "on": {"E": "c", "H": {"target": ".a2", "reenter": true}}},
  "b": {"initial": "b1", "states": {"b1": {}, "b2": {"initial": "x", "states": {"x": {}, "y": {}}}}},
  "c": {"type": "parallel", "states": {
     "r1": {"initial": "p", "states": {"p": {"on": {"E": "q"}}, "q": {"type": "final"}}},
     "r2": {"initial": "u", "states": {"u": {"on": {"E": "v"}}, "v": {"type": "final"}}}}}}}"##;

fn trans(m: &Machine<Value>, source: &str, event: &str) -> TransIdx {
    let s = idx(m, source);
    let (_, ts) = m.state(s).on.iter().find(|(d, _)| &**d == event).unwrap();
    ts[0]
}

#[test]
fn get_proper_ancestors_stops_below_upto() {
    let m = machine(TREE);
    let mut s = at(&m, &["m"]);
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    let x = idx(&m, "m.b.b2.x");
    let names = |v: States| {
        v.into_iter()
            .map(|s| m.state(s).id.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(run.get_proper_ancestors(x, None)),
        ["m.b.b2", "m.b", "m"]
    );
    assert_eq!(
        names(run.get_proper_ancestors(x, Some(idx(&m, "m.b")))),
        ["m.b.b2"]
    );
    assert!(run.get_proper_ancestors(x, Some(x)).is_empty());
}

#[test]
fn find_lcca_takes_parallel_ancestors_as_xstate_does() {
    let m = machine(TREE);
    let mut s = at(&m, &["m"]);
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    let lcca = |xs: &[&str]| run.find_lcca(&xs.iter().map(|x| idx(&m, x)).collect::<Vec<_>>());
    assert_eq!(lcca(&["m.a.a1", "m.b.b2.x"]), Some(idx(&m, "m")));
    assert_eq!(lcca(&["m.b.b2.x", "m.b.b1"]), Some(idx(&m, "m.b")));
    assert_eq!(lcca(&["m.c.r1.p", "m.c.r2.u"]), Some(idx(&m, "m.c")));
    assert_eq!(lcca(&["m"]), None);
}

#[test]
fn get_transition_domain_follows_reenter() {
    let m = machine(TREE);
    let mut s = at(&m, &["m", "m.a", "m.a.a1"]);
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    let dom = |t| {
        run.get_transition_domain(&run.t(t))
            .map(|d| m.state(d).id.to_string())
    };
    // a1 -> b: the least common ancestor.
    assert_eq!(dom(trans(&m, "m.a.a1", "E")).as_deref(), Some("m"));
    // a1 -> a2, a sibling: the parent.
    assert_eq!(dom(trans(&m, "m.a.a1", "G")).as_deref(), Some("m.a"));
    // a -> .a2 with reenter: above a.
    assert_eq!(dom(trans(&m, "m.a", "H")).as_deref(), Some("m"));
}

#[test]
fn compute_exit_set_is_the_active_part_of_the_domain() {
    let m = machine(TREE);
    let mut s = at(&m, &["m", "m.a", "m.a.a1"]);
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    let exit = |t| {
        let r = run.t(t);
        ids(
            &m,
            &run.compute_exit_set(&[r], &[run.get_transition_domain(&r)]),
        )
    };
    assert_eq!(exit(trans(&m, "m.a.a1", "E")), ["m.a", "m.a.a1"]);
    assert_eq!(exit(trans(&m, "m.a.a1", "G")), ["m.a.a1"]);
    assert_eq!(exit(trans(&m, "m.a", "H")), ["m.a", "m.a.a1"]);
}

#[test]
fn compute_entry_set_adds_ancestors_initials_and_regions() {
    let m = machine(
        r##"{"id": "m", "initial": "a", "states": {
      "a": {"on": {"DEEP": "#y", "PAR": "c", "REGION": "#v"}},
      "b": {"initial": "b1", "states": {"b1": {}, "b2": {"initial": "x", "states": {"x": {}, "y": {"id": "y"}}}}},
      "c": {"type": "parallel", "states": {
         "r1": {"initial": "p", "states": {"p": {}, "q": {}}},
         "r2": {"initial": "u", "states": {"u": {}, "v": {"id": "v"}}}}}}}"##,
    );
    let mut s = at(&m, &["m", "m.a"]);
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    let entry = |ev: &str| {
        let t = trans(&m, "m.a", ev);
        let (mut to, mut def) = (StateSet::with_states(m.n()), StateSet::with_states(m.n()));
        let r = run.t(t);
        run.compute_entry_set(&[r], &[run.get_transition_domain(&r)], &mut to, &mut def);
        (ids(&m, &to), ids(&m, &def))
    };
    // A deep target enters its ancestors, but not their initial children.
    assert_eq!(entry("DEEP").0, ["m.b", "m.b.b2", "y"]);
    assert_eq!(entry("DEEP").1, ["y"]);
    // A parallel target enters every region's initial state.
    assert_eq!(
        entry("PAR").0,
        ["m.c", "m.c.r1", "m.c.r1.p", "m.c.r2", "m.c.r2.u"]
    );
    // A target in one region enters the other region by default.
    assert_eq!(
        entry("REGION").0,
        ["m.c", "m.c.r1", "m.c.r1.p", "m.c.r2", "v"]
    );
}

#[test]
fn add_descendant_states_to_enter_uses_recorded_history() {
    let m = machine(
        r#"{"id": "m", "initial": "p", "states": {
      "p": {"initial": "a", "on": {"OUT": "out"}, "states": {
         "a": {"on": {"N": "b"}}, "b": {"initial": "b1", "states": {"b1": {"on": {"N": "b2"}}, "b2": {}}},
         "h": {"type": "history", "history": "deep"}}},
      "out": {"on": {"IN": "p.h"}}}}"#,
    );
    let (s0, _) = initial_transition(&m).unwrap();
    let mut s = s0;
    for e in ["N", "N", "OUT"] {
        s = transition(&m, &s, Event::new(e)).unwrap().0;
    }
    let h = idx(&m, "m.p.h");
    assert_eq!(s.history.len(), 1);
    assert_eq!(s.history[0].history, h);
    assert_eq!(s.history[0].states, [idx(&m, "m.p.b.b2")]);
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    let (mut to, mut def) = (StateSet::with_states(m.n()), StateSet::with_states(m.n()));
    run.add_descendant_states_to_enter(h, &mut to, &mut def);
    assert_eq!(ids(&m, &to), ["m.p.b", "m.p.b.b2"]);
}

#[test]
fn is_in_final_state_needs_every_region() {
    let m = machine(TREE);
    let mut s = at(
        &m,
        &["m", "m.c", "m.c.r1", "m.c.r1.q", "m.c.r2", "m.c.r2.u"],
    );
    let mut a = Vec::new();
    let c = idx(&m, "m.c");
    assert!(Run::new(&m, &mut s, &mut a).is_in_final_state(idx(&m, "m.c.r1")));
    assert!(!Run::new(&m, &mut s, &mut a).is_in_final_state(c));
    let mut s = at(
        &m,
        &["m", "m.c", "m.c.r1", "m.c.r1.q", "m.c.r2", "m.c.r2.v"],
    );
    assert!(Run::new(&m, &mut s, &mut a).is_in_final_state(c));
}

#[test]
fn remove_conflicting_transitions_prefers_descendants_and_keeps_disjoint_ones() {
    let m = machine(TREE);
    let mut s = at(&m, &["m", "m.a", "m.a.a1"]);
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    let (inner, outer) = (trans(&m, "m.a.a1", "E"), trans(&m, "m.a", "E"));
    assert_eq!(
        run.remove_conflicting_transitions(&[outer, inner])
            .as_slice(),
        [inner]
    );
    assert_eq!(
        run.remove_conflicting_transitions(&[inner, outer])
            .as_slice(),
        [inner]
    );
    let mut s = at(
        &m,
        &["m", "m.c", "m.c.r1", "m.c.r1.p", "m.c.r2", "m.c.r2.u"],
    );
    let run = Run::new(&m, &mut s, &mut a);
    let (r1, r2) = (trans(&m, "m.c.r1.p", "E"), trans(&m, "m.c.r2.u", "E"));
    assert_eq!(
        run.remove_conflicting_transitions(&[r1, r2]).as_slice(),
        [r1, r2]
    );
}

#[test]
fn select_transitions_takes_each_region_and_the_first_passing_guard() {
    let m = machine(TREE);
    let mut s = at(
        &m,
        &["m", "m.c", "m.c.r1", "m.c.r1.p", "m.c.r2", "m.c.r2.u"],
    );
    let mut a = Vec::new();
    let mut run = Run::new(&m, &mut s, &mut a);
    let mut out = Trans::new();
    run.select_transitions(&Event::new("E"), &mut out);
    assert_eq!(
        out.as_slice(),
        [trans(&m, "m.c.r1.p", "E"), trans(&m, "m.c.r2.u", "E")]
    );
    // In a1, E of a1 shadows E of a.
    let mut s = at(&m, &["m", "m.a", "m.a.a1"]);
    let mut run = Run::new(&m, &mut s, &mut a);
    let mut out = Trans::new();
    run.select_transitions(&Event::new("E"), &mut out);
    assert_eq!(out.as_slice(), [trans(&m, "m.a.a1", "E")]);
}

#[test]
fn select_eventless_transitions_walks_up_from_each_atomic_state() {
    let m = machine(
        r#"{"id": "m", "initial": "p", "context": {"n": 1}, "states": {
      "p": {"initial": "c", "always": [{"target": "q", "guard": {"type": "ctxEq", "params": {"key": "n", "value": 1}}}],
            "states": {"c": {"always": {"target": "d", "guard": "fail"}}, "d": {}}},
      "q": {}}}"#,
    );
    let mut s = at(&m, &["m", "m.p", "m.p.c"]);
    let mut a = Vec::new();
    let mut run = Run::new(&m, &mut s, &mut a);
    let mut out = Trans::new();
    run.select_eventless_transitions(&Event::new("x"), &mut out);
    assert_eq!(out.as_slice(), [m.state(idx(&m, "m.p")).always[0]]);
}

#[test]
fn done_events_bubble_through_parallel_parents_in_order() {
    let m = machine(TREE);
    let mut s = at(
        &m,
        &["m", "m.c", "m.c.r1", "m.c.r1.p", "m.c.r2", "m.c.r2.u"],
    );
    let mut a = Vec::new();
    let mut run = Run::new(&m, &mut s, &mut a);
    let enabled = vec![trans(&m, "m.c.r1.p", "E"), trans(&m, "m.c.r2.u", "E")];
    let refs: Refs<'_> = enabled.iter().map(|&t| run.t(t)).collect();
    run.microstep(&enabled, &refs, &Event::new("E"));
    let queued: Vec<&str> = run.internal.iter().flatten().map(|e| e.name()).collect();
    assert_eq!(
        queued,
        [
            "xstate.done.state.m.c.r1",
            "xstate.done.state.m.c.r2",
            "xstate.done.state.m.c"
        ]
    );
}

#[test]
fn a_runaway_always_loop_is_an_error_naming_the_cycle() {
    let m = machine(
        r#"{"id": "m", "initial": "idle", "states": {
      "idle": {"on": {"GO": "a"}},
      "a": {"always": "b"}, "b": {"always": "a"}}}"#,
    )
    .with_max_microsteps(100);
    let (s, _) = initial_transition(&m).unwrap();
    let err = transition(&m, &s, Event::new("GO")).unwrap_err();
    let ChartError::RunawayLoop {
        event,
        limit,
        cycle,
    } = &err;
    assert_eq!((event.as_str(), *limit), ("GO", 100));
    assert!(
        cycle == &["m.a", "m.b", "m.a"] || cycle == &["m.b", "m.a", "m.b"],
        "{cycle:?}"
    );
    assert!(err.to_string().contains("m.a -> m.b") || err.to_string().contains("m.b -> m.a"));
}

#[test]
fn a_raise_loop_is_caught_too() {
    let m = machine(
        r#"{"id": "m", "initial": "a", "states": {
      "a": {"on": {"PING": {"actions": {"type": "raise", "params": {"event": {"type": "PING"}}}}}}}}"#,
    )
    .with_max_microsteps(50);
    let (s, _) = initial_transition(&m).unwrap();
    let err = transition(&m, &s, Event::new("PING")).unwrap_err();
    assert!(err.to_string().contains("m.a (targetless)"), "{err}");
}

/// Found by the property test: XState leaves the root out of its node set
/// here; turno keeps every ancestor of an active state active.
#[test]
fn a_history_defaulting_to_its_parallel_parent_keeps_the_root_active() {
    let m = machine(
        r##"{"id": "s0", "type": "parallel", "states": {
      "k1": {"id": "s1", "on": {"A": {"target": "#s2", "reenter": true}}},
      "k2": {"id": "s2", "type": "history"}}}"##,
    );
    let (s, _) = initial_transition(&m).unwrap();
    let (s, _) = transition(&m, &s, Event::new("A")).unwrap();
    assert_eq!(ids(&m, &s.config), ["s0", "s1"]);
}

/// Found by the property test: the domain of a transition to a history
/// state, computed again after the exits recorded that history, is no
/// longer the one its exit set came from (here `s0`, then `s4`), and the
/// root's other regions were exited and never re-entered.
#[test]
fn get_transition_domains_are_fixed_before_the_exits_record_history() {
    let m = machine(
        r##"{"id": "s0", "type": "parallel", "states": {
      "k1": {"id": "s1", "type": "final"},
      "k2": {"id": "s2", "type": "parallel", "states": {
        "k3": {"id": "s3", "type": "history"},
        "k4": {"id": "s4", "type": "parallel", "on": {"A": "#s3"},
               "states": {"k5": {"id": "s5", "type": "final"}}}}},
      "k6": {"id": "s6"}}}"##,
    );
    let (s0, _) = initial_transition(&m).unwrap();
    let t = trans(&m, "s4", "A");
    {
        let mut s = s0.clone();
        let mut a = Vec::new();
        let run = Run::new(&m, &mut s, &mut a);
        let r = run.t(t);
        // No history yet: it defaults to its parallel parent s2.
        assert_eq!(run.get_transition_domain(&r), Some(idx(&m, "s0")));
    }
    let (s1, _) = transition(&m, &s0, Event::new("A")).unwrap();
    assert_eq!(ids(&m, &s1.config), ["s0", "s1", "s2", "s4", "s5", "s6"]);
    let mut s = s1.clone();
    let mut a = Vec::new();
    let run = Run::new(&m, &mut s, &mut a);
    // Now the history remembers s4, the source itself.
    assert_eq!(run.get_transition_domain(&run.t(t)), Some(idx(&m, "s4")));
    let (s2, _) = transition(&m, &s1, Event::new("A")).unwrap();
    assert_eq!(ids(&m, &s2.config), ids(&m, &s1.config));
}

/// Found by the property test: `s3 -> its own history` has `s3` as domain
/// and an empty exit set, so it does not conflict with `s4`'s reentering
/// transition, which exits `s1` and `s3`. Entering `s3` for the first one
/// hid `s1` from the second (a region is entered only when nothing below
/// it is), and `s3` came back without its parent.
#[test]
fn a_history_of_its_own_source_does_not_hide_the_parent_from_another_transition() {
    let m = machine(
        r##"{"id": "s0", "type": "parallel", "states": {
      "k1": {"id": "s1", "type": "parallel", "states": {
        "k2": {"id": "s2", "type": "history"},
        "k3": {"id": "s3", "on": {"B": "#s2"}}}},
      "k4": {"id": "s4", "on": {"B": {"target": "#s4", "reenter": true},
                                "R": {"target": "#s1", "reenter": true}}}}}"##,
    );
    let (s, _) = initial_transition(&m).unwrap();
    let (s, _) = transition(&m, &s, Event::new("R")).unwrap();
    assert_eq!(s.history.len(), 1, "leaving s1 recorded its history");
    let mut seen = Vec::new();
    let mut note = |i: Inspect<'_>| match i {
        Inspect::Enter(x) => seen.push(format!("enter {}", m.state(x).id)),
        Inspect::Exit(x) => seen.push(format!("exit {}", m.state(x).id)),
        _ => {}
    };
    let mut after = s.clone();
    let mut a = Vec::new();
    Run::new(&m, &mut after, &mut a)
        .inspected(Some(&mut note))
        .macrostep(Event::new("B"))
        .unwrap();
    assert_eq!(ids(&m, &after.config), ["s0", "s1", "s3", "s4"]);
    assert_eq!(
        seen,
        ["exit s4", "exit s3", "exit s1", "enter s1", "enter s3", "enter s4"]
    );
}

/// Found by the property test: a history whose default is its parallel
/// parent, targeted from inside that parent, has the root as domain; the
/// root's other region is exited and must be entered again.
#[test]
fn a_history_defaulting_to_its_parallel_parent_reenters_the_other_regions() {
    let m = machine(
        r##"{"id": "s0", "type": "parallel", "states": {
      "k1": {"id": "s1", "type": "parallel", "states": {
        "k2": {"id": "s2", "on": {"A": "#s3"}},
        "k3": {"id": "s3", "type": "history"}}},
      "k4": {"id": "s4", "type": "final"}}}"##,
    );
    let (s, _) = initial_transition(&m).unwrap();
    let (s, _) = transition(&m, &s, Event::new("A")).unwrap();
    assert_eq!(ids(&m, &s.config), ["s0", "s1", "s2", "s4"]);
}

/// A transition taken alone keeps its domain and entry set when the
/// machine fixes them; one that reads a history state does not, and the
/// history still decides where it goes each time.
#[test]
fn a_plan_is_kept_only_for_a_transition_that_reads_no_history() {
    let m = machine(
        r##"{"id": "p", "initial": "player", "states": {
      "player": {"initial": "stopped", "on": {"OFF": "off"}, "states": {
        "stopped": {"on": {"PLAY": "playing"}},
        "playing": {"on": {"STOP": "stopped"}},
        "hist": {"type": "history"}}},
      "off": {"on": {"ON": "player.hist"}}}}"##,
    );
    let off = trans(&m, "p.player", "OFF");
    let on = trans(&m, "p.off", "ON");
    let (mut s, _) = initial_transition(&m).unwrap();
    let go = |s: &mut Snapshot<Value>, e: &str| {
        *s = transition(&m, s, Event::new(e)).unwrap().0;
        s.value(&m).to_json()
    };
    use serde_json::json;
    assert_eq!(go(&mut s, "OFF"), json!("off"));
    assert_eq!(go(&mut s, "ON"), json!({"player": "stopped"}));
    assert_eq!(go(&mut s, "PLAY"), json!({"player": "playing"}));
    assert_eq!(go(&mut s, "OFF"), json!("off"));
    assert_eq!(go(&mut s, "ON"), json!({"player": "playing"}));
    let plan = m.plans[off as usize].get();
    let plan = plan.expect("OFF's domain and entry set are the machine's");
    assert_eq!(plan.domain, Some(0));
    assert_eq!(ids(&m, &plan.to_enter), ["p.off"]);
    assert!(m.plans[on as usize].get().is_none(), "ON reads the history");
}

/// A parallel state with a handler on the region, on the parallel state and
/// on the root; guards that fail and pass; a nested parallel region.
const SELECT: &str = r##"{"id": "m", "initial": "p", "on": {"E": ".p", "F": ".p"},
  "states": {
  "p": {"type": "parallel", "on": {"E": ".r1", "G": ".r2"}, "states": {
     "r1": {"initial": "a", "on": {"F": ".b"}, "states": {
        "a": {"on": {"E": [{"target": "b", "guard": "never"}], "G": "b"}},
        "b": {"on": {"F": "a"}}}},
     "r2": {"type": "parallel", "states": {
        "s1": {"initial": "x", "states": {"x": {"on": {"G": "y"}}, "y": {"on": {"E": "x"}}}},
        "s2": {"initial": "u", "states": {"u": {"on": {"E": "v"}}, "v": {}}}}}}}}}"##;

/// The table-driven selection picks what XState's recursive walk picks, in
/// the same order, for every event and every legal configuration of a
/// machine where regions, parallel states and ancestors all handle events.
#[test]
fn select_by_table_selects_as_the_walk_does() {
    let imp = stdlib::implementations().guard("never", |_: &Value, _: &Event, _: &Value| false);
    let m: Machine<Value> = load_json(SELECT, &imp).unwrap();
    let configs: [&[&str]; 4] = [
        &[
            "m",
            "m.p",
            "m.p.r1",
            "m.p.r1.a",
            "m.p.r2",
            "m.p.r2.s1",
            "m.p.r2.s1.x",
            "m.p.r2.s2",
            "m.p.r2.s2.u",
        ],
        &[
            "m",
            "m.p",
            "m.p.r1",
            "m.p.r1.b",
            "m.p.r2",
            "m.p.r2.s1",
            "m.p.r2.s1.y",
            "m.p.r2.s2",
            "m.p.r2.s2.u",
        ],
        &[
            "m",
            "m.p",
            "m.p.r1",
            "m.p.r1.a",
            "m.p.r2",
            "m.p.r2.s1",
            "m.p.r2.s1.y",
            "m.p.r2.s2",
            "m.p.r2.s2.v",
        ],
        &[
            "m",
            "m.p",
            "m.p.r1",
            "m.p.r1.b",
            "m.p.r2",
            "m.p.r2.s1",
            "m.p.r2.s1.x",
            "m.p.r2.s2",
            "m.p.r2.s2.v",
        ],
    ];
    let mut compared = 0;
    for cfg in configs {
        for name in ["E", "F", "G"] {
            let event = Event::new(name);
            let e = m.event_id(name).unwrap();
            let mut s = at(&m, cfg);
            let mut a = Vec::new();
            let mut run = Run::new(&m, &mut s, &mut a);
            let (mut walk, mut table) = (Trans::new(), Trans::new());
            run.select_node(0, Some(e), &event, &mut walk);
            run.select_by_table(e, &event, &mut table);
            assert_eq!(walk, table, "{name} in {cfg:?}");
            compared += usize::from(!walk.is_empty());
        }
    }
    assert_eq!(
        compared, 12,
        "every event selects something in every configuration"
    );
}

/// The step table keeps a microstep by configuration and event only when
/// it read no guard and no history, and replays what it kept.
#[test]
fn the_step_table_keeps_only_microsteps_of_configuration_and_event() {
    let m = machine(
        r##"{"id": "m", "initial": "a", "context": {"n": 0}, "states": {
      "a": {"on": {"GO": "b", "TRY": {"target": "b", "guard": "pass"}}},
      "b": {"initial": "b1", "on": {"BACK": "a", "HIST": "a"},
            "states": {"b1": {"on": {"NEXT": "b2"}}, "b2": {}, "h": {"type": "history"}}},
      "c": {"on": {"IN": "#m.b.h"}}}}"##,
    );
    let (s0, _) = initial_transition(&m).unwrap();
    // A guarded selection is not kept.
    let (s1, _) = transition(&m, &s0, Event::new("TRY")).unwrap();
    assert_eq!(m.step_table_entries().0, 0);
    // An unguarded one is, and it replays to the same snapshot.
    let (s2, _) = transition(&m, &s0, Event::new("GO")).unwrap();
    assert_eq!(m.step_table_entries().0, 1);
    let plan = m
        .steps
        .get(&s0.config, m.event_id("GO").unwrap())
        .expect("kept");
    assert_eq!(plan.after, s2.config);
    assert_eq!(ids(&m, &plan.to_enter), ["m.b", "m.b.b1"]);
    assert_eq!(
        plan.exits
            .iter()
            .map(|&s| &*m.state(s).id)
            .collect::<Vec<_>>(),
        ["m.a"]
    );
    assert!(plan.quiet);
    let (again, _) = transition(&m, &s0, Event::new("GO")).unwrap();
    assert_eq!(again.config, s2.config);
    assert_eq!(s1.config, s2.config);
    // Leaving `b` records its history: not kept.
    let (s3, _) = transition(&m, &s2, Event::new("BACK")).unwrap();
    assert_eq!(m.step_table_entries().0, 1);
    assert!(m
        .steps
        .get(&s2.config, m.event_id("BACK").unwrap())
        .is_none());
    // An event that enables nothing here is kept as an empty plan.
    let (s4, _) = transition(&m, &s3, Event::new("NEXT")).unwrap();
    assert_eq!(s4.config, s3.config);
    let empty = m
        .steps
        .get(&s3.config, m.event_id("NEXT").unwrap())
        .expect("kept");
    assert!(empty.enabled.is_empty());
}

/// A full table keeps no more plans; what does not fit is computed.
#[test]
fn a_full_step_table_keeps_no_more() {
    let m = machine(
        r#"{"id": "m", "initial": "s0", "states": {
      "s0": {"on": {"N": "s1"}}, "s1": {"on": {"N": "s2"}}, "s2": {"on": {"N": "s3"}},
      "s3": {"on": {"N": "s4"}}, "s4": {"on": {"N": "s5"}}, "s5": {"on": {"N": "s6"}},
      "s6": {"on": {"N": "s7"}}, "s7": {"on": {"N": "s8"}}, "s8": {"on": {"N": "s9"}},
      "s9": {"on": {"N": "s0"}}}}"#,
    )
    .with_step_table(16);
    assert_eq!(m.step_table_entries(), (0, 8));
    let (mut s, _) = initial_transition(&m).unwrap();
    for i in 0..30 {
        s = transition(&m, &s, Event::new("N")).unwrap().0;
        assert_eq!(s.value(&m).to_json(), format!("s{}", (i + 1) % 10));
    }
    assert_eq!(m.step_table_entries(), (8, 8));
    let none =
        machine(r#"{"initial": "a", "states": {"a": {"on": {"N": "a"}}}}"#).with_step_table(0);
    let (s, _) = initial_transition(&none).unwrap();
    transition(&none, &s, Event::new("N")).unwrap();
    assert_eq!(none.step_table_entries(), (0, 0));
}

/// Threads stepping one machine at once fill its table together: each
/// steps correctly, and between them they keep exactly the bound.
#[test]
fn threads_filling_one_step_table_keep_the_bound() {
    let m = std::sync::Arc::new(
        machine(
            r#"{"id": "m", "initial": "s0", "states": {
          "s0": {"on": {"N": "s1"}}, "s1": {"on": {"N": "s2"}}, "s2": {"on": {"N": "s3"}},
          "s3": {"on": {"N": "s4"}}, "s4": {"on": {"N": "s5"}}, "s5": {"on": {"N": "s6"}},
          "s6": {"on": {"N": "s7"}}, "s7": {"on": {"N": "s8"}}, "s8": {"on": {"N": "s9"}},
          "s9": {"on": {"N": "s0"}}}}"#,
        )
        .with_step_table(16),
    );
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                let (mut s, _) = initial_transition(&m).unwrap();
                for i in 0..200 {
                    s = transition(&m, &s, Event::new("N")).unwrap().0;
                    assert_eq!(s.value(&m).to_json(), format!("s{}", (i + 1) % 10));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(m.step_table_entries(), (8, 8));
}

/// The memory bound `docs/statecharts.md` states for the step table.
#[test]
fn a_step_plan_and_a_slot_are_the_sizes_the_docs_state() {
    assert_eq!(std::mem::size_of::<StepPlan>(), 152);
    assert_eq!(
        std::mem::size_of::<std::sync::OnceLock<Box<StepPlan>>>(),
        16
    );
}
