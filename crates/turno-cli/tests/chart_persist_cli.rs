//! `turno chart run --persist-at K --restore-after-ms D [--snapshot-out
//! FILE]` and `turno chart paths`: the documented contracts, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn turno() -> Command {
    Command::new(env!("CARGO_BIN_EXE_turno"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("turno-chart-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const MACHINE: &str = r#"{"id": "w", "initial": "form", "context": {"n": 0},
 "states": {
   "form": {"on": {"NEXT": "review", "SAVE": {"actions": {"type": "inc", "params": {"key": "n"}},
            "guard": {"type": "ctxLt", "params": {"key": "n", "value": 2}}}}},
   "review": {"on": {"CONFIRM": "sending", "EDIT": "form"}, "after": {"5000": "expired"}},
   "sending": {"invoke": {"id": "pay", "src": "never"}, "after": {"2000": "review"}},
   "expired": {"type": "final"}
 }}"#;

const EVENTS: &str = r#"[{"type": "SAVE"}, {"type": "NEXT"}, {"advance_ms": 1000},
  {"type": "CONFIRM"}, {"advance_ms": 500}, {"type": "EDIT"}, {"advance_ms": 9000}]"#;

fn run(args: &[&str]) -> (String, String, i32) {
    let out = turno().args(args).output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

fn files(dir: &Path) -> (String, String) {
    let m = dir.join("machine.json");
    let e = dir.join("events.json");
    std::fs::write(&m, MACHINE).unwrap();
    std::fs::write(&e, EVENTS).unwrap();
    (m.display().to_string(), e.display().to_string())
}

/// For every K and D in {0, 1500, 10000}: `--persist-at K
/// --restore-after-ms D` prints exactly the plain run of EVENTS with
/// `{"advance_ms": D}` inserted after K items. `extra` goes to both runs.
/// Returns the snapshots taken.
fn assert_contract(dir: &Path, m: &str, e: &str, events: &str, extra: &[&str]) -> Vec<Value> {
    let items: Vec<Value> = serde_json::from_str(events).unwrap();
    let mut snapshots = Vec::new();
    for k in 0..=items.len() {
        for d in [0u64, 1500, 10_000] {
            let mut inserted = items.clone();
            inserted.insert(k, serde_json::json!({"advance_ms": d}));
            let ins = dir.join("inserted.json");
            std::fs::write(&ins, Value::Array(inserted).to_string()).unwrap();
            let mut plain = vec!["chart", "run", m, ins.to_str().unwrap()];
            plain.extend_from_slice(extra);
            let (want, err, rc) = run(&plain);
            assert_eq!(rc, 0, "{err}");
            let snap = dir.join(format!("snap-{k}-{d}.json"));
            let (k_s, d_s) = (k.to_string(), d.to_string());
            let mut persisted = vec![
                "chart",
                "run",
                m,
                e,
                "--persist-at",
                &k_s,
                "--restore-after-ms",
                &d_s,
                "--snapshot-out",
                snap.to_str().unwrap(),
            ];
            persisted.extend_from_slice(extra);
            let (got, err, rc) = run(&persisted);
            assert_eq!(rc, 0, "{err}");
            assert_eq!(got, want, "K={k} D={d}");
            assert_eq!(got.lines().count(), items.len() + 2);
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&snap).unwrap()).unwrap();
            assert_eq!(doc["format"], "turno-chart-snapshot");
            snapshots.push(doc);
        }
    }
    snapshots
}

#[test]
fn persist_at_prints_exactly_the_run_with_an_inserted_advance() {
    let dir = scratch("persist");
    let (m, e) = files(&dir);
    assert_contract(&dir, &m, &e, EVENTS, &[]);
}

/// A parent whose `waiting` state invokes a child chart with its own
/// context and `after` timer; the child reports a context-dependent output.
const PARENT: &str = r#"{"id": "parent", "initial": "idle", "context": {"got": null},
 "states": {
   "idle": {"on": {"START": "waiting"}},
   "waiting": {"invoke": {"id": "cd", "src": "countdown",
                          "onDone": {"target": "rang", "actions": {"type": "setFromEvent", "params": {"key": "got", "from": "output"}}}},
               "after": {"2000": "late"}, "on": {"CANCEL": "idle", "POKE": {"actions": {"type": "sendTo", "params": {"to": "cd", "event": {"type": "BUMP"}}}}}},
   "rang": {"on": {"START": "waiting"}},
   "late": {}
 }}"#;

