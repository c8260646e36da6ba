//! Behaviour the oracles cannot check: budgets, the trace, exit codes,
//! notes, the clamp as recorded.

use std::time::Duration;

use serde_json::Value;
use turno_js::{run, Cost, JsRunError, Model, RunOptions};

// These tests pin the scheduling rules with JavaScript taking no virtual
// time (`--cost 0`, the explorer's behaviour before the cost model), so the
// times they assert are exact; `tests/cost.rs` covers the cost model.
fn opts(model: Model) -> RunOptions {
    RunOptions {
        cost: Cost::ZERO,
        ..RunOptions::new(model)
    }
}

fn traced(model: Model) -> RunOptions {
    RunOptions {
        trace: true,
        ..opts(model)
    }
}

#[test]
fn endless_microtask_loop_stops_at_the_step_budget() {
    let src =
        "console.log('start');\nfunction again() { Promise.resolve().then(again); }\nagain();";
    for model in [Model::Node, Model::Html] {
        let o = RunOptions {
            max_steps: 2_000,
            ..opts(model)
        };
        let err = run(src, "loop.js", &o).unwrap_err();
        assert!(
            matches!(
                err,
                JsRunError::StepBudget {
                    max_steps: 2_000,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("step budget"), "{err}");
        let partial = err.partial_report().unwrap();
        assert_eq!(partial.stdout_lines(), ["start"]);
        assert_eq!(partial.exit_code, 1);
    }
}

#[test]
fn endless_next_tick_loop_stops_too() {
    let src = "function again() { process.nextTick(again); }\nagain();";
    let o = RunOptions {
        max_steps: 1_000,
        ..opts(Model::Node)
    };
    assert!(matches!(
        run(src, "ticks.js", &o),
        Err(JsRunError::StepBudget { .. })
    ));
}

#[test]
fn interval_never_cleared_stops_at_the_virtual_time_budget() {
    let src = "let n = 0; setInterval(() => { n++; }, 100);";
    let o = RunOptions {
        max_virtual_time: Duration::from_secs(2),
        ..opts(Model::Html)
    };
    let err = run(src, "interval.js", &o).unwrap_err();
    match &err {
        JsRunError::TimeBudget { next_ns, .. } => assert!(*next_ns > 2_000_000_000),
        other => panic!("expected a time budget error, got {other}"),
    }
    assert_eq!(
        err.partial_report().unwrap().steps,
        21,
        "script + 20 intervals"
    );
}

#[test]
fn synchronous_infinite_loop_stops_at_the_loop_budget() {
    let src = "console.log('before');\nwhile (true) {}";
    let o = RunOptions {
        max_loop_iterations: 10_000,
        ..opts(Model::Node)
    };
    let err = run(src, "spin.js", &o).unwrap_err();
    assert!(matches!(err, JsRunError::LoopBudget { .. }), "{err}");
    assert!(err.to_string().contains("spin.js"));
    assert_eq!(err.partial_report().unwrap().stdout_lines(), ["before"]);
}

#[test]
fn html_nesting_clamp_is_applied_from_level_six() {
    let src = "let n = 0;\nfunction nest() { n++; if (n < 9) setTimeout(nest, 0); else console.log(performance.now()); }\nsetTimeout(nest, 0);";
    let report = run(src, "clamp.js", &traced(Model::Html)).unwrap();
    // Levels 1..=6 get 0 ms; the timers set at levels 6, 7, 8 get 4 ms.
    assert_eq!(report.stdout_lines(), ["12"]);
    let trace = report.trace.unwrap();
    let clamps: Vec<(u64, bool)> = trace
        .events_of_kind("enqueue")
        .filter(|e| e["queue"] == "timers")
        .map(|e| {
            (
                e["nesting"].as_u64().unwrap(),
                e["clamped"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        clamps,
        [
            (1, false),
            (2, false),
            (3, false),
            (4, false),
            (5, false),
            (6, false),
            (7, true),
            (8, true),
            (9, true)
        ]
    );
}

#[test]
fn node_has_a_one_ms_minimum_and_no_clamp() {
    let src = "let n = 0;\nfunction nest() { n++; if (n < 9) setTimeout(nest, 0); else console.log(performance.now()); }\nsetTimeout(nest, 0);";
    let report = run(src, "min.js", &opts(Model::Node)).unwrap();
    assert_eq!(report.stdout_lines(), ["9"]);
}

#[test]
fn trace_shows_a_promise_settling_with_its_slots() {
    let src = "const p = new Promise((resolve) => setTimeout(() => resolve('v'), 5));\np.then((x) => console.log(x));";
    let report = run(src, "p.js", &traced(Model::Node)).unwrap();
    let trace = report.trace.unwrap();
    assert_eq!(trace.format, "turno-js-trace");
    assert_eq!(trace.version, 1);
    let p1: Vec<Value> = trace
        .events_of_kind("promise")
        .filter(|e| e["promise"] == 1)
        .collect();
    // Pending with one fulfil and one reject reaction after `then`...
    assert!(p1.iter().any(|e| e["state"] == "pending"
        && e["fulfill_reactions"] == 1
        && e["reject_reactions"] == 1
        && e["is_handled"] == true));
    // ...then fulfilled with 'v' at t = 5 ms, reaction lists gone (spec: undefined).
    let done = p1.iter().find(|e| e["state"] == "fulfilled").unwrap();
    assert_eq!(done["result"], "'v'");
    assert_eq!(done["t_ns"], 5_000_000);
    assert!(done["fulfill_reactions"].is_null());
    // Sequence numbers are dense and time never goes back.
    for (i, e) in trace.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
    let times: Vec<u64> = trace.events.iter().map(|e| e.t_ns).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn trace_records_queues_stack_and_render_steps() {
    let src = "requestAnimationFrame(function a() { queueMicrotask(function m() {}); });\nrequestAnimationFrame(function b() {});\nconst c = new MessageChannel();\nc.port1.onmessage = function onmsg() {};\nc.port2.postMessage(1);";
    let report = run(src, "r.js", &traced(Model::Html)).unwrap();
    let trace = report.trace.unwrap();
    let kinds: Vec<String> = trace.events.iter().map(|e| e.kind_name()).collect();
    for k in [
        "stack_push",
        "stack_pop",
        "enqueue",
        "dequeue",
        "render_start",
        "render_end",
        "microtask_checkpoint",
    ] {
        assert!(kinds.iter().any(|x| x == k), "no {k} event");
    }
    let render = trace.events_of_kind("render_start").next().unwrap();
    assert_eq!(render["frame_time_ns"], 16_666_667);
    assert_eq!(render["callbacks"].as_array().unwrap().len(), 2);
    let queues: Vec<String> = trace
        .events_of_kind("enqueue")
        .map(|e| e["queue"].as_str().unwrap().to_string())
        .collect();
    assert!(queues.iter().any(|q| q == "animation-frame"));
    assert!(queues.iter().any(|q| q == "task"));
    assert!(queues.iter().any(|q| q == "microtask"));
    assert!(trace
        .events_of_kind("stack_push")
        .any(|e| e["frame"] == "requestAnimationFrame callback: a"));
}

#[test]
fn uncaught_exception_exits_1_with_its_location() {
    let src = "console.log('one');\nsetTimeout(() => {\n  throw new TypeError('bad');\n}, 1);\nsetTimeout(() => console.log('never'), 2);";
    let report = run(src, "u.js", &opts(Model::Node)).unwrap();
    assert_eq!(report.exit_code, 1);
    assert_eq!(report.stdout_lines(), ["one"]);
    let u = &report.uncaught[0];
    assert_eq!(u.message, "TypeError: bad");
    assert_eq!(
        (u.file.as_deref(), u.line, u.column),
        (Some("u.js"), Some(3), Some(9))
    );
    assert!(
        report
            .stderr
            .starts_with("u.js:3\n  throw new TypeError('bad');\n  ^\n\nTypeError: bad\n"),
        "{}",
        report.stderr
    );
}

#[test]
fn html_keeps_running_after_an_uncaught_exception() {
    let src = "setTimeout(() => { throw new Error('x'); }, 1);\nsetTimeout(() => console.log('after'), 2);";
    let report = run(src, "h.js", &opts(Model::Html)).unwrap();
    assert_eq!(report.stdout_lines(), ["after"]);
    assert_eq!(report.exit_code, 1);
    assert!(
        report.stderr.starts_with("Uncaught Error: x"),
        "{}",
        report.stderr
    );
}

#[test]
fn exit_codes_follow_node() {
    let cases = [
        ("process.exitCode = 2;", 2),
        ("process.exit(5); console.log('no');", 5),
        ("Promise.resolve().then(() => process.exit(4));", 4),
        ("(async () => { await null; try { process.exit(6); } catch (e) { console.log('no'); } })();", 6),
        ("Promise.reject(new Error('r'));", 1),
        ("throw 'str';", 1),
        ("console.log('fine');", 0),
    ];
    for (src, code) in cases {
        let report = run(src, "e.js", &opts(Model::Node)).unwrap();
        assert_eq!(report.exit_code, code, "{src}: {}", report.stderr);
    }
}

#[test]
fn syntax_error_is_reported_with_its_position() {
    let report = run("console.log(1);\nlet x = ;\n", "s.js", &opts(Model::Node)).unwrap();
    assert_eq!(report.exit_code, 1);
    assert!(report.stdout.is_empty());
    let u = &report.uncaught[0];
    assert!(u.message.starts_with("SyntaxError: "), "{}", u.message);
    assert_eq!((u.line, u.column), (Some(2), Some(9)));
    assert!(
        report.stderr.starts_with("s.js:2\nlet x = ;\n        ^\n"),
        "{}",
        report.stderr
    );
}

#[test]
fn timeout_against_immediate_from_main_notes_the_other_order() {
    let src = "setTimeout(() => console.log('timeout'), 0);\nsetImmediate(() => console.log('immediate'));";
    let report = run(src, "race.js", &opts(Model::Node)).unwrap();
    assert_eq!(report.stdout_lines(), ["immediate", "timeout"]);
    assert_eq!(report.notes.len(), 1);
    assert!(
        report.notes[0].contains("nondeterministic"),
        "{}",
        report.notes[0]
    );
    // Inside an I/O-free timer callback the order is fixed: no note.
    let src = "setTimeout(() => {\n  setTimeout(() => console.log('timeout'), 0);\n  setImmediate(() => console.log('immediate'));\n}, 5);";
    let report = run(src, "fixed.js", &opts(Model::Node)).unwrap();
    assert_eq!(report.stdout_lines(), ["immediate", "timeout"]);
    assert!(report.notes.is_empty());
}

#[test]
fn runs_are_deterministic() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/node/n17_promise_combinators.js"
    ))
    .unwrap();
    let a = run(&src, "d.js", &traced(Model::Node)).unwrap();
    let b = run(&src, "d.js", &traced(Model::Node)).unwrap();
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.trace, b.trace);
}

#[test]
fn console_log_formats_like_node() {
    let src = "console.log([1, 'a', { b: [2, { c: 3 }] }], new Error('e').message, -0, 10n, null);";
    let report = run(src, "f.js", &opts(Model::Node)).unwrap();
    assert_eq!(
        report.stdout_lines(),
        ["[ 1, 'a', { b: [ 2, [Object] ] } ] e -0 10n null"]
    );
}

#[test]
fn tracing_does_not_change_what_a_program_prints() {
    for (dir, model) in [("node", Model::Node), ("html", Model::Html)] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(dir);
        for entry in std::fs::read_dir(path).unwrap() {
            let file = entry.unwrap().path();
            let src = std::fs::read_to_string(&file).unwrap();
            let name = file.to_string_lossy();
            let plain = run(&src, &name, &opts(model)).unwrap();
            let with = run(&src, &name, &traced(model)).unwrap();
            assert_eq!(plain.stdout, with.stdout, "{name}");
            assert_eq!(plain.exit_code, with.exit_code, "{name}");
            assert!(with.trace.is_some());
        }
    }
}

#[test]
fn html_notes_where_the_browser_may_differ() {
    let src = "setTimeout(() => console.log('timer'), 0);\nconst ch = new MessageChannel();\nch.port1.onmessage = () => console.log('msg');\nch.port2.postMessage(1);\nrequestAnimationFrame(() => console.log('raf'));\nsetTimeout(() => console.log('t20'), 20);";
    // The spec-only profile notes the choice; the Chromium profile makes
    // Chromium's (the zero-delay timer first, posted at once: h19).
    let spec = RunOptions {
        browser: turno_js::Browser::Spec,
        ..opts(Model::Html)
    };
    let chromium = run(src, "n.js", &opts(Model::Html)).unwrap();
    assert_eq!(chromium.stdout_lines(), ["timer", "msg", "raf", "t20"]);
    let report = run(src, "n.js", &spec).unwrap();
    assert_eq!(report.stdout_lines(), ["msg", "timer", "raf", "t20"]);
    assert_eq!(report.notes.len(), 2, "{:?}", report.notes);
    assert!(report.notes[0].contains("task sources"));
    assert!(report.notes[1].contains("60 Hz"));
    // A program whose order the standard fixes gets no note.
    let report = run(
        "setTimeout(() => console.log('a'), 5);\nPromise.resolve().then(() => console.log('b'));",
        "q.js",
        &opts(Model::Html),
    )
    .unwrap();
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}

#[test]
fn trace_events_carry_the_javascript_stack() {
    let src = "function outer() { inner(); }\nfunction inner() { setTimeout(function later() { console.log('x'); }, 1); }\nouter();";
    let report = run(src, "s.js", &traced(Model::Node)).unwrap();
    let trace = report.trace.unwrap();
    let timer = trace
        .events_of_kind("enqueue")
        .find(|e| e["queue"] == "timers")
        .unwrap();
    assert_eq!(
        timer["js_stack"],
        serde_json::json!([
            "<main> (s.js:3:6)",
            "outer (s.js:1:25)",
            "inner (s.js:2:30)"
        ])
    );
    let out = trace.events_of_kind("output").next().unwrap();
    assert_eq!(out["js_stack"], serde_json::json!(["later (s.js:2:61)"]));
}

#[test]
fn hostile_input_never_panics() {
    let inputs = [
        "",
        "@@@ \u{0} garbage (((",
        "const r = Proxy.revocable({}, {}); r.revoke(); console.log(r.proxy);",
        "console.log({ get x() { throw new Error('getter'); } });",
        "setTimeout(null); setTimeout(() => {}, Symbol());",
        "requestAnimationFrame(5);",
        "new MessageChannel().port1.postMessage();",
        "Object.defineProperty(Promise.prototype, 'then', { get() { throw 1; } }); Promise.resolve(1).then;",
        "Promise.prototype.then = null; Promise.resolve(2).then(() => {});",
        "globalThis.console = undefined; setTimeout(() => console.log('x'), 1);",
        "function f(n) { return n ? f(n - 1) : 0 } f(1e6);",
        "process.nextTick(); queueMicrotask(); setImmediate('x');",
        "throw null;",
        "Promise.reject(undefined);",
        "class A { static get name() { throw 1; } } setTimeout(A, 1); requestAnimationFrame(A);",
        "process.exit('not a number');",
    ];
    for src in inputs {
        for model in [Model::Node, Model::Html] {
            match run(src, "bad.js", &traced(model)) {
                Ok(report) => {
                    if !report.uncaught.is_empty() {
                        assert_ne!(report.exit_code, 0, "{src}");
                    }
                }
                Err(e) => assert!(e.partial_report().is_some(), "{src}: {e}"),
            }
        }
    }
}

#[test]
fn html_interval_is_clamped_after_five_repeats() {
    let src = "let n = 0; let last = 0; const gaps = [];\nconst id = setInterval(() => {\n  n++; const now = performance.now(); gaps.push(now - last); last = now;\n  if (n === 9) { clearInterval(id); console.log(gaps.join(' ')); }\n}, 0);";
    let report = run(src, "i.js", &opts(Model::Html)).unwrap();
    // Runs at nesting levels 1..=6 are back to back; the re-arm from level 6
    // on is clamped to 4 ms.
    assert_eq!(report.stdout_lines(), ["0 0 0 0 0 0 4 4 4"]);
}

#[test]
fn all_builtins_keeps_what_the_runtime_profile_hides() {
    let src = "console.log(typeof Promise.withResolvers, typeof Object.groupBy, typeof new Set().union, typeof globalThis.Iterator, typeof SharedArrayBuffer);";
    let node = run(src, "p.js", &opts(Model::Node)).unwrap();
    assert_eq!(
        node.stdout_lines(),
        ["undefined undefined undefined undefined function"]
    );
    let page = run(src, "p.js", &opts(Model::Html)).unwrap();
    assert_eq!(
        page.stdout_lines(),
        ["function function function function undefined"]
    );
    for model in [Model::Node, Model::Html] {
        let all = RunOptions {
            all_builtins: true,
            ..opts(model)
        };
        let r = run(src, "p.js", &all).unwrap();
        assert_eq!(
            r.stdout_lines(),
            ["function function function function function"]
        );
    }
}

#[test]
fn fs_read_file_reads_the_files_given_to_the_run() {
    let mut o = opts(Model::Node);
    o.files
        .insert("data/config.json".into(), "{\"port\":8080}".into());
    let src = "const fs = require('fs');\n\
               fs.readFile('./data/config.json', 'utf8', (e, t) => console.log(e, JSON.parse(t).port));\n\
               fs.promises.readFile('data/config.json', 'utf8').then((t) => console.log('promise', t.length));\n\
               try { fs.readFile('data/config.json', () => {}); } catch (e) { console.log(e.name, e.message); }";
    let r = run(src, "fs.js", &o).unwrap();
    assert_eq!(
        r.stdout_lines(),
        [
            "TypeError turno-js models fs.readFile with the 'utf8' encoding only (a Buffer is not modelled); got undefined",
            "null 8080",
            "promise 13",
        ]
    );
    // Without the file the read fails with ENOENT.
    let missing = "require('fs').readFile('./data/config.json', 'utf8', (e) => console.log(e.code, e.message));";
    let r = run(missing, "fs.js", &opts(Model::Node)).unwrap();
    assert_eq!(
        r.stdout_lines(),
        ["ENOENT ENOENT: no such file or directory, open './data/config.json'"]
    );
}
