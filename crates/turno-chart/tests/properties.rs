//! Property: for random machines and random event sequences, every
//! configuration the chart reaches is legal — the root and the ancestors of
//! every active state are active, an active compound state has exactly one
//! active child, an active parallel state has all its regions active, no
//! history state is ever active. A macrostep may instead fail with a
//! runaway-loop error (random `always` transitions can cycle), never hang.
//!
//! Also: a machine's step table (microstep plans kept by configuration and
//! event) is a cache of the pure function: with it, stepping gives what the
//! algorithm alone gives.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use turno_chart::{
    advance, initial_transition, load_json, stdlib, transition, ChartError, Event, Machine,
    Snapshot, StateKind,
};

#[derive(Clone, Debug)]
struct Plan {
    parents: Vec<usize>,
    flags: Vec<u8>,
    transitions: Vec<(usize, u8, usize, bool, u8)>,
    always: Vec<(usize, usize, u8)>,
}

fn plan() -> impl Strategy<Value = Plan> {
    (2usize..14).prop_flat_map(|n| {
        (
            proptest::collection::vec(0usize..1000, n - 1),
            proptest::collection::vec(any::<u8>(), n),
            proptest::collection::vec(
                (
                    0usize..1000,
                    0u8..4,
                    0usize..1000,
                    any::<bool>(),
                    any::<u8>(),
                ),
                0..20,
            ),
            proptest::collection::vec((0usize..1000, 0usize..1000, any::<u8>()), 0..4),
        )
            .prop_map(|(parents, flags, transitions, always)| Plan {
                parents,
                flags,
                transitions,
                always,
            })
    })
}

/// Builds an XState JSON config from a plan: node 0 is the root, node i's
/// parent is an earlier node; every state has the explicit id `s<i>`.
fn config(p: &Plan) -> Value {
    let n = p.flags.len();
    let parent = |i: usize| p.parents[i - 1] % i;
    let children = |i: usize| (1..n).filter(move |&c| parent(c) == i).collect::<Vec<_>>();
    // Leaves: atomic, final or history (never a compound's only children).
    let mut kind = vec![""; n];
    for i in (0..n).rev() {
        let cs = children(i);
        kind[i] = if !cs.is_empty() {
            if p.flags[i] % 3 == 0 {
                "parallel"
            } else {
                "compound"
            }
        } else if i == 0 {
            "atomic"
        } else {
            match p.flags[i] % 7 {
                0 => "final",
                1 => "history",
                2 => "deephistory",
                _ => "atomic",
            }
        };
    }
    for i in 0..n {
        let cs = children(i);
        if !cs.is_empty() && cs.iter().all(|&c| kind[c].ends_with("history")) {
            kind[cs[0]] = "atomic";
        }
    }
    let events = ["A", "B", "C", "*"];
    let mut on: Vec<Map<String, Value>> = vec![Map::new(); n];
    for &(s, e, t, reenter, g) in &p.transitions {
        let (s, t) = (s % n, t % n);
        if kind[s].ends_with("history") {
            continue;
        }
        let mut tr = json!({"target": format!("#s{t}"), "reenter": reenter,
                            "actions": {"type": "inc", "params": {"key": "n"}}});
        if g % 3 == 0 {
            tr["guard"] = json!({"type": "ctxLt", "params": {"key": "n", "value": (g % 7) as i64}});
        }
        let list = on[s]
            .entry(events[e as usize].to_string())
            .or_insert_with(|| json!([]));
        list.as_array_mut().unwrap().push(tr);
    }
    let mut always: Vec<Vec<Value>> = vec![Vec::new(); n];
    for &(s, t, g) in &p.always {
        let (s, t) = (s % n, t % n);
        if kind[s].ends_with("history") {
            continue;
        }
        let mut tr =
            json!({"target": format!("#s{t}"), "actions": {"type": "inc", "params": {"key": "n"}}});
        if g % 4 != 0 {
            tr["guard"] = json!({"type": "ctxLt", "params": {"key": "n", "value": (g % 5) as i64}});
        }
        always[s].push(tr);
    }
    fn build(
        i: usize,
        n: usize,
        kind: &[&str],
        parent: &dyn Fn(usize) -> usize,
        on: &[Map<String, Value>],
        always: &[Vec<Value>],
    ) -> Value {
        let mut s = Map::new();
        if i != 0 {
            s.insert("id".into(), json!(format!("s{i}")));
        }
        let cs: Vec<usize> = (1..n).filter(|&c| parent(c) == i).collect();
        match kind[i] {
            "parallel" => {
                s.insert("type".into(), json!("parallel"));
            }
            "final" => {
                s.insert("type".into(), json!("final"));
            }
            "history" => {
                s.insert("type".into(), json!("history"));
            }
            "deephistory" => {
                s.insert("type".into(), json!("history"));
                s.insert("history".into(), json!("deep"));
            }
            "compound" => {
                let first = cs.iter().find(|&&c| !kind[c].ends_with("history")).unwrap();
                s.insert("initial".into(), json!(format!("k{first}")));
            }
            _ => {}
        }
        if !cs.is_empty() {
            let mut states = Map::new();
            for c in cs {
                states.insert(format!("k{c}"), build(c, n, kind, parent, on, always));
            }
            s.insert("states".into(), Value::Object(states));
        }
        if !kind[i].ends_with("history") && kind[i] != "final" {
            if !on[i].is_empty() {
                s.insert("on".into(), Value::Object(on[i].clone()));
            }
            if !always[i].is_empty() {
                s.insert("always".into(), Value::Array(always[i].clone()));
            }
        }
        s.insert("after".into(), json!({}));
        if kind[i].ends_with("history") || kind[i] == "final" {
            s.remove("after");
        } else if i % 3 == 1 {
            s.insert(
                "after".into(),
                json!({"10": {"target": format!("#s{}", (i * 7) % n)}}),
            );
        } else {
            s.remove("after");
        }
        Value::Object(s)
    }
    let mut root = build(0, n, &kind, &parent, &on, &always);
    root["id"] = json!("s0");
    root["context"] = json!({"n": 0});
    root
}

