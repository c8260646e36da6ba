//! DOM events, scripted input, the compositor lane and the browser
//! profiles: what the oracles cannot see (the trace, budgets, the node
//! model's refusal of input, the spec-only profile).

use serde_json::Value;
use turno_js::{run, Browser, InputEvent, JsRunError, Model, RunOptions};

fn html(input: &str) -> RunOptions {
    RunOptions {
        input: InputEvent::parse_script(input).unwrap(),
        trace: true,
        ..RunOptions::new(Model::Html)
    }
}

const LONG_TASK: &str = "document.addEventListener('keydown', (e) => console.log('key', e.key, performance.now() >= 200));\nconsole.log('blocking');\nconst t0 = performance.now();\nwhile (performance.now() - t0 < 200) {}\nconsole.log('unblocked');";

#[test]
fn input_during_a_long_task_waits_and_arrives_in_order() {
    let o = html(
        r#"[{"at_ms": 50, "type": "keydown", "key": "a"}, {"at_ms": 20, "type": "keydown", "key": "z"}, {"at_ms": 150, "type": "keydown", "key": "b"}]"#,
    );
    let r = run(LONG_TASK, "keys.js", &o).unwrap();
    assert_eq!(
        r.stdout_lines(),
        [
            "blocking",
            "unblocked",
            "key z true",
            "key a true",
            "key b true"
        ]
    );
    // Each became a user-interaction task at its own time, recorded once the
    // task that blocked the main thread had ended.
    let trace = r.trace.unwrap();
    let queued: Vec<Value> = trace
        .events_of_kind("enqueue")
        .filter(|e| e["source"] == "user-interaction")
        .collect();
    let at: Vec<u64> = queued
        .iter()
        .map(|e| e["input_at_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(at, [20_000_000, 50_000_000, 150_000_000]);
    assert!(queued
        .iter()
        .all(|e| e["t_ns"].as_u64().unwrap() >= 200_000_000));
}

#[test]
fn input_needs_the_html_model() {
    let o = RunOptions {
        input: InputEvent::parse_script(r#"[{"at_ms": 1, "type": "click"}]"#).unwrap(),
        ..RunOptions::new(Model::Node)
    };
    assert!(matches!(
        run("1", "n.js", &o),
        Err(JsRunError::InputUnsupported { model: "node" })
    ));
}

#[test]
fn bad_input_scripts_are_refused_with_their_position() {
    assert!(InputEvent::parse_script("[{\"at_ms\": 1, \"type\": \"wiggle\"}]").is_err());
    let e = InputEvent::parse_script(
        "[{\"at_ms\": 1, \"type\": \"key\", \"key\": \"a\"}, {\"at_ms\": -5, \"type\": \"click\"}]",
    )
    .unwrap_err();
    assert!(e.to_string().contains("input event 1"), "{e}");
}

#[test]
fn the_compositor_keeps_producing_frames_while_the_main_thread_is_blocked() {
    let src = "const el = document.createElement('div');\ndocument.body.appendChild(el);\nconst a = el.animate([{ transform: 'translateX(0)' }, { transform: 'translateX(100px)' }], { duration: 1000 });\nconst b = el.animate([{ left: '0px' }, { left: '10px' }], { duration: 1000 });\nconst t0 = performance.now();\nwhile (performance.now() - t0 < 100) {}\nconsole.log(a.playState, b.playState);";
    let r = run(src, "anim.js", &html("[]")).unwrap();
    assert_eq!(r.stdout_lines(), ["running running"]);
    let trace = r.trace.unwrap();
    let started: Vec<String> = trace
        .events_of_kind("animation_start")
        .map(|e| e["driven_by"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(started, ["compositor", "main-thread"]);
    let frames: Vec<Value> = trace.events_of_kind("compositor_frame").collect();
    // 100 ms of blocked main thread: the boundaries at 16.7, 33.3, ... 100 ms.
    assert_eq!(frames.len(), 6, "{frames:?}");
    assert!(frames.iter().all(|f| f["main_thread"] == "busy"));
    assert!(frames
        .iter()
        .all(|f| f["animations"].as_array().unwrap().len() == 1));
    assert_eq!(frames[0]["frame_time_ns"], 16_666_667);
}

const DUE_TIMER: &str = "const ch = new MessageChannel();\nch.port1.onmessage = () => console.log('message');\nsetTimeout(() => console.log('timer 1 ms'), 1);\nconst t0 = performance.now();\nwhile (performance.now() - t0 < 30) {}\nch.port2.postMessage(0);";

#[test]
fn the_chromium_profile_queues_a_due_timer_behind_later_tasks_and_spec_does_not() {
    let chromium = run(DUE_TIMER, "d.js", &RunOptions::new(Model::Html)).unwrap();
    assert_eq!(chromium.stdout_lines(), ["message", "timer 1 ms"]);
    let spec = RunOptions {
        browser: Browser::Spec,
        ..RunOptions::new(Model::Html)
    };
    let spec = run(DUE_TIMER, "d.js", &spec).unwrap();
    assert_eq!(spec.stdout_lines(), ["timer 1 ms", "message"]);
    assert!(spec.notes.iter().any(|n| n.contains("task sources")));
}

#[test]
fn the_chromium_profile_runs_input_before_an_older_timer_task() {
    let src = "setTimeout(() => console.log('timer'), 0);\ndocument.addEventListener('keyup', () => console.log('key'));\nconst t0 = performance.now();\nwhile (performance.now() - t0 < 50) {}";
    let input = r#"[{"at_ms": 10, "type": "keyup", "key": "a"}]"#;
    let r = run(src, "p.js", &html(input)).unwrap();
    assert_eq!(r.stdout_lines(), ["key", "timer"]);
    let spec = RunOptions {
        browser: Browser::Spec,
        ..html(input)
    };
    assert_eq!(
        run(src, "p.js", &spec).unwrap().stdout_lines(),
        ["timer", "key"]
    );
}

#[test]
fn a_throwing_listener_is_reported_and_dispatch_goes_on() {
    let src = "const t = new EventTarget();\nt.addEventListener('x', () => { throw new Error('boom'); });\nt.addEventListener('x', () => console.log('second runs'));\nt.dispatchEvent(new Event('x'));\nconsole.log('after');";
    let r = run(src, "t.js", &RunOptions::new(Model::Html)).unwrap();
    assert_eq!(r.stdout_lines(), ["second runs", "after"]);
    assert_eq!(r.uncaught.len(), 1);
    assert_eq!(r.exit_code, 1);
    // Node: the error is rethrown on the next tick, after the dispatch and the script.
    let r = run(src, "t.js", &RunOptions::new(Model::Node)).unwrap();
    assert_eq!(r.stdout_lines(), ["second runs", "after"]);
    assert_eq!(r.exit_code, 1);
    assert!(r.stderr.contains("Error: boom"), "{}", r.stderr);
}

#[test]
fn a_budget_reached_inside_a_host_dispatched_listener_stops_the_run() {
    let src = "const ch = new MessageChannel();\nch.port1.onmessage = () => { console.log('listener'); (function again() { Promise.resolve().then(again); })(); };\nch.port2.postMessage(1);";
    let o = RunOptions {
        max_steps: 500,
        ..RunOptions::new(Model::Html)
    };
    let e = run(src, "b.js", &o).unwrap_err();
    assert!(matches!(e, JsRunError::StepBudget { .. }), "{e}");
    assert_eq!(e.partial_report().unwrap().stdout_lines(), ["listener"]);
}

/// A port's messages: one task at a time in the Chromium profile (the task
/// for the next message queued after the previous dispatch; checked against
/// Chromium by `h22_port_messages_one_task_each`), one task per message,
/// queued when posted, in the spec profile.
#[test]
fn port_messages_chain_in_chromium_and_not_in_spec() {
    let src = "const ch = new MessageChannel();\n\
               ch.port1.onmessage = (e) => console.log('message', e.data);\n\
               ch.port2.postMessage('a');\n\
               setTimeout(() => console.log('timeout 1'), 0);\n\
               ch.port2.postMessage('b');\n\
               setTimeout(() => console.log('timeout 2'), 0);";
    let chromium = run(src, "p.js", &RunOptions::new(Model::Html)).unwrap();
    assert_eq!(
        chromium.stdout_lines(),
        ["message a", "timeout 1", "timeout 2", "message b"]
    );
    let spec = RunOptions {
        browser: turno_js::Browser::Spec,
        ..RunOptions::new(Model::Html)
    };
    let spec = run(src, "p.js", &spec).unwrap();
    assert_eq!(
        spec.stdout_lines(),
        ["message a", "timeout 1", "message b", "timeout 2"]
    );
}
