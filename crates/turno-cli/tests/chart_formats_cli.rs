//! Every `turno chart` command takes XState JSON machines and SCXML
//! documents through the same doors: `paths` on an SCXML document prints
//! what it prints for the same machine in JSON, its steps run with `run`,
//! every command's help names both formats, and a bad EVENTS file is an
//! error pointing at the line.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn turno() -> Command {
    Command::new(env!("CARGO_BIN_EXE_turno"))
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("turno-chart-formats-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(args: &[&str]) -> (String, String, i32) {
    let out = turno().args(args).output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// One machine in both formats: a form with a delayed expiry.
fn files(dir: &std::path::Path) -> (String, String) {
    let json = dir.join("flow.json");
    std::fs::write(
        &json,
        r#"{"id": "flow", "initial": "form", "states": {
             "form": {"on": {"NEXT": "review", "SKIP": "done"}},
             "review": {"on": {"BACK": "form", "CONFIRM": "done"}, "after": {"500": "form"}},
             "done": {"type": "final"}}}"#,
    )
    .unwrap();
    let scxml = dir.join("flow.scxml");
    std::fs::write(
        &scxml,
        r#"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" initial="form">
  <state id="form">
    <transition event="NEXT" target="review"/>
    <transition event="SKIP" target="done"/>
  </state>
  <state id="review">
    <onentry><send id="t" event="TIMEOUT" delay="500ms"/></onentry>
    <onexit><cancel sendid="t"/></onexit>
    <transition event="BACK" target="form"/>
    <transition event="CONFIRM" target="done"/>
    <transition event="TIMEOUT" target="form"/>
  </state>
  <final id="done"/>
</scxml>"#,
    )
    .unwrap();
    (json.display().to_string(), scxml.display().to_string())
}

#[test]
fn paths_of_an_scxml_document_reach_the_states_of_the_same_json_machine() {
    let dir = scratch("paths");
    let (json, scxml) = files(&dir);
    let (out, err, rc) = run(&["chart", "paths", &scxml]);
    assert_eq!(rc, 0, "{err}");
    let found = lines(&out);
    let values: Vec<&Value> = found.iter().map(|l| &l["value"]).collect();
    assert_eq!(values, ["form", "review", "done"]);
    assert_eq!(found[2]["status"], "done");
    assert_eq!(found[1]["steps"], serde_json::json!([{"type": "NEXT"}]));
    for l in &found {
        assert!(l["context"].is_object(), "{l}");
    }
    // The JSON machine's shortest paths: the same states, the same steps.
    let (out, err, rc) = run(&["chart", "paths", &json]);
    assert_eq!(rc, 0, "{err}");
    let from_json = lines(&out);
    for (a, b) in found.iter().zip(&from_json) {
        assert_eq!(
            (&a["value"], &a["status"], &a["steps"]),
            (&b["value"], &b["status"], &b["steps"])
        );
    }
    assert_eq!(found.len(), from_json.len());
    // Each path's steps run with `turno chart run` to its state.
    for l in &found {
        let events = dir.join("steps.json");
        std::fs::write(&events, l["steps"].to_string()).unwrap();
        let (out, err, rc) = run(&["chart", "run", &scxml, &events.display().to_string()]);
        assert_eq!(rc, 0, "{err}");
        let last = lines(&out).pop().unwrap();
        assert_eq!(last["value"], l["value"], "{l}");
    }
    // --simple and --max as for JSON machines.
    let (out, _, rc) = run(&["chart", "paths", &scxml, "--simple"]);
    assert_eq!(rc, 0);
    assert!(lines(&out).len() >= 4, "{out}");
    let (_, err, rc) = run(&["chart", "paths", &scxml, "--max", "1"]);
    assert_eq!(rc, 2);
    assert!(err.contains("more than 1"), "{err}");
}

#[test]
fn paths_try_time_and_show_the_data_model() {
    let dir = scratch("data");
    let doc = dir.join("count.scxml");
    std::fs::write(
        &doc,
        r#"<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="ecmascript" initial="idle">
  <datamodel><data id="n" expr="0"/></datamodel>
  <state id="idle">
    <transition event="go" target="busy"><assign location="n" expr="n + 1"/></transition>
  </state>
  <state id="busy">
    <onentry><send event="tick" delay="1s"/></onentry>
    <transition event="tick" target="idle" cond="n &lt; 2"/>
    <transition event="tick" target="over"/>
  </state>
  <final id="over"/>
</scxml>"#,
    )
    .unwrap();
    let (out, err, rc) = run(&["chart", "paths", &doc.display().to_string()]);
    assert_eq!(rc, 0, "{err}");
    let found = lines(&out);
    let over = found
        .iter()
        .find(|l| l["value"] == "over")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(over["context"]["n"], 2);
    // Events named by a transition are tried before time passes.
    assert_eq!(
        over["steps"],
        serde_json::json!([{"type": "go"}, {"type": "tick"}, {"type": "go"}, {"type": "tick"}])
    );
    // A pending delayed event: time passes to its deadline.
    let (out, err, rc) = run(&["chart", "paths", &doc.display().to_string(), "--simple"]);
    assert_eq!(rc, 0, "{err}");
    let by_time = lines(&out)
        .into_iter()
        .find(|l| l["steps"] == serde_json::json!([{"type": "go"}, {"advance_ms": 1000}]))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(by_time["value"], "idle");
    assert_eq!(by_time["context"]["n"], 1);
}

