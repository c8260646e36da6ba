//! SCXML export of JSON machines, round trip: every machine of
//! turno-chart's differential corpus (XState v5 JSON configs, with runs
//! recorded from XState) is compiled by turno-chart, exported to SCXML,
//! loaded back by turno-scxml, and
//!
//! - has the same states (ids, kinds, parents, initial states) and the same
//!   transitions (source, events, targets, in priority order);
//! - run on the SCXML interpreter with the recorded events, gives XState's
//!   recorded values, except in the cases listed in `DIVERGENT`, where
//!   SCXML's semantics differ from XState's on purpose (each with why).
#![cfg(feature = "chart")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use turno_chart::{load_json, stdlib, Machine, StateKind};
use turno_scxml::export::{root_is_wrapped, scxml_ids, to_scxml};
use turno_scxml::model::{Document, HistoryKind, StateKind as SKind};
use turno_scxml::{load_str, script};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../turno-chart/tests/corpus")
}

/// Corpus machines SCXML cannot express the same way (the export refuses them).
const REFUSED: &[(&str, &str)] = &[
    ("history_target_under_parallel_root", FINAL_IN_PARALLEL),
    ("invoke_chain", INVOKE),
    ("invoke_child_chart_after_output", INVOKE),
    ("invoke_child_chart_send_parent", INVOKE),
    ("invoke_child_chart_stopped_on_exit", INVOKE),
    ("invoke_echo_on_done", INVOKE),
    ("invoke_exit_before_done", INVOKE),
    ("invoke_finished_children_listed", INVOKE),
    ("invoke_in_parallel_regions", INVOKE),
    ("invoke_never_left_state", INVOKE),
    ("invoke_output_guard", INVOKE),
    ("invoke_reject_on_error", INVOKE),
    ("send_from_a_child_to_nobody_fails_the_child", INVOKE),
    ("send_parent_without_parent_fails", SEND),
    ("send_to_delayed_bound_to_replaced_child", INVOKE),
    ("send_to_finished_child_is_no_error", INVOKE),
    ("send_to_in_entry_of_invoking_state", INVOKE),
    ("send_to_in_exit_of_invoking_state", INVOKE),
    ("send_to_missing_child_fails", SEND),
    ("send_to_missing_child_in_entry_fails", SEND),
    ("spawn_actor_logics", SPAWN),
    ("spawn_child_delayed_events", SPAWN),
    ("spawn_child_error_unhandled_fails_parent", SPAWN),
    ("spawn_child_send_before_spawn_fails", SPAWN),
    ("spawn_child_stop", INVOKE),
    ("spawn_child_stopped_send_fails", SPAWN),
    ("spawn_child_talks_both_ways", SPAWN),
    ("spawn_child_with_id", SPAWN),
    ("spawn_child_without_id", SPAWN),
    ("spawn_child_without_id_stopped", SPAWN),
    ("spawn_in_child_chart", INVOKE),
    ("spawn_then_final_stops_children", SPAWN),
    ("std_callback_mirror", INVOKE),
    ("std_choose_branches", STDLIB),
    ("std_ctx_compare_and_calc", STDLIB),
    ("std_input_output_from_context", INVOKE),
];

const INVOKE: &str = "XState actor logic (echo, reject, never) is not an SCXML document";

const SEND: &str = "sendTo and sendParent address XState actors, which the export does not write \
as SCXML targets";

const SPAWN: &str = "spawnChild and stopChild start and stop XState actors that belong to no \
state; SCXML starts a child only with <invoke>";

const STDLIB: &str = "the export writes only the standard implementations that have an SCXML \
equivalent";

const FINAL_IN_PARALLEL: &str = "SCXML allows only <state>, <parallel> and <history> inside a \
<parallel>; XState takes a final state there as a region";

/// Corpus cases where the SCXML run differs from XState's, and why.
const DIVERGENT: &[(&str, &str)] = &[
    ("history_default_parallel_parent_from_region", LCCA_COMPOUND),
    ("initial_entry_order", PARALLEL_ROOT),
    ("nested_parallel_done_bubbles", PARALLEL_ROOT),
];

