//! Persisted snapshots: the `--persist-at` contract over the whole corpus,
//! the reader's typed errors, the sanitizer.

mod common {
    pub mod corpus;
}
use common::corpus::{case_show, cases, load_case};

use serde_json::{json, Value};
use turno_chart::persist::{
    InFlight, Persist, RestoreError, Resume, Sanitizer, SnapshotProblem, FORMAT,
};
use turno_chart::script::{self, PersistAt};
use turno_chart::{initial_transition, load_json, stdlib, transition, Action, Event, Machine};

/// The contract: persisting after K items and restoring D ms later prints
/// exactly what the plain run prints with `{"advance_ms": D}` inserted
/// after K items, for every corpus case, every K and three D (and for a
/// case with `show.json`, its context, emitted events, log and children
/// too).
#[test]
fn persist_at_equals_an_inserted_advance_over_the_corpus() {
    let mut runs = 0;
    for case in cases() {
        let (m, charts, items) = load_case(&case);
        let show = case_show(&case);
        for k in 0..=items.len() {
            for d in [0u64, 1500, 10_000] {
                let mut inserted = items.clone();
                inserted.insert(k, script::Item::Advance(d));
                let want = script::run_shown(&m, charts.clone(), &inserted, None, show)
                    .unwrap()
                    .lines;
                let got = script::run_shown(
                    &m,
                    charts.clone(),
                    &items,
                    Some(PersistAt {
                        after_items: k,
                        restore_after_ms: d,
                    }),
                    show,
                )
                .unwrap_or_else(|e| panic!("{}: K={k} D={d}: {e}", case.display()));
                assert_eq!(got.lines, want, "{}: K={k} D={d}", case.display());
                let snap = got.snapshot.expect("a snapshot was taken");
                assert!(snap.contains(FORMAT));
                runs += 1;
            }
        }
    }
    assert!(runs > 300, "only {runs} runs");
}

#[test]
fn persist_at_past_the_end_is_an_error() {
    let (m, _, items) = load_case(&cases()[0]);
    let e = script::run_persisted(
        &m,
        &items,
        Some(PersistAt {
            after_items: items.len() + 1,
            restore_after_ms: 0,
        }),
    )
    .unwrap_err();
    assert!(e.to_string().contains("--persist-at"), "{e}");
}

const FLOW: &str = r#"{
  "id": "flow", "version": "1", "initial": "idle", "context": {"tries": 0},
  "states": {
    "idle": {"on": {"GO": "working"}},
    "working": {
      "entry": {"type": "inc", "params": {"key": "tries"}},
      "invoke": {"id": "job", "src": "never", "input": {"key": "k-1"}},
      "after": {"5000": "timedOut"},
      "on": {"CHECK": "checking"}
    },
    "checking": {"invoke": {"id": "ask", "src": "echo", "input": {"q": 1}}},
    "timedOut": {},
    "deep": {"initial": "x", "states": {"x": {}, "y": {}, "h": {"type": "history"}}},
    "par": {"type": "parallel", "states": {"r1": {}, "r2": {}}}
  }}"#;

fn flow() -> Machine<Value> {
    load_json(FLOW, &stdlib::implementations()).unwrap()
}

fn working(m: &Machine<Value>) -> String {
    let (s0, _) = initial_transition(m).unwrap();
    let (s1, _) = transition(m, &s0, Event::new("GO")).unwrap();
    Persist::new(m).to_string(&s1).unwrap()
}

#[test]
fn an_in_flight_non_idempotent_source_without_a_rule_fails_the_restore() {
    let m = flow();
    let text = working(&m);
    let e = Persist::new(&m).restore(&text, 0).unwrap_err();
    match e {
        RestoreError::InFlight { id, src, .. } => {
            assert_eq!((id.as_str(), src.as_str()), ("job", "never"))
        }
        other => panic!("{other}"),
    }
    // Asking for a re-run of a source not registered idempotent is refused.
    let e = Persist::new(&m)
        .sanitizer(Sanitizer::new().decide(|_| Some(InFlight::Rerun)))
        .restore(&text, 0)
        .unwrap_err();
    assert!(matches!(e, RestoreError::InFlight { .. }), "{e}");
}