#[test]
fn every_chart_command_names_both_formats_in_its_help() {
    for cmd in ["run", "paths", "mermaid", "export-scxml"] {
        let (out, err, rc) = run(&["chart", cmd, "--help"]);
        assert_eq!(rc, 0, "{err}");
        assert!(out.contains("XState v5 JSON"), "{cmd}: {out}");
        assert!(out.contains("SCXML"), "{cmd}: {out}");
    }
    let (out, _, _) = run(&["chart", "--help"]);
    for line in ["run", "paths", "mermaid"] {
        assert!(out.contains(line), "{out}");
    }
}

#[test]
fn a_bad_events_file_points_at_the_line_for_both_formats() {
    let dir = scratch("events");
    let (json, scxml) = files(&dir);
    let events = dir.join("events.json");
    std::fs::write(
        &events,
        "[\n  {\"type\": \"NEXT\"},\n  {\"advance_ms\": -5}\n]\n",
    )
    .unwrap();
    let e = events.display().to_string();
    for machine in [&json, &scxml] {
        let (out, err, rc) = run(&["chart", "run", machine, &e]);
        assert_eq!(rc, 2);
        assert!(out.is_empty(), "nothing runs: {out}");
        assert!(
            err.contains(&format!(
                "{e}:3:3: events[1]: \"advance_ms\" must be a non-negative integer"
            )),
            "{err}"
        );
    }
    std::fs::write(&events, "[{\"type\": \"NEXT\"},\n {\"type\": }]").unwrap();
    for machine in [&json, &scxml] {
        let (_, err, rc) = run(&["chart", "run", machine, &e]);
        assert_eq!(rc, 2);
        assert!(err.contains(&format!("{e}:2:")), "{err}");
        assert!(err.contains("not valid JSON"), "{err}");
    }
}

#[test]
fn a_bad_machine_points_at_the_line_for_both_formats() {
    let dir = scratch("machine");
    let events = dir.join("events.json");
    std::fs::write(&events, "[]").unwrap();
    let e = events.display().to_string();
    let json = dir.join("bad.json");
    std::fs::write(
        &json,
        "{\"initial\": \"a\",\n \"states\": {\n  \"a\": {\"on\": {\"GO\": \"zz\"}}}}",
    )
    .unwrap();
    let j = json.display().to_string();
    for cmd in [vec!["run", &j, &e], vec!["paths", &j], vec!["mermaid", &j]] {
        let mut args = vec!["chart"];
        args.extend(cmd);
        let (_, err, rc) = run(&args);
        assert_eq!(rc, 2);
        assert!(
            err.contains(&format!("{j}:3:22: $.states.a.on.GO")),
            "{err}"
        );
    }
    std::fs::write(&json, "{\"initial\": \"a\",\n \"states\": }").unwrap();
    let (_, err, rc) = run(&["chart", "paths", &j]);
    assert_eq!(rc, 2);
    assert!(err.contains(&format!("{j}:2:")), "{err}");
    let scxml = dir.join("bad.scxml");
    std::fs::write(
        &scxml,
        "<scxml>\n  <state id='a'>\n    <transition target='b'/>\n  </state>\n</scxml>",
    )
    .unwrap();
    let s = scxml.display().to_string();
    for cmd in [vec!["run", &s, &e], vec!["paths", &s], vec!["mermaid", &s]] {
        let mut args = vec!["chart"];
        args.extend(cmd);
        let (_, err, rc) = run(&args);
        assert_eq!(rc, 2);
        assert!(err.contains(&format!("{s}:3:5: ")), "{err}");
    }
}

#[test]
fn run_prints_the_same_lines_for_both_formats() {
    let dir = scratch("same");
    let (json, scxml) = files(&dir);
    let events = dir.join("events.json");
    std::fs::write(
        &events,
        r#"[{"type": "NEXT"}, {"advance_ms": 499}, {"advance_ms": 1}, {"type": "NEXT"}, {"type": "CONFIRM"}]"#,
    )
    .unwrap();
    let e = events.display().to_string();
    let (a, err, rc) = run(&["chart", "run", &json, &e]);
    assert_eq!(rc, 0, "{err}");
    let (b, err, rc) = run(&["chart", "run", &scxml, &e]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(a, b);
    assert_eq!(lines(&a).last().unwrap()["status"], "done");
}