const CHILD: &str = r#"{"id": "countdown", "initial": "running", "context": {"ticks": 0},
 "states": {
   "running": {"after": {"300": {"target": "running", "reenter": true, "actions": {"type": "inc", "params": {"key": "ticks"}}}},
               "on": {"BUMP": {"actions": {"type": "inc", "params": {"key": "ticks"}}}},
               "always": {"guard": {"type": "ctxGte", "params": {"key": "ticks", "value": 3}}, "target": "finished"}},
   "finished": {"type": "final"}
 },
 "output": {"rang": true}}"#;

const CHILD_EVENTS: &str = r#"[{"type": "START"}, {"advance_ms": 250}, {"type": "POKE"},
  {"advance_ms": 100}, {"type": "CANCEL"}, {"type": "START"}, {"advance_ms": 400},
  {"advance_ms": 300}, {"type": "START"}, {"advance_ms": 299}, {"type": "POKE"}, {"advance_ms": 5000}]"#;

#[test]
fn persist_at_is_exact_for_a_machine_with_an_invoked_child_chart() {
    let dir = scratch("child");
    let m = dir.join("parent.json");
    let c = dir.join("countdown.json");
    let e = dir.join("events.json");
    std::fs::write(&m, PARENT).unwrap();
    std::fs::write(&c, CHILD).unwrap();
    std::fs::write(&e, CHILD_EVENTS).unwrap();
    let chart = format!("countdown={}", c.display());
    let (m, e) = (m.display().to_string(), e.display().to_string());
    let snaps = assert_contract(&dir, &m, &e, CHILD_EVENTS, &["--chart", &chart]);
    // Not vacuous: many snapshots hold the running child, with its own
    // context and its pending timer at an absolute deadline.
    let with_child: Vec<&Value> = snaps
        .iter()
        .filter(|d| {
            d["charts"]
                .as_object()
                .is_some_and(|c| c.contains_key("cd"))
        })
        .collect();
    assert!(
        with_child.len() >= 15,
        "{} snapshots hold the child",
        with_child.len()
    );
    for d in &with_child {
        let child = &d["charts"]["cd"];
        assert_eq!(child["machine"]["id"], "countdown");
        assert!(child["context"]["ticks"].is_u64());
        assert_eq!(d["invocations"][0]["src"], "countdown");
        let due = child["scheduled"][0]["due_ms"].as_u64().unwrap();
        assert!(due > child["now_ms"].as_u64().unwrap());
    }
    // The plain run reaches the child's output through onDone.
    let (out, _, rc) = run(&["chart", "run", &m, &e, "--chart", &chart]);
    assert_eq!(rc, 0);
    let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["value"], "rang");
    // A bad --chart is an error naming it.
    let (_, err, rc) = run(&["chart", "run", &m, &e, "--chart", "countdown"]);
    assert_eq!(rc, 2);
    assert!(err.contains("NAME=FILE"), "{err}");
    let (_, err, rc) = run(&["chart", "run", &m, &e]);
    assert_eq!(rc, 2, "countdown is not registered without --chart");
    assert!(err.contains("countdown"), "{err}");
}

#[test]
fn persist_flags_are_checked() {
    let dir = scratch("flags");
    let (m, e) = files(&dir);
    let (_, err, rc) = run(&["chart", "run", &m, &e, "--persist-at", "99"]);
    assert_eq!(rc, 2);
    assert!(err.contains("--persist-at 99"), "{err}");
    let (_, _, rc) = run(&["chart", "run", &m, &e, "--restore-after-ms", "5"]);
    assert_ne!(rc, 0, "--restore-after-ms needs --persist-at");
    let (out, _, rc) = run(&["chart", "run", &m, &e]);
    assert_eq!(rc, 0);
    assert_eq!(out.lines().count(), 8);
}

#[test]
fn paths_reach_the_states_they_claim() {
    let dir = scratch("paths");
    let (m, _) = files(&dir);
    for simple in [false, true] {
        let mut args = vec!["chart", "paths", m.as_str()];
        if simple {
            args.push("--simple");
        }
        let (out, err, rc) = run(&args);
        assert_eq!(rc, 0, "{err}");
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(lines.len() >= 8, "{out}");
        for (i, l) in lines.iter().enumerate() {
            let steps = dir.join(format!("steps-{simple}-{i}.json"));
            std::fs::write(&steps, l["steps"].to_string()).unwrap();
            let (ran, err, rc) = run(&["chart", "run", &m, steps.to_str().unwrap()]);
            assert_eq!(rc, 0, "{err}");
            let last: Value = serde_json::from_str(ran.lines().last().unwrap()).unwrap();
            assert_eq!(last["value"], l["value"], "{l}");
            assert_eq!(last["status"], l["status"], "{l}");
        }
        if !simple {
            assert!(lines.iter().any(|l| l["value"] == "expired"));
        }
    }
}