/// [`config`] with more for the step table to keep or refuse: entry
/// actions that raise or emit, exit actions that assign, tags, and states
/// whose transitions run no action (their microsteps replay as a copy of
/// the configuration). Node `i`'s `flags[i]` bits pick them.
fn rich_config(p: &Plan) -> Value {
    fn walk(s: &mut Value, p: &Plan) {
        let Some(obj) = s.as_object_mut() else { return };
        let i: usize = obj
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| id.strip_prefix('s'))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let f = p.flags[i];
        let history = obj.get("type").and_then(Value::as_str) == Some("history");
        if !history {
            if f & 0x08 != 0 {
                obj.insert(
                    "entry".into(),
                    json!([{"type": "raise", "params": {"event": {"type": "C"}}}]),
                );
            }
            if f & 0x10 != 0 {
                obj.insert(
                    "exit".into(),
                    json!([{"type": "inc", "params": {"key": "x"}}]),
                );
            }
            if f & 0x20 != 0 {
                obj.insert("tags".into(), json!(["t", format!("t{}", i % 3)]));
            }
            if f & 0x40 != 0 {
                let mut entry = obj.get("entry").cloned().unwrap_or(json!([]));
                entry
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"type": "emit", "params": {"event": {"type": "E"}}}));
                obj.insert("entry".into(), entry);
            }
            if f & 0x02 != 0 {
                if let Some(Value::Object(on)) = obj.get_mut("on") {
                    for (_, list) in on.iter_mut() {
                        for t in list.as_array_mut().unwrap() {
                            t.as_object_mut().unwrap().remove("actions");
                        }
                    }
                }
            }
        }
        if let Some(Value::Object(states)) = obj.get_mut("states") {
            for (_, c) in states.iter_mut() {
                walk(c, p);
            }
        }
    }
    let mut root = config(p);
    walk(&mut root, p);
    root["context"] = json!({"n": 0, "x": 0});
    root
}

