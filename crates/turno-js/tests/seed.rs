//! The seed's two experiments (`examples/seed_microtask_loop.js`,
//! `examples/seed_timeout_loop.js`): the same body rescheduled with
//! `queueMicrotask` or with `setTimeout(0)` for a 1000 ms budget.
//!
//! On virtual time the counts they print follow from the cost model:
//! * microtasks: the body holds the main thread for the whole budget, so the
//!   callbacks are the budget divided by the cost of one callback (twice the
//!   cost, half the callbacks), and exactly one frame is rendered, after it;
//! * timers: a frame every 16.7 ms (60 in the budget, plus the one that
//!   reports), and a callback every 4 ms (the nesting clamp) plus its cost.
//!
//! The same files also run in headless Chromium (real time, this machine);
//! those counts are printed for docs/js-seed-experiments.md, and only their
//! shape is checked (one frame against tens of frames), not their values.

use std::path::{Path, PathBuf};
use std::process::Command;

use turno_js::{run, Cost, Model, RunOptions};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// (callbacks, frames, elapsed ms) from the line the example prints.
fn counts(line: &str) -> (u64, u64, u64) {
    let num = |key: &str| -> u64 {
        let i = line
            .find(key)
            .unwrap_or_else(|| panic!("no {key} in {line:?}"))
            + key.len();
        line[i..]
            .trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    (num("callbacks"), num("frames"), num("elapsed"))
}

fn ours(name: &str, cost_ns: f64) -> ((u64, u64, u64), turno_js::RunReport) {
    let path = example(name);
    let src = std::fs::read_to_string(&path).unwrap();
    let o = RunOptions {
        cost: Cost::per_instruction_ns(cost_ns).unwrap(),
        max_steps: 10_000_000,
        ..RunOptions::new(Model::Html)
    };
    let r = run(&src, name, &o).unwrap_or_else(|e| panic!("{name}: {e}"));
    (counts(r.stdout_lines()[0]), r)
}

#[test]
fn microtask_loop_callbacks_follow_the_cost_and_one_frame_renders() {
    let ((c1, f1, e1), r1) = ours("seed_microtask_loop.js", 200.0);
    let ((c2, f2, _), _) = ours("seed_microtask_loop.js", 400.0);
    assert_eq!(
        (f1, f2),
        (1, 1),
        "microtasks starve rendering: one frame, after the loop"
    );
    assert_eq!(r1.frames_rendered, 1);
    assert!(
        (1000..1010).contains(&e1),
        "the loop ends at the budget: {e1} ms"
    );
    // One callback's instructions, from the whole run: the budget divided
    // by their cost is the number of callbacks.
    let per_callback_ns = r1.instructions as f64 * 200.0 / c1 as f64;
    let predicted = 1_000_000_000.0 / per_callback_ns;
    assert!(
        (c1 as f64 - predicted).abs() / predicted < 0.01,
        "{c1} callbacks, predicted {predicted:.0} from {per_callback_ns:.0} ns each"
    );
    let ratio = c1 as f64 / c2 as f64;
    assert!(
        (ratio - 2.0).abs() < 0.02,
        "twice the cost, half the callbacks: {c1} vs {c2}"
    );
}

#[test]
fn timeout_loop_renders_every_frame_and_runs_once_per_clamp() {
    let ((c, f, e), r) = ours("seed_timeout_loop.js", 10.0);
    // Frames at k/60 s for k = 1..=60 during the budget, then the reporting one.
    assert!((61..=62).contains(&f), "{f} frames");
    assert_eq!(r.frames_rendered, f);
    assert!((1000..1025).contains(&e), "{e} ms");
    // Five callbacks before the clamp (nesting levels 1..5 run at once),
    // then one per 4 ms plus the callback's own cost.
    let per_callback_ns = r.instructions as f64 * 10.0 / c as f64;
    let predicted = 5.0 + 1e9 / (4e6 + per_callback_ns);
    assert!(
        (c as f64 - predicted).abs() <= 3.0,
        "{c} callbacks, predicted {predicted:.1} (4 ms + {per_callback_ns:.0} ns each)"
    );
    // A costlier body moves the count only by its own cost.
    let ((c_slow, _, _), _) = ours("seed_timeout_loop.js", 1000.0);
    assert!(
        c_slow < c && c_slow as f64 > c as f64 * 0.8,
        "{c} vs {c_slow}"
    );
}

#[test]
fn the_same_experiments_in_headless_chromium() {
    let browser = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        browser.join("node_modules/playwright-core").exists(),
        "needs playwright-core: run `npm ci` in {}",
        browser.display()
    );
    let mut rows = Vec::new();
    for name in ["seed_microtask_loop.js", "seed_timeout_loop.js"] {
        let out = Command::new("node")
            .arg(browser.join("drive.mjs"))
            .arg(example(name))
            .args(["--limit-ms", "20000"])
            .output()
            .expect("cannot run node");
        let text = String::from_utf8_lossy(&out.stdout);
        let json: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "{name}: {e}: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let line = json["out"][0].as_str().unwrap_or_default().to_string();
        let real = counts(&line);
        // The explorer's figures at the default cost come from the CLI
        // (docs/js-seed-experiments.md): 1.7 million microtask callbacks
        // take minutes in a debug build.
        eprintln!(
            "{name}: chromium callbacks {} frames {} elapsed {} ms",
            real.0, real.1, real.2
        );
        rows.push((name, real));
    }
    let (micro, timeout) = (rows[0].1, rows[1].1);
    assert!(
        micro.1 <= 2,
        "chromium renders (almost) nothing during the microtask loop: {micro:?}"
    );
    assert!(
        timeout.1 >= 10,
        "chromium renders during the timeout loop: {timeout:?}"
    );
    assert!(micro.0 > 100 * timeout.0, "{micro:?} vs {timeout:?}");
}