const PARALLEL_ROOT: &str = "a parallel root is a <parallel> inside <scxml>: when its regions \
complete SCXML raises done.state for it, but only a top-level <final> halts a session, so the \
status stays active where XState's machine is done";

const LCCA_COMPOUND: &str = "SCXML's transition domain is the nearest compound ancestor: the \
transition from region k2 to the history of its parallel parent k1, itself a region of the \
parallel root, exits and re-enters everything under <scxml>, so the root's other region k4 \
starts again at its initial state; XState's domain is the parallel parent, and k4 stays where it \
was";

fn kind_matches(k: StateKind, s: SKind, compound: bool) -> bool {
    match (k, s) {
        (StateKind::Atomic, SKind::State) => !compound,
        (StateKind::Compound, SKind::State) => compound,
        (StateKind::Parallel, SKind::Parallel) | (StateKind::Final, SKind::Final) => true,
        (StateKind::History { deep }, SKind::History(h)) => deep == (h == HistoryKind::Deep),
        _ => false,
    }
}

fn priority(descriptor: &str) -> (u8, isize) {
    if descriptor == "*" {
        (2, 0)
    } else if let Some(prefix) = descriptor.strip_suffix(".*") {
        (1, -(prefix.len() as isize))
    } else {
        (0, 0)
    }
}

fn same_structure(m: &Machine<Value>, doc: &Document) -> Result<(), String> {
    let ids = scxml_ids(m);
    let wrapped = root_is_wrapped(m);
    let by_id = |id: &str| doc.state_by_id(id).ok_or(format!("state {id:?} missing"));
    if m.states().len() + wrapped as usize != doc.states.len() {
        return Err(format!(
            "{} states, exported {}",
            m.states().len(),
            doc.states.len()
        ));
    }
    let first = if wrapped { 0 } else { 1 };
    for (i, n) in m.states().iter().enumerate().skip(first) {
        let s = by_id(&ids[i])?;
        let st = &doc.states[s];
        let compound = doc.is_compound(s);
        let kind_ok = if i == 0 {
            // The root, written as a state inside <scxml>.
            matches!(st.kind, SKind::State | SKind::Parallel)
        } else {
            kind_matches(n.kind, st.kind, compound)
        };
        if !kind_ok {
            return Err(format!("{}: kind {:?} became {:?}", n.id, n.kind, st.kind));
        }
        let parent = match n.parent {
            Some(0) if !wrapped => Some(doc.states[0].id.clone()),
            Some(p) => Some(ids[p as usize].clone()),
            None => Some(doc.states[0].id.clone()),
        };
        let exported_parent = st.parent.map(|p| doc.states[p].id.clone());
        if parent != exported_parent {
            return Err(format!(
                "{}: parent {parent:?} became {exported_parent:?}",
                n.id
            ));
        }
        if n.kind == StateKind::Compound {
            let want = n.initial.map(|x| ids[x as usize].clone());
            let got = st
                .initial
                .and_then(|t| doc.transitions[t].targets.first().copied())
                .map(|x| doc.states[x].id.clone());
            if want != got {
                return Err(format!("{}: initial {want:?} became {got:?}", n.id));
            }
        }
        // XState's own event names are renamed to SCXML's (done.state.*)
        // or to SCXML ids (xstate.after.*): compared as "some xstate event".
        let shown = |e: &str| {
            if e.starts_with("xstate.") || e.starts_with("done.state.") {
                "(platform)".to_owned()
            } else {
                e.to_owned()
            }
        };
        let mut on: Vec<_> = n.on.iter().collect();
        on.sort_by_key(|(d, _)| priority(d));
        let mut want: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        for &t in n
            .always
            .iter()
            .chain(on.iter().flat_map(|(_, ts)| ts.iter()))
        {
            let tr = &m.transitions()[t as usize];
            let events = tr.event.iter().map(|e| shown(e)).collect();
            let self_only = tr.targets == [i as u16] && !tr.reenter && n.is_atomic();
            let targets = if self_only {
                Vec::new()
            } else {
                tr.targets
                    .iter()
                    .map(|&x| ids[x as usize].clone())
                    .collect()
            };
            want.push((events, targets));
        }
        let got: Vec<(Vec<String>, Vec<String>)> = st
            .transitions
            .iter()
            .map(|&t| {
                let tr = &doc.transitions[t];
                let targets = tr
                    .targets
                    .iter()
                    .map(|&x| doc.states[x].id.clone())
                    .collect();
                (tr.events.iter().map(|e| shown(e)).collect(), targets)
            })
            .collect();
        if want != got {
            return Err(format!("{}: transitions {want:?} became {got:?}", n.id));
        }
    }
    Ok(())
}

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

