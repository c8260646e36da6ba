//! Dedicated workers in the html model: a second event loop with its own
//! virtual clock, messages as tasks both ways with structured-clone
//! semantics, `terminate()`, and the `loop` of every trace event. (What
//! Chromium prints for the same programs is checked by the html-live
//! corpus, `l03`-`l05`; these tests check what only the explorer shows.)

use std::path::Path;

use serde_json::Value;
use turno_js::{run, Model, RunOptions, RunReport, Trace};

/// Runs `page` with the given worker scripts written next to it.
fn run_with_workers(page: &str, workers: &[(&str, &str)], trace: bool) -> RunReport {
    let dir = std::env::temp_dir().join(format!(
        "turno-js-workers-{}-{}",
        std::process::id(),
        std::thread::current()
            .name()
            .unwrap_or("t")
            .replace("::", "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, src) in workers {
        std::fs::write(dir.join(name), src).unwrap();
    }
    let opts = RunOptions {
        base_dir: Some(dir.clone()),
        trace,
        ..RunOptions::new(Model::Html)
    };
    let r = run(page, "page.js", &opts).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn messages_are_tasks_both_ways_in_posting_order() {
    let page = "const w = new Worker('w.js');\n\
                w.onmessage = (e) => console.log('page got', e.data);\n\
                w.postMessage('a'); w.postMessage('b'); console.log('posted');";
    let worker = "onmessage = (e) => {\n\
                    Promise.resolve().then(() => postMessage('micro ' + e.data));\n\
                    setTimeout(() => postMessage('timeout ' + e.data), 0);\n\
                    postMessage('sync ' + e.data);\n\
                  };";
    let r = run_with_workers(page, &[("w.js", worker)], false);
    assert_eq!(
        r.stdout_lines(),
        [
            "posted",
            "page got sync a",
            "page got micro a",
            "page got sync b",
            "page got micro b",
            "page got timeout a",
            "page got timeout b"
        ]
    );
    assert_eq!(r.exit_code, 0);
}

#[test]
fn data_is_cloned_at_post_time_into_the_other_realm() {
    let page = "const w = new Worker('w.js');\n\
                w.onmessage = (e) => console.log(e.data);\n\
                const o = { n: 1, m: new Map([['k', new Set([1, 2])]]), d: new Date(5), u: new Uint8Array([7, 8]), x: -0, big: 10n };\n\
                o.self = o;\n\
                w.postMessage(o); o.n = 2;\n\
                try { w.postMessage({ f() {} }); } catch (e) { console.log(e.name, e instanceof DOMException, e.code); }\n\
                try { w.postMessage(Symbol('s')); } catch (e) { console.log(e.message); }";
    let worker = "onmessage = (e) => { const d = e.data;\n\
                    postMessage([d.n, d.self === d, d.m instanceof Map, [...d.m.get('k')].join('+'),\n\
                      d.d instanceof Date, d.d.getTime(), d.u instanceof Uint8Array, d.u[1],\n\
                      Object.is(d.x, -0), typeof d.big].join(' '));\n\
                    try { postMessage(() => 1); } catch (err) { postMessage('worker ' + err.name); }\n\
                  };";
    let r = run_with_workers(page, &[("w.js", worker)], false);
    assert_eq!(
        r.stdout_lines(),
        [
            "DataCloneError true 25",
            "Failed to execute 'postMessage' on 'Worker': Symbol(s) could not be cloned.",
            "1 true true 1+2 true 5 true 8 true bigint",
            "worker DataCloneError"
        ]
    );
}

#[test]
fn terminate_stops_the_worker_and_drops_what_was_on_its_way() {
    let page = "const w = new Worker('w.js');\n\
                w.onmessage = (e) => { console.log('got', e.data); if (e.data === 2) { w.terminate(); w.postMessage('ignored'); } };\n\
                setTimeout(() => console.log('page goes on'), 50);";
    // The worker posts 1, 2, 3 in one task: 3 is already on its way when
    // the page terminates it on 2; its interval never runs again.
    let worker = "postMessage(1); postMessage(2); postMessage(3);\n\
                  setInterval(() => postMessage('tick'), 5);";
    let r = run_with_workers(page, &[("w.js", worker)], true);
    assert_eq!(r.stdout_lines(), ["got 1", "got 2", "page goes on"]);
    let trace = r.trace.unwrap();
    let ends: Vec<Value> = trace.events_of_kind("worker_end").collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["reason"], "terminate");
    assert_eq!(ends[0]["loop"], 0);
    // The worker's loop took no step after the termination.
    let end_t = ends[0]["t_ns"].as_u64().unwrap();
    assert!(!trace
        .events
        .iter()
        .any(|e| e.loop_id == Some(1) && e.kind_name() == "stack_push" && e.t_ns > end_t));
}

#[test]
fn a_busy_worker_keeps_its_own_time_and_the_page_runs_meanwhile() {
    // The worker blocks its loop for 300 ms of virtual time (the cost model);
    // the page's 10 ms interval keeps firing on the page's clock meanwhile.
    let page = "const w = new Worker('w.js');\n\
                let ticks = 0; const iv = setInterval(() => { ticks++; }, 10);\n\
                w.onmessage = (e) => { clearInterval(iv); console.log(e.data, ticks, Math.round(performance.now())); };\n\
                w.postMessage('go');";
    let worker = "onmessage = () => { const t0 = performance.now();\n\
                    setTimeout(() => postMessage('timer after ' + Math.round(performance.now() - t0)), 0);\n\
                    while (performance.now() - t0 < 300) {} };";
    let r = run_with_workers(page, &[("w.js", worker)], true);
    let line = r.stdout_lines()[0].to_string();
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(&parts[..2], ["timer", "after"], "{line}");
    assert!(parts[2].parse::<u32>().unwrap() >= 300, "{line}");
    let ticks: u32 = parts[3].parse().unwrap();
    assert!(
        (29..=31).contains(&ticks),
        "page ticks during the worker's 300 ms: {line}"
    );
    let trace = r.trace.unwrap();
    // Both loops ran JavaScript inside the same stretch of virtual time.
    let pushes = |l: u64| -> Vec<u64> {
        trace
            .events_of_kind("stack_push")
            .filter(|e| e["loop"] == l)
            .map(|e| e["t_ns"].as_u64().unwrap())
            .collect()
    };
    let (page_pushes, worker_pushes) = (pushes(0), pushes(1));
    let busy_from = worker_pushes[1];
    let overlapping = page_pushes
        .iter()
        .filter(|&&t| t > busy_from && t < busy_from + 300_000_000)
        .count();
    assert!(
        overlapping >= 29,
        "page callbacks while the worker was busy (from {} ms): {overlapping}",
        ms(busy_from)
    );
}

#[test]
fn every_event_names_its_loop_and_the_merged_trace_reads_back() {
    let page = "const w = new Worker('w.js', { name: 'helper' });\n\
                w.onmessage = (e) => console.log('page got', e.data);\n\
                w.postMessage('hi');";
    let worker =
        "onmessage = (e) => postMessage(name + ' echoes ' + e.data + ' at ' + performance.now());";
    let r = run_with_workers(page, &[("w.js", worker)], true);
    let trace = r.trace.clone().unwrap();
    assert!(trace
        .events
        .iter()
        .all(|e| e.loop_id.is_some_and(|l| l <= 1)));
    assert!(trace.events.iter().any(|e| e.loop_id == Some(1)));
    let start: Vec<Value> = trace.events_of_kind("worker_start").collect();
    assert_eq!(start.len(), 1);
    assert_eq!(start[0]["worker"], 1);
    assert_eq!(start[0]["name"], "helper");
    assert_eq!(start[0]["loop"], 0);
    // One post each way, each received as a posted-message task.
    let posts: Vec<Value> = trace.events_of_kind("message_post").collect();
    assert_eq!(posts.len(), 2);
    assert_eq!(
        (&posts[0]["loop"], &posts[0]["to_loop"]),
        (&0.into(), &1.into())
    );
    assert_eq!(
        (&posts[1]["loop"], &posts[1]["to_loop"]),
        (&1.into(), &0.into())
    );
    let received: Vec<Value> = trace
        .events_of_kind("enqueue")
        .filter(|e| e.get("from_loop").is_some())
        .collect();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0]["loop"], 1);
    assert_eq!(received[0]["source"], "posted-message");
    assert_eq!(received[1]["loop"], 0);
    // seq without gaps and time never going back, across both loops.
    let text = trace.to_json_lines();
    Trace::from_json_lines(&text).unwrap();
    for (i, e) in trace.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
    // The worker's performance.now() counts from its own start (1 ms after
    // `new Worker`), so it is small even though its script ran at ~1 ms.
    let line = r.stdout_lines()[0].to_string();
    assert!(line.starts_with("page got helper echoes hi at "), "{line}");
    let at: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(at < 1.0, "{line}");
}