fn check_legal(m: &Machine<Value>, s: &Snapshot<Value>) -> Result<(), String> {
    let active = |i| s.config.contains(i);
    if !active(0) {
        return Err("the root is not active".into());
    }
    for (i, node) in m.states().iter().enumerate() {
        let i = i as u16;
        if !active(i) {
            continue;
        }
        if let Some(p) = node.parent {
            if !active(p) {
                return Err(format!("{} is active, its parent is not", node.id));
            }
        }
        let regions: Vec<u16> = node
            .children
            .iter()
            .copied()
            .filter(|&c| !m.state(c).is_history())
            .collect();
        let on: Vec<u16> = regions.iter().copied().filter(|&c| active(c)).collect();
        match node.kind {
            StateKind::History { .. } => {
                return Err(format!("history state {} is active", node.id))
            }
            StateKind::Compound if on.len() != 1 => {
                return Err(format!(
                    "compound {} has {} active children",
                    node.id,
                    on.len()
                ))
            }
            StateKind::Parallel if on.len() != regions.len() => {
                return Err(format!(
                    "parallel {} has {} of {} regions active",
                    node.id,
                    on.len(),
                    regions.len()
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

proptest! {
    // 400 cases by default (a few seconds); `PROPTEST_CASES=5000` for a
    // longer run after a change to the algorithm.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400),
        .. ProptestConfig::default()
    })]

    // The pinned regressions (properties.proptest-regressions) run first:
    // history targets under parallel states, whose transition domain used
    // to change between the exit set and the entry set.
    #[test]
    fn configurations_are_always_legal(p in plan(), events in proptest::collection::vec(0u8..5, 0..25)) {
        let cfg = config(&p);
        let m = load_json::<Value>(&cfg.to_string(), &stdlib::implementations())
            .unwrap_or_else(|e| panic!("{e}\n{cfg:#}"))
            .with_max_microsteps(200);
        let mut s = match initial_transition(&m) {
            Ok((s, _)) => s,
            Err(ChartError::RunawayLoop { .. }) => return Ok(()),
        };
        prop_assert!(check_legal(&m, &s).is_ok(), "{:?}\n{cfg:#}", check_legal(&m, &s));
        for e in events {
            let step = if e == 4 {
                advance(&m, &s, 10)
            } else {
                transition(&m, &s, Event::new(["A", "B", "C", "D"][e as usize]))
            };
            match step {
                Ok((next, _)) => s = next,
                Err(ChartError::RunawayLoop { cycle, .. }) => {
                    prop_assert!(!cycle.is_empty());
                    return Ok(());
                }
            }
            let legal = check_legal(&m, &s);
            prop_assert!(legal.is_ok(), "{:?} after {e}\n{cfg:#}", legal);
            // The value is computable and serialisable.
            let _ = serde_json::to_string(&s.value(&m)).unwrap();
        }
    }

    /// A machine remembers, per transition, the domain and entry set that
    /// do not depend on the snapshot. Taking the same events again on a
    /// machine that has seen them gives, step by step, the snapshots and
    /// actions a machine that never ran gives.
    #[test]
    fn a_warm_machine_steps_as_a_cold_one(p in plan(), events in proptest::collection::vec(0u8..5, 0..25)) {
        let cfg = config(&p);
        let load = || {
            load_json::<Value>(&cfg.to_string(), &stdlib::implementations())
                .unwrap_or_else(|e| panic!("{e}\n{cfg:#}"))
                .with_max_microsteps(200)
        };
        let run = |m: &Machine<Value>| -> Vec<Value> {
            let mut out = Vec::new();
            let Ok((mut s, a)) = initial_transition(m) else { return out };
            out.push(serde_json::json!([s, a]));
            for &e in &events {
                let step = if e == 4 {
                    advance(m, &s, 10)
                } else {
                    transition(m, &s, Event::new(["A", "B", "C", "D"][e as usize]))
                };
                let Ok((next, a)) = step else { break };
                s = next;
                out.push(serde_json::json!([s, a]));
            }
            out
        };
        let warm = load();
        let first = run(&warm);
        let again = run(&warm);
        let cold = run(&load());
        prop_assert_eq!(&first, &cold, "{:#}", cfg);
        prop_assert_eq!(&again, &cold, "{:#}", cfg);
    }

    /// The step table keeps a microstep's plan by configuration and event
    /// and replays it; with the table, a machine steps (snapshots with
    /// context and history, actions, values, tags, status, errors) as the
    /// same machine without one, which computes every microstep by the
    /// algorithm. The events run twice so the second pass replays plans
    /// the first kept.
    #[test]
    fn the_step_table_steps_as_the_algorithm(p in plan(), events in proptest::collection::vec(0u8..5, 0..25)) {
        let cfg = rich_config(&p);
        let load = |slots: usize| {
            load_json::<Value>(&cfg.to_string(), &stdlib::implementations())
                .unwrap_or_else(|e| panic!("{e}\n{cfg:#}"))
                .with_max_microsteps(200)
                .with_step_table(slots)
        };
        let run = |m: &Machine<Value>| -> Vec<Value> {
            let mut out = Vec::new();
            let (mut s, a) = match initial_transition(m) {
                Ok(step) => step,
                Err(e) => return vec![json!(e.to_string())],
            };
            out.push(json!([s, a]));
            for &e in events.iter().chain(events.iter()) {
                let step = if e == 4 {
                    advance(m, &s, 10)
                } else {
                    transition(m, &s, Event::new(["A", "B", "C", "D"][e as usize]))
                };
                match step {
                    Ok((next, a)) => {
                        s = next;
                        let tags = ["t", "t0", "t1", "t2"].map(|t| s.has_tag(m, t));
                        out.push(json!([s, a, s.value(m).to_json(), tags]));
                    }
                    Err(err) => {
                        out.push(json!(err.to_string()));
                        break;
                    }
                }
            }
            out
        };
        let table = load(64);
        let with = run(&table);
        let again = run(&table);
        let without = run(&load(0));
        prop_assert_eq!(&with, &without, "{:#}", cfg);
        prop_assert_eq!(&again, &without, "{:#}", cfg);
        prop_assert!(table.step_table_entries().0 <= table.step_table_entries().1);
    }
}
