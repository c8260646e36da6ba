//! `turno chart scxml-suite`, and `turno chart run|mermaid` on SCXML
//! documents, `turno chart export-scxml` on JSON machines.

use std::path::{Path, PathBuf};
use std::process::Command;

fn turno() -> Command {
    Command::new(env!("CARGO_BIN_EXE_turno"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("turno-scxml-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn suite() -> PathBuf {
    turno_scxml::suite::locate_suite(None, Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("the W3C suite: set TURNO_SCXML_SUITE or put it at ../shared/conformance/scxml-w3c")
}

#[test]
fn scxml_suite_prints_one_line_per_test_and_the_totals() {
    let out = turno()
        .args(["chart", "scxml-suite"])
        .arg(suite())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"158 passed, 0 failed"), "{text}");
    assert!(lines[lines.len() - 2].starts_with("suite time: "), "{text}");
    assert_eq!(lines.len(), 160);
    assert!(lines.contains(&"144 pass"));
    assert!(out.status.success());
}

#[test]
fn scxml_suite_all_reports_the_basic_http_failures_and_exits_1() {
    let out = turno()
        .args(["chart", "scxml-suite", "--all"])
        .arg(suite())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.ends_with("179 passed, 12 failed\n"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("509 fail ")));
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn scxml_suite_without_a_folder_is_a_usage_error() {
    let out = turno()
        .args(["chart", "scxml-suite", "/nonexistent/suite"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("manifest.xml"));
}

#[test]
fn run_and_mermaid_on_an_scxml_document() {
    let dir = scratch("run");
    let doc = dir.join("light.scxml");
    std::fs::write(
        &doc,
        r#"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" initial="green">
  <state id="green"><transition event="NEXT" target="yellow"/></state>
  <state id="yellow"><onentry><send event="NEXT" delay="2s"/></onentry><transition event="NEXT" target="red"/></state>
  <final id="red"/>
</scxml>"#,
    )
    .unwrap();
    let events = dir.join("events.json");
    std::fs::write(&events, r#"[{"type": "NEXT"}, {"advance_ms": 2000}]"#).unwrap();
    let out = turno()
        .args(["chart", "run"])
        .arg(&doc)
        .arg(&events)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"step\":0,\"value\":\"green\",\"status\":\"active\"}\n\
         {\"step\":1,\"value\":\"yellow\",\"status\":\"active\"}\n\
         {\"step\":2,\"value\":\"red\",\"status\":\"done\"}\n"
    );
    let out = turno()
        .args(["chart", "mermaid"])
        .arg(&doc)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("stateDiagram-v2\n"), "{text}");
    assert!(text.contains("green --> yellow : NEXT"), "{text}");
}

#[test]
fn a_malformed_document_names_file_line_and_column() {
    let dir = scratch("bad");
    let doc = dir.join("bad.scxml");
    std::fs::write(
        &doc,
        "<scxml>\n  <state id='a'>\n    <transition target='b'/>\n  </state>\n</scxml>",
    )
    .unwrap();
    let events = dir.join("events.json");
    std::fs::write(&events, "[]").unwrap();
    let out = turno()
        .args(["chart", "run"])
        .arg(&doc)
        .arg(&events)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.scxml:3:5: invalid SCXML: transition target \"b\" is not a state"),
        "{err}"
    );
}

#[test]
fn export_scxml_writes_a_document_the_loader_reads() {
    let dir = scratch("export");
    let machine = dir.join("toggle.json");
    std::fs::write(
        &machine,
        r#"{"id": "toggle", "initial": "off", "context": {"n": 0},
            "states": {"off": {"on": {"T": {"target": "on", "actions": {"type": "inc", "params": {"key": "n"}}}}},
                       "on": {"on": {"T": "off"}}}}"#,
    )
    .unwrap();
    let out = turno()
        .args(["chart", "export-scxml"])
        .arg(&machine)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let doc = dir.join("toggle.scxml");
    std::fs::write(&doc, &text).unwrap();
    let events = dir.join("events.json");
    std::fs::write(&events, r#"[{"type": "T"}, {"type": "T"}]"#).unwrap();
    let out = turno()
        .args(["chart", "run"])
        .arg(&doc)
        .arg(&events)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"step\":0,\"value\":\"off\",\"status\":\"active\"}\n\
         {\"step\":1,\"value\":\"on\",\"status\":\"active\"}\n\
         {\"step\":2,\"value\":\"off\",\"status\":\"active\"}\n",
        "{text}"
    );
}