#[test]
fn a_worker_script_that_cannot_load_fires_error_at_the_worker() {
    let page = "const w = new Worker('missing.js');\n\
                w.onerror = (e) => console.log('error event', e.type, e instanceof Event);\n\
                w.postMessage('lost');\n\
                const x = new Worker('../outside.js'); x.onerror = () => console.log('outside refused');";
    let r = run_with_workers(page, &[], true);
    assert_eq!(
        r.stdout_lines(),
        ["error event error true", "outside refused"]
    );
    let trace = r.trace.unwrap();
    assert_eq!(trace.events_of_kind("worker_error").count(), 2);
    // Without a base directory nothing loads.
    let r = run(
        "const w = new Worker('w.js'); w.onerror = () => console.log('no base');",
        "p.js",
        &RunOptions::new(Model::Html),
    )
    .unwrap();
    assert_eq!(r.stdout_lines(), ["no base"]);
}

#[test]
fn a_worker_can_close_itself_and_its_uncaught_errors_are_reported() {
    let page = "const w = new Worker('w.js');\n\
                w.onmessage = (e) => console.log('got', e.data);\n\
                setTimeout(() => { w.postMessage('after close'); console.log('page done'); }, 20);";
    let worker = "onmessage = (e) => postMessage('worker still open: ' + e.data);\n\
                  postMessage('closing'); close();\n\
                  setTimeout(() => postMessage('never'), 1);\n\
                  null.boom;";
    let r = run_with_workers(page, &[("w.js", worker)], false);
    assert_eq!(r.stdout_lines(), ["got closing", "page done"]);
    assert_eq!(r.uncaught.len(), 1, "{:?}", r.uncaught);
    assert!(r.stderr.contains("Uncaught TypeError"), "{}", r.stderr);
    assert_eq!(r.exit_code, 1);
}

#[test]
fn worker_snippets_of_the_live_corpus_load_from_the_program_directory() {
    // The same resolution the CLI uses (`base_dir` = the program's folder).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/html-live");
    let src = std::fs::read_to_string(dir.join("l05_worker_own_thread.js")).unwrap();
    let opts = RunOptions {
        base_dir: Some(dir),
        ..RunOptions::new(Model::Html)
    };
    let r = run(&src, "l05_worker_own_thread.js", &opts).unwrap();
    assert_eq!(
        r.stdout_lines(),
        [
            "worker: its timer ran after the 300 ms loop",
            "page timers ran while the worker was busy: true",
            "done"
        ]
    );
}
