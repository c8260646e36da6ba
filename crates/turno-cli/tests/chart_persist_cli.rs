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

#[test]
fn persist_at_prints_exactly_the_run_with_an_inserted_advance() {
    let dir = scratch("persist");
    let (m, e) = files(&dir);
    let items: Vec<Value> = serde_json::from_str(EVENTS).unwrap();
    for k in 0..=items.len() {
        for d in [0u64, 1500, 10_000] {
            let mut inserted = items.clone();
            inserted.insert(k, serde_json::json!({"advance_ms": d}));
            let ins = dir.join("inserted.json");
            std::fs::write(&ins, Value::Array(inserted).to_string()).unwrap();
            let (want, _, rc) = run(&["chart", "run", &m, ins.to_str().unwrap()]);
            assert_eq!(rc, 0);
            let snap = dir.join(format!("snap-{k}-{d}.json"));
            let (got, err, rc) = run(&[
                "chart",
                "run",
                &m,
                &e,
                "--persist-at",
                &k.to_string(),
                "--restore-after-ms",
                &d.to_string(),
                "--snapshot-out",
                snap.to_str().unwrap(),
            ]);
            assert_eq!(rc, 0, "{err}");
            assert_eq!(got, want, "K={k} D={d}");
            assert_eq!(got.lines().count(), items.len() + 2);
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&snap).unwrap()).unwrap();
            assert_eq!(doc["format"], "turno-chart-snapshot");
        }
    }
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
