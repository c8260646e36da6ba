//! The cost model: executing JavaScript advances the virtual clock by the
//! boa instructions it executes times the cost.

use turno_js::{run, Cost, Model, RunOptions};

fn with_cost(model: Model, ns: f64) -> RunOptions {
    RunOptions {
        cost: Cost::per_instruction_ns(ns).unwrap(),
        ..RunOptions::new(model)
    }
}

fn lines(src: &str, o: &RunOptions) -> Vec<String> {
    let r = run(src, "cost.js", o).unwrap_or_else(|e| panic!("{e}"));
    r.stdout.lines().map(str::to_string).collect()
}

const LOOP: &str = "const t0 = performance.now();\nlet x = 0;\nfor (let i = 0; i < 10000; i++) { x += i; }\nconst t1 = performance.now();\nconsole.log(t1 - t0);";

#[test]
fn performance_now_moves_while_code_runs_in_proportion_to_the_cost() {
    for model in [Model::Node, Model::Html] {
        let a: f64 = lines(LOOP, &with_cost(model, 10.0))[0].parse().unwrap();
        let b: f64 = lines(LOOP, &with_cost(model, 20.0))[0].parse().unwrap();
        assert!(a > 0.1, "10 000 iterations take time: {a} ms");
        // Same program, same instruction count: twice the cost, twice the time.
        assert!(
            (b - 2.0 * a).abs() < 1e-6,
            "{a} ms at 10 ns, {b} ms at 20 ns"
        );
        let zero: f64 = lines(LOOP, &with_cost(model, 0.0))[0].parse().unwrap();
        assert_eq!(
            zero, 0.0,
            "--cost 0: the clock stands still while code runs"
        );
    }
}

#[test]
fn date_now_moves_too() {
    let src = "const d0 = Date.now(); const n0 = new Date().getTime();\nlet x = 0; for (let i = 0; i < 200000; i++) { x += i; }\nconsole.log(Date.now() - d0, new Date().getTime() - n0);";
    let out = lines(src, &with_cost(Model::Node, 10.0));
    let v: Vec<f64> = out[0].split(' ').map(|s| s.parse().unwrap()).collect();
    assert!(v[0] >= 10.0 && v[1] >= 10.0, "{out:?}");
}

#[test]
fn the_instruction_count_is_reported_and_is_what_the_clock_charged() {
    let src = "let x = 0; for (let i = 0; i < 5000; i++) { x += i; }";
    let r = run(src, "n.js", &with_cost(Model::Node, 3.0)).unwrap();
    assert!(r.instructions > 5000, "{}", r.instructions);
    // Nothing but the script ran, so the end time is its cost.
    assert_eq!(r.end_time_ns, r.instructions * 3);
}

#[test]
fn a_long_task_delays_the_timer_behind_it() {
    let src = "setTimeout(() => console.log('timer at', performance.now() >= 50), 0);\nconst t0 = performance.now();\nwhile (performance.now() - t0 < 50) {}\nconsole.log('script done');";
    for model in [Model::Node, Model::Html] {
        assert_eq!(
            lines(src, &with_cost(model, 10.0)),
            ["script done", "timer at true"]
        );
    }
}

#[test]
fn frames_render_only_between_tasks() {
    // The script blocks for 100 ms: the frames due at 16.7, 33.3 ... ms are
    // missed; one render runs after the script, stamped with the latest
    // missed vsync (100 ms is exactly frame 6).
    let src = "requestAnimationFrame((ts) => console.log('frame', ts.toFixed(3), performance.now() >= 100));\nconst t0 = performance.now();\nwhile (performance.now() - t0 < 100) {}\nconsole.log('script done');";
    let r = run(src, "raf.js", &with_cost(Model::Html, 10.0)).unwrap();
    assert_eq!(r.stdout_lines(), ["script done", "frame 100.000 true"]);
    assert_eq!(r.frames_rendered, 1);
}

#[test]
fn zero_cost_keeps_the_old_timing() {
    let src = "setTimeout(() => console.log(performance.now()), 5);\nlet x = 0; for (let i = 0; i < 10000; i++) { x += i; }";
    assert_eq!(lines(src, &with_cost(Model::Html, 0.0)), ["5"]);
    let out = lines(src, &with_cost(Model::Html, 10.0));
    let t: f64 = out[0].parse().unwrap();
    assert!(t > 5.0, "the loop ran past the timer's due time: {t}");
}
