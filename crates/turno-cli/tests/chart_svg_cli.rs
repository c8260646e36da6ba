//! `turno chart svg MACHINE`: the same picture for an XState JSON machine
//! and the SCXML document of the same chart: a box per state, an arrow per
//! transition with its label; a bad file is an error naming it.

use std::path::PathBuf;
use std::process::Command;

fn turno() -> Command {
    Command::new(env!("CARGO_BIN_EXE_turno"))
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("turno-chart-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn svg(path: &std::path::Path) -> String {
    let out = turno().args(["chart", "svg"]).arg(path).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn values<'a>(svg: &'a str, attr: &str) -> Vec<&'a str> {
    let key = format!("{attr}=\"");
    svg.match_indices(&key)
        .map(|(i, _)| {
            let rest = &svg[i + key.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect()
}

#[test]
fn both_formats_draw_every_state_and_transition() {
    let dir = scratch();
    let json = dir.join("flow.json");
    std::fs::write(
        &json,
        r#"{"id": "flow", "initial": "form", "states": {
             "form": {"on": {"NEXT": "review", "SKIP": {"target": "done", "guard": "fail"}}},
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
    <transition event="SKIP" cond="false" target="done"/>
  </state>
  <state id="review">
    <transition event="BACK" target="form"/>
    <transition event="CONFIRM" target="done"/>
    <transition event="TIMEOUT" target="form"/>
  </state>
  <final id="done"/>
</scxml>"#,
    )
    .unwrap();
    let j = svg(&json);
    let s = svg(&scxml);
    for picture in [&j, &s] {
        assert!(picture.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(picture.trim_end().ends_with("</svg>"));
        assert_eq!(
            values(picture, "data-transition"),
            ["0", "1", "2", "3", "4"]
        );
        assert!(picture.contains(">NEXT<") && picture.contains(">CONFIRM<"));
        assert_eq!(picture.matches("class=\"final-mark\"").count(), 1);
    }
    assert!(j.contains(">SKIP [fail]<") && j.contains(">after 500ms<"));
    assert!(s.contains(">SKIP [false]<"));
    let states = |p: &str| -> Vec<String> {
        let mut v: Vec<String> = values(p, "data-state")
            .iter()
            .map(|id| id.rsplit('.').next().unwrap().to_string())
            .filter(|id| ["form", "review", "done"].contains(&id.as_str()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(states(&j), ["done", "form", "review"]);
    assert_eq!(states(&j), states(&s));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_or_bad_machine_is_an_error_naming_it() {
    let out = turno()
        .args(["chart", "svg", "no-such-machine.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no-such-machine.json"), "{err}");
    assert!(out.stdout.is_empty());
}
