//! `turno js run`: the documented command line, its exit codes and the trace file.

use std::path::PathBuf;
use std::process::Command;

fn turno() -> Command {
    Command::new(env!("CARGO_BIN_EXE_turno"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("turno-js-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn help_prints_usage() {
    let out = turno().args(["js", "run", "--help"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--model",
        "--trace",
        "--cost",
        "--input",
        "--browser",
        "FILE",
    ] {
        assert!(text.contains(flag), "{flag} missing from:\n{text}");
    }
}

#[test]
fn runs_a_file_and_writes_the_trace() {
    let dir = scratch("trace");
    let file = dir.join("a.js");
    std::fs::write(&file, "Promise.resolve(1).then(() => { throw new Error('late'); }).catch(() => {});\nconsole.log('hi');\nprocess.exitCode = 4;").unwrap();
    let out = dir.join("trace.json");
    let o = turno()
        .args(["js", "run"])
        .arg(&file)
        .args(["--model", "node", "--trace"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "hi\n");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with("{\"format\":\"turno-js-trace\",\"version\":"),
        "{text}"
    );
    assert!(text
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("{\"seq\":0,\"t_ns\":0,\"kind\":"));
    let trace = turno_js::Trace::from_json_lines(&text).unwrap();
    assert!(trace.events.len() > 5);
    assert_eq!(
        turno_js::Trace::from_json_lines(&trace.to_json_lines()).unwrap(),
        trace
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_usage_and_missing_files_exit_2() {
    let dir = scratch("bad");
    let file = dir.join("ok.js");
    std::fs::write(&file, "console.log(1)").unwrap();
    let code = |args: &[&str]| turno().args(args).output().unwrap().status.code();
    assert_eq!(code(&["js", "run"]), Some(2));
    assert_eq!(
        code(&["js", "run", file.to_str().unwrap(), "--model", "deno"]),
        Some(2)
    );
    assert_eq!(
        code(&["js", "run", file.to_str().unwrap(), "--cost", "-3"]),
        Some(2)
    );
    assert_eq!(
        code(&["js", "run", dir.join("missing.js").to_str().unwrap()]),
        Some(2)
    );
    let bad_input = dir.join("input.json");
    std::fs::write(&bad_input, "[{\"at_ms\": 1, \"type\": \"wiggle\"}]").unwrap();
    let o = turno()
        .args([
            "js",
            "run",
            file.to_str().unwrap(),
            "--model",
            "html",
            "--input",
        ])
        .arg(&bad_input)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("input.json"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_runaway_program_exits_3_with_its_partial_output() {
    let dir = scratch("runaway");
    let file = dir.join("loop.js");
    std::fs::write(&file, "console.log('start'); while (true) {}").unwrap();
    let o = turno()
        .args(["js", "run"])
        .arg(&file)
        .args(["--max-loop-iterations", "1000"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "start\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn all_builtins_shows_what_the_runtime_profile_hides() {
    let dir = scratch("builtins");
    let file = dir.join("detect.js");
    std::fs::write(&file, "console.log(typeof Promise.withResolvers);").unwrap();
    let out = |extra: &[&str]| {
        let o = turno()
            .args(["js", "run"])
            .arg(&file)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    assert_eq!(out(&[]), "undefined\n");
    assert_eq!(out(&["--all-builtins"]), "function\n");
    let _ = std::fs::remove_dir_all(&dir);
}