#[test]
fn json_machines_round_trip_through_scxml() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("turno-chart's corpus")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("machine.json").exists())
        .collect();
    dirs.sort();
    assert!(dirs.len() > 50, "corpus too small: {}", dirs.len());
    let mut refused = BTreeMap::new();
    let mut divergent = BTreeMap::new();
    let mut agreed = 0;
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(dir.join("machine.json")).unwrap();
        // A case with child charts (`charts/NAME.json`) invokes them by
        // name: the root machine is exported with each declared as an actor.
        let mut imp = stdlib::implementations();
        if let Ok(charts) = std::fs::read_dir(dir.join("charts")) {
            for chart in charts {
                let path = chart.unwrap().path();
                if path.extension().is_some_and(|x| x == "json") {
                    imp = imp.actor(path.file_stem().unwrap().to_string_lossy());
                }
            }
        }
        let m = load_json(&text, &imp).unwrap_or_else(|e| panic!("{name}: {e}"));
        let scxml = match to_scxml(&m) {
            Ok(s) => s,
            Err(e) => {
                refused.insert(name, e.to_string());
                continue;
            }
        };
        let doc = load_str(&scxml, None).unwrap_or_else(|e| panic!("{name}: {e}\n{scxml}"));
        same_structure(&m, &doc).unwrap_or_else(|e| panic!("{name}: {e}\n{scxml}"));
        // Behaviour: XState's recorded run, on the SCXML interpreter.
        let events: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("events.json")).unwrap())
                .unwrap();
        let expected: Vec<Value> = std::fs::read_to_string(dir.join("expected.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let keys: BTreeMap<String, String> = scxml_ids(&m)
            .into_iter()
            .zip(m.states().iter().map(|n| n.key.to_string()))
            .collect();
        let name_of = |s: usize| keys[&doc.states[s].id].clone();
        let wrapped = root_is_wrapped(&m);
        let got = match script::run_configurations(&doc, &items(&events)) {
            Ok(lines) => lines
                .into_iter()
                .enumerate()
                .map(|(step, (config, running))| {
                    let mut value = script::state_value_named(&doc, &config, &name_of);
                    if wrapped {
                        // The root written as a state: its value is the machine's.
                        value = value
                            .as_object()
                            .and_then(|o| o.values().next().cloned())
                            .unwrap_or(value);
                    }
                    serde_json::json!({
                        "step": step,
                        "value": value,
                        "status": if running { "active" } else { "done" },
                    })
                })
                .collect::<Vec<_>>(),
            Err(e) => vec![Value::String(e.to_string())],
        };
        let comparable: Vec<Value> = expected
            .iter()
            .map(|l| serde_json::json!({"step": l["step"], "value": l["value"], "status": l["status"]}))
            .collect();
        if got == comparable {
            agreed += 1;
        } else {
            divergent.insert(name, format!("got {got:?}\nexpected {comparable:?}"));
        }
    }
    let refused_names: Vec<&str> = refused.keys().map(String::as_str).collect();
    let divergent_names: Vec<&str> = divergent.keys().map(String::as_str).collect();
    println!(
        "{agreed} agree, {} refused, {} divergent",
        refused.len(),
        divergent.len()
    );
    for (k, v) in &refused {
        println!("refused {k}: {v}");
    }
    for (k, v) in &divergent {
        println!("divergent {k}: {v}");
    }
    assert_eq!(
        refused_names,
        REFUSED.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "{refused:#?}"
    );
    assert_eq!(
        divergent_names,
        DIVERGENT.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "{divergent:#?}"
    );
}