#[test]
fn a_safe_state_is_entered_and_the_interrupted_state_is_not_reentered() {
    let m = flow();
    let text = working(&m);
    let r = Persist::new(&m)
        .sanitizer(Sanitizer::new().safe_state("never", "flow.checking"))
        .restore(&text, 100)
        .unwrap();
    assert_eq!(r.snapshot.value(&m).to_json(), "checking");
    // `working`'s entry ran once, before the persist; not again.
    assert_eq!(r.snapshot.context["tries"], 1);
    assert_eq!(
        r.decisions,
        vec![(
            "job".to_string(),
            InFlight::SafeState("flow.checking".into())
        )]
    );
    // The safe state's own invocation starts; the interrupted one is not
    // stopped (nothing runs it) and not restarted.
    let starts: Vec<&str> = r
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::StartInvoke { src, .. } => Some(src.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, ["echo"]);
    assert!(!r
        .actions
        .iter()
        .any(|a| matches!(a, Action::StopInvoke { .. })));
}

#[test]
fn an_idempotent_source_is_rerun_with_the_same_input_and_generation() {
    let m = flow();
    let (s0, _) = initial_transition(&m).unwrap();
    let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
    let text = Persist::new(&m).to_string(&s1).unwrap();
    let r = Persist::new(&m)
        .sanitizer(Sanitizer::new().idempotent("never"))
        .restore(&text, 1000)
        .unwrap();
    let inv = &s1.invocations[0];
    assert!(r.actions.contains(&Action::StartInvoke {
        id: "job".into(),
        src: "never".into(),
        input: json!({"key": "k-1"}),
        generation: inv.generation,
    }));
    // The timer is re-armed at its absolute deadline.
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::Schedule { due_ms: 5000, .. })));
}

#[test]
fn a_delayed_event_fires_at_its_original_deadline_or_by_option() {
    let m = flow();
    let (s0, _) = initial_transition(&m).unwrap();
    let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
    // 3 s later: 2 s left on the 5 s timer.
    let (s2, _) = turno_chart::advance(&m, &s1, 3000).unwrap();
    let text = Persist::new(&m).to_string(&s2).unwrap();
    let san = Sanitizer::new().idempotent("never");
    // Restored 10 s later: overdue, it fires at once (at its deadline).
    let r = Persist::new(&m)
        .sanitizer(san.clone())
        .restore(&text, 13_000)
        .unwrap();
    assert_eq!(r.snapshot.value(&m).to_json(), "timedOut");
    // Restored 1 s later: still armed for 5000.
    let r = Persist::new(&m)
        .sanitizer(san.clone())
        .restore(&text, 4000)
        .unwrap();
    assert_eq!(r.snapshot.value(&m).to_json(), "working");
    assert!(r.actions.contains(&Action::Schedule {
        id: "xstate.after.5000.flow.working".into(),
        seq: s2.scheduled[0].seq,
        due_ms: 5000
    }));
    // Remaining time: 2 s after the restore.
    let r = Persist::new(&m)
        .sanitizer(san.clone())
        .resume(Resume::Remaining)
        .restore(&text, 13_000)
        .unwrap();
    assert_eq!(r.snapshot.scheduled[0].due_ms, 15_000);
    // Restart: the full 5 s again.
    let r = Persist::new(&m)
        .sanitizer(san)
        .resume(Resume::Restart)
        .restore(&text, 13_000)
        .unwrap();
    assert_eq!(r.snapshot.scheduled[0].due_ms, 18_000);
}

fn idle_doc(m: &Machine<Value>) -> Value {
    let (s0, _) = initial_transition(m).unwrap();
    Persist::new(m).to_value(&s0).unwrap()
}

fn problem(m: &Machine<Value>, doc: &Value) -> (String, SnapshotProblem) {
    let e = Persist::new(m).read(&doc.to_string()).unwrap_err();
    (e.path, e.problem)
}

#[test]
fn every_prefix_of_a_snapshot_is_a_typed_error() {
    let m = flow();
    let text = working(&m);
    for cut in 0..text.len() {
        let e = Persist::new(&m).read(&text[..cut]).unwrap_err();
        assert_eq!(e.path, "$");
        assert!(
            matches!(e.problem, SnapshotProblem::Truncated { .. }),
            "cut {cut}: {e}"
        );
    }
    assert!(Persist::new(&m).read(&text).is_ok());
}

