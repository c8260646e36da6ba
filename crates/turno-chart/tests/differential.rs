//! turno-chart against the real XState v5, line for line.
//!
//! Each `tests/corpus/<case>/` holds `machine.json` (an XState v5 JSON
//! config using the standard implementations), `events.json` (the
//! `turno chart run` items) and `expected.jsonl`, recorded by running XState
//! (`tests/xstate/record.sh`, never written by hand). turno's output must
//! equal it line for line: the same step, status and state value (values
//! compared as JSON, where object key order carries no meaning; XState
//! orders keys by its internal insertion order, turno by document order),
//! the error of a failed chart, and for a case with `show.json` the fields
//! it names (`--show`: context, emitted events, log messages, children)
//! after every item.
//!
//! When Node and the pinned XState are installed (`npm ci` in
//! `tests/xstate`, which `scripts/test.sh` does), the recording itself is
//! checked too: XState is run again and must still print `expected.jsonl`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use turno_chart::script;

mod common {
    pub mod corpus;
}
use common::corpus::{case_show, cases, load_case};

fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

fn turno_lines(case: &Path) -> Vec<Value> {
    let (m, charts, events) = load_case(case);
    let lines = script::run_shown(&m, charts, &events, None, case_show(case))
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()))
        .lines;
    lines
        .iter()
        .map(|l| serde_json::from_str(&serde_json::to_string(l).unwrap()).unwrap())
        .collect()
}

#[test]
fn the_corpus_is_large_enough() {
    assert!(cases().len() >= 60, "at least 60 differential cases");
}

#[test]
fn turno_equals_recorded_xstate_line_for_line() {
    let mut failures = Vec::new();
    for case in cases() {
        let expected = parse_lines(&std::fs::read_to_string(case.join("expected.jsonl")).unwrap());
        let got = turno_lines(&case);
        if got != expected {
            failures.push(format!(
                "{}:\n  xstate: {}\n  turno:  {}",
                case.file_name().unwrap().to_string_lossy(),
                expected
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n          "),
                got.iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n          "),
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_recordings_are_what_xstate_prints_now() {
    let runner = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xstate");
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node_ok || !runner.join("node_modules/xstate").exists() {
        eprintln!("skipped: node or tests/xstate/node_modules missing (run `npm ci` in tests/xstate; scripts/test.sh does)");
        return;
    }
    // One Node process runs every case (`run.js --batch`: case folders on
    // stdin, one JSON result per case on stdout, in order); each case still
    // gets its own machine, actor and clock there. record.sh records each
    // case in a fresh process, so a case that leaked state into the next
    // would show here as a difference.
    let cases = cases();
    let mut child = Command::new("node")
        .arg(runner.join("run.js"))
        .arg("--batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    {
        let mut stdin = child.stdin.take().unwrap();
        for case in &cases {
            writeln!(stdin, "{}", case.display()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "run.js --batch failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = parse_lines(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(results.len(), cases.len(), "one result per case");
    for (case, result) in cases.iter().zip(&results) {
        assert_eq!(
            result["case"],
            case.display().to_string(),
            "results in order"
        );
        if let Some(error) = result.get("error") {
            panic!(
                "{}: XState failed: {}",
                case.display(),
                error.as_str().unwrap_or_default()
            );
        }
        let live = result["output"].as_str().expect("output is a string");
        let recorded = std::fs::read_to_string(case.join("expected.jsonl")).unwrap();
        assert_eq!(
            live,
            recorded,
            "{}: re-record with tests/xstate/record.sh",
            case.display()
        );
    }
}