#[test]
fn corrupt_foreign_and_hand_edited_snapshots_are_typed_errors_with_paths() {
    let m = flow();
    let base = idle_doc(&m);
    let e = Persist::new(&m).read("{\"format\": tru}").unwrap_err();
    assert!(matches!(e.problem, SnapshotProblem::Corrupt { .. }), "{e}");
    assert_eq!(problem(&m, &json!([1])).0, "$");
    assert_eq!(
        problem(&m, &json!({"a": 1})).1,
        SnapshotProblem::NotASnapshot
    );

    let edit = |f: &dyn Fn(&mut Value)| {
        let mut d = base.clone();
        f(&mut d);
        problem(&m, &d)
    };
    let (p, pr) = edit(&|d| d["format_version"] = json!(9));
    assert_eq!(p, "$.format_version");
    assert!(matches!(pr, SnapshotProblem::FormatVersion { .. }));
    let (p, pr) = edit(&|d| d["machine"]["id"] = json!("other"));
    assert_eq!(p, "$.machine.id");
    assert!(matches!(pr, SnapshotProblem::ForeignMachine { .. }));
    let (p, pr) = edit(&|d| d["machine"]["version"] = json!("0"));
    assert_eq!(p, "$.machine.version");
    assert!(matches!(pr, SnapshotProblem::ForeignVersion { .. }));
    let (p, pr) = edit(&|d| d["configuration"][1] = json!("flow.nowhere"));
    assert_eq!(
        (p.as_str(), pr),
        (
            "$.configuration[1]",
            SnapshotProblem::UnknownState("flow.nowhere".into())
        )
    );
    let (p, _) = edit(&|d| d["configuration"] = json!(["flow", "flow.idle", "flow.timedOut"]));
    assert_eq!(p, "$.configuration");
    let (p, _) = edit(&|d| d["configuration"] = json!(["flow", "flow.par", "flow.par.r1"]));
    assert_eq!(p, "$.configuration");
    let (p, _) = edit(&|d| d["configuration"] = json!(["flow", "flow.deep.x"]));
    assert_eq!(p, "$.configuration");
    let (p, _) = edit(&|d| d["configuration"] = json!(["flow", "flow.deep", "flow.deep.h"]));
    assert_eq!(p, "$.configuration[2]");
    let (p, _) =
        edit(&|d| d["history"] = json!([{"history": "flow.deep.h", "states": ["flow.idle"]}]));
    assert_eq!(p, "$.history[0].states[0]");
    let (p, _) = edit(&|d| d["history"] = json!([{"history": "flow.idle", "states": []}]));
    assert_eq!(p, "$.history[0].history");
    let (p, pr) = edit(&|d| d["statuz"] = json!("active"));
    assert_eq!(
        (p.as_str(), pr),
        ("$.statuz", SnapshotProblem::UnknownField("statuz".into()))
    );
    let (p, _) = edit(&|d| d["status"] = json!("sleeping"));
    assert_eq!(p, "$.status");
    let (p, pr) = edit(&|d| {
        d.as_object_mut().unwrap().remove("now_ms");
    });
    assert_eq!((p.as_str(), pr), ("$", SnapshotProblem::Missing("now_ms")));
    let (p, _) = edit(&|d| {
        d["scheduled"] =
            json!([{"id": "x", "seq": 99, "due_ms": 1, "event": {"type": "E"}, "to": "own"}])
    });
    assert_eq!(p, "$.scheduled[0].seq");
    let (p, _) = edit(&|d| {
        d["next_seq"] = json!(5);
        d["scheduled"] =
            json!([{"id": "x", "seq": 0, "due_ms": 1, "event": {"type": "E"}, "to": 7}])
    });
    assert_eq!(p, "$.scheduled[0].to");
    // A send bound to an invocation's start names it by its generation.
    for to in [
        json!({"actor": "job", "generation": "first"}),
        json!({"actor": "job", "start": 1}),
    ] {
        let (p, _) = edit(&|d| {
            d["next_seq"] = json!(5);
            d["scheduled"] =
                json!([{"id": "x", "seq": 0, "due_ms": 1, "event": {"type": "E"}, "to": to}])
        });
        assert_eq!(p, "$.scheduled[0].to");
    }
    let mut d = base.clone();
    d["next_seq"] = json!(5);
    d["scheduled"] = json!([{"id": "x", "seq": 0, "due_ms": 1, "event": {"type": "E"},
                             "to": {"actor": "job", "generation": 3}}]);
    let snap = Persist::new(&m).read(&d.to_string()).unwrap();
    assert_eq!(snap.scheduled[0].generation, Some(3));
    let again = Persist::new(&m).to_value(&snap).unwrap();
    assert_eq!(
        again["scheduled"][0]["to"],
        json!({"actor": "job", "generation": 3})
    );
    let (p, _) = edit(&|d| {
        d["next_seq"] = json!(5);
        d["scheduled"] =
            json!([{"id": "x", "seq": 0, "due_ms": "soon", "event": {"type": "E"}, "to": "own"}])
    });
    assert_eq!(p, "$.scheduled[0].due_ms");
    let (p, _) = edit(&|d| {
        d["next_seq"] = json!(5);
        d["invocations"] =
            json!([{"id": "job", "src": "never", "generation": 0, "state": "flow.working"}])
    });
    assert_eq!(p, "$.invocations[0].state", "working is not active");
    let (p, _) = edit(&|d| {
        d["next_seq"] = json!(5);
        d["invocations"] =
            json!([{"id": "job", "src": "echo", "generation": 0, "state": "flow.idle"}])
    });
    assert_eq!(p, "$.invocations[0].state", "idle invokes nothing");
    // A spawned child names no state; a finished one says how it ended;
    // an id is listed once; the old list of spawned ids must be empty.
    let spawned = json!({"id": "w", "src": "never", "generation": 0, "state": "",
                         "input": null, "started_ms": 0, "spawned": true});
    let mut d = base.clone();
    d["next_seq"] = json!(5);
    d["invocations"] = json!([spawned]);
    let mut done = spawned.clone();
    done["id"] = json!("v");
    done["generation"] = json!(1);
    done["status"] = json!("done");
    d["finished"] = json!([done]);
    let snap = Persist::new(&m).read(&d.to_string()).unwrap();
    assert!(snap.invocations[0].spawned && snap.invocations[0].state.is_empty());
    assert_eq!(snap.finished[0].child.id, "v");
    assert_eq!(snap.finished[0].status, turno_chart::Status::Done);
    let again = Persist::new(&m).to_value(&snap).unwrap();
    assert_eq!(again["invocations"], d["invocations"]);
    assert_eq!(again["finished"], d["finished"]);
    let (p, _) = edit(&|d| {
        d["next_seq"] = json!(5);
        d["invocations"] = json!([{"id": "w", "src": "never", "generation": 0,
                                   "state": "flow.idle", "spawned": true}]);
    });
    assert_eq!(p, "$.invocations[0].state", "a spawned child has no state");
    let (p, _) = edit(&|d| {
        d["next_seq"] = json!(5);
        let mut f = spawned.clone();
        f["status"] = json!("active");
        d["finished"] = json!([f]);
    });
    assert_eq!(p, "$.finished[0].status", "a finished child is not active");
    let (p, _) = edit(&|d| {
        d["next_seq"] = json!(5);
        d["invocations"] = json!([spawned]);
        let mut f = spawned.clone();
        f["generation"] = json!(1);
        f["status"] = json!("done");
        d["finished"] = json!([f]);
    });
    assert_eq!(p, "$.finished[0].id", "w is listed twice");
    let (p, _) = edit(&|d| d["children"] = json!(["w"]));
    assert_eq!(p, "$.children");

    // A typed context names the field.
    #[derive(Clone, Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Ctx {
        tries: u32,
    }
    let typed: Machine<Ctx> = load_json(
        r#"{"id": "flow", "version": "1", "initial": "idle", "context": {"tries": 0},
            "states": {"idle": {}}}"#,
        &turno_chart::Implementations::new(),
    )
    .unwrap();
    let mut d = base.clone();
    d["configuration"] = json!(["flow", "flow.idle"]);
    d["context"] = json!({"tries": "many"});
    let e = Persist::new(&typed).read(&d.to_string()).unwrap_err();
    assert_eq!(e.path, "$.context.tries", "{e}");
}
