//! `chart`: statecharts, turno-chart against XState v5 on Node, same
//! machine and events, same run.
//!
//! The machine (`chart/player.json`) is hierarchical with a parallel
//! region: `off` / `on` (parallel: `playback` with a nested `playing`, and
//! `volume`); the events (`chart/events.json`) cycle through all of its
//! transitions. Cases:
//!
//! - `chart/pure_transition`: `transition(machine, snapshot, event)`, the
//!   pure function, one event after the other (turno: [`turno_chart::transition`],
//!   which clones the snapshot like XState's returns a new one; and
//!   `turno-in-place`, [`turno_chart::transition_in_place`]; XState:
//!   `transition` from `xstate`);
//! - `chart/actor`: events sent to a running chart actor and processed
//!   (turno: a [`ChartActor`] on `DetSystem` and on a one-worker
//!   `ThreadedSystem`; XState: `createActor(machine).start()`, `send`);
//! - memory per idle chart actor (turno: the counting allocator of
//!   `actors/memory.rs`, and beside it an idle actor with a zero-sized
//!   state on the same system, the runtime's share; the difference is
//!   turno-chart's; `TURNO_BENCH_ALLOC_SIZES=1` prints both by allocation
//!   size; XState: `process.memoryUsage().heapUsed` around
//!   `K` started actors, after `gc()`).
//!
//! XState runs in `node` from `crates/turno-chart/tests/xstate` (`npm ci`
//! there first). When XState is selected (no `--only` excluding it) and
//! cannot run — no `node_modules/xstate`, no `node`, or the script fails —
//! the bench stops with an error (exit status 2) before measuring anything:
//! a run without XState's side has no ratio to report. `--only turno`
//! measures turno's rows alone.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use turno::{DetSystem, Policy, Props, System, ThreadedSystem};
use turno_chart::interpreter::{ChartActor, ChartMsg, ChartStats};
use turno_chart::{
    initial_transition, load_json, stdlib, transition, transition_in_place, Event, Machine,
};

use crate::harness::Harness;
use crate::Args;

const MACHINE: &str = include_str!("../chart/player.json");
const EVENTS: &str = include_str!("../chart/events.json");

/// Default events per run for turno.
pub const DEFAULT_N: u64 = 1_000_000;
/// Events per run for XState (slower: fewer keep the run short; the rate is per event).
pub const XSTATE_N: u64 = 20_000;
/// Idle actors for the memory measurement.
pub const IDLE: u64 = 10_000;

fn machine() -> Arc<Machine<Value>> {
    Arc::new(load_json(MACHINE, &stdlib::implementations()).expect("the bench machine loads"))
}

fn events() -> Vec<Event> {
    let names: Vec<String> = serde_json::from_str(EVENTS).expect("events");
    names.into_iter().map(|n| Event::new(n.as_str())).collect()
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// An actor with a zero-sized state: the runtime's idle actor.
struct Idle;

impl turno::Actor for Idle {
    type Msg = ();
    fn handle(&mut self, _: &mut turno::Context<'_, Self>, (): ()) {}
}

/// Can XState run here: its package installed, `node` on the path?
fn xstate_ready(xstate: &std::path::Path) -> Result<(), String> {
    if !xstate.join("node_modules/xstate").exists() {
        return Err(format!(
            "XState is not installed in {} (run `npm ci` there)",
            xstate.display()
        ));
    }
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "`node --version` failed: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("cannot start node: {e}")),
    }
}

/// The chart bench's targets are ratios to XState: without it the run
/// stops, saying why.
fn xstate_missing(why: &str) -> ! {
    eprintln!("turno-bench chart: ERROR: XState cannot run: {why}");
    eprintln!("turno-bench chart: the pure and actor targets are ratios to XState in the same run; use `--only turno` to measure turno alone");
    std::process::exit(2);
}

/// Runs the chart bench.
pub fn run(args: &Args, h: &mut Harness) {
    let xstate = dir().join("../turno-chart/tests/xstate");
    if args.selected("chart", "xstate") {
        if let Err(why) = xstate_ready(&xstate) {
            xstate_missing(&why);
        }
    }
    let n = args.n.unwrap_or(DEFAULT_N);
    let m = machine();
    let evs = events();
    let mut results: Vec<(&str, &str, f64)> = Vec::new();

    // What XState ends in (checked by its own script) must be where turno ends.
    let final_value = |n: u64| {
        let (mut s, _) = initial_transition(&m).unwrap();
        for i in 0..n as usize {
            s = transition(&m, &s, evs[i % evs.len()].clone()).unwrap().0;
        }
        s.value(&m).to_json()
    };

    if args.selected("chart/pure_transition", "turno") {
        let r = h.measure("chart/pure_transition", "turno", n, || {
            let (mut s, _) = initial_transition(&m).unwrap();
            for i in 0..n as usize {
                s = transition(&m, &s, evs[i % evs.len()].clone()).unwrap().0;
            }
            std::hint::black_box(&s);
        });
        results.push(("pure", "turno", r.per_sec));
    }
    if args.selected("chart/pure_transition", "turno-in-place") {
        let r = h.measure("chart/pure_transition", "turno-in-place", n, || {
            let (mut s, _) = initial_transition(&m).unwrap();
            let mut actions = Vec::new();
            for i in 0..n as usize {
                transition_in_place(&m, &mut s, evs[i % evs.len()].clone(), &mut actions).unwrap();
                actions.clear();
            }
            std::hint::black_box(&s);
        });
        results.push(("pure", "turno-in-place", r.per_sec));
    }
    if args.selected("chart/actor", "turno-det") {
        let r = h.measure("chart/actor", "turno-det", n, || {
            let mut sys = DetSystem::builder().metrics(false).build();
            let stats = Arc::new(ChartStats::default());
            let (mm, st) = (m.clone(), stats.clone());
            let chart = sys
                .spawn(Props::new().mailbox(Policy::Unbounded), move || {
                    ChartActor::new(mm.clone()).with_stats(st.clone())
                })
                .unwrap();
            let mut sent = 0u64;
            while sent < n {
                let batch = (n - sent).min(4096);
                for i in sent..sent + batch {
                    let _ = chart.try_send(ChartMsg::Event(evs[i as usize % evs.len()].clone()));
                }
                sent += batch;
                sys.run_until_idle().unwrap();
            }
            assert_eq!(stats.macrosteps(), n + 1, "every event was processed");
        });
        results.push(("actor", "turno-det", r.per_sec));
    }
    if args.selected("chart/actor", "turno-1t") {
        let r = h.measure("chart/actor", "turno-1t", n, || {
            let sys = ThreadedSystem::builder().threads(1).metrics(false).build();
            let stats = Arc::new(ChartStats::default());
            let (mm, st) = (m.clone(), stats.clone());
            let chart = sys
                .spawn(Props::new(), move || {
                    ChartActor::new(mm.clone()).with_stats(st.clone())
                })
                .unwrap();
            for i in 0..n as usize {
                let _ = chart.send_blocking(ChartMsg::Event(evs[i % evs.len()].clone()));
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            while stats.macrosteps() < n + 1 {
                assert!(std::time::Instant::now() < deadline, "chart actor stalled");
                std::thread::yield_now();
            }
            sys.shutdown(Duration::from_secs(10)).unwrap();
        });
        results.push(("actor", "turno-1t", r.per_sec));
    }

    // XState, same machine and events, same run.
    let mut xstate_memory = None;
    if args.selected("chart", "xstate") {
        let out = Command::new("node")
            .arg("--expose-gc")
            .arg(xstate.join("bench.js"))
            .arg(dir().join("chart/player.json"))
            .arg(dir().join("chart/events.json"))
            .arg(XSTATE_N.to_string())
            .arg(args.runs.to_string())
            .arg(IDLE.to_string())
            .output();
        match out {
            Ok(o) if o.status.success() => {
                for line in String::from_utf8_lossy(&o.stdout).lines() {
                    let v: Value = serde_json::from_str(line).expect("bench.js prints JSON");
                    match v["case"].as_str() {
                        Some("pure") => {
                            let secs = v["secs"].as_f64().unwrap();
                            h.record("chart/pure_transition", "xstate", XSTATE_N, secs);
                            results.push(("pure", "xstate", XSTATE_N as f64 / secs));
                        }
                        Some("actor") => {
                            let secs = v["secs"].as_f64().unwrap();
                            h.record("chart/actor", "xstate", XSTATE_N, secs);
                            results.push(("actor", "xstate", XSTATE_N as f64 / secs));
                        }
                        Some("final_value") => {
                            assert_eq!(
                                v["value"],
                                final_value(XSTATE_N),
                                "turno and XState end in the same state"
                            );
                        }
                        Some("memory") => xstate_memory = v["bytes_per_actor"].as_f64(),
                        _ => {}
                    }
                }
            }
            Ok(o) => xstate_missing(&format!(
                "node failed running bench.js: {}",
                String::from_utf8_lossy(&o.stderr)
            )),
            Err(e) => xstate_missing(&format!("cannot start node: {e}")),
        }
    }

    // Memory per idle chart actor.
    let mut turno_memory = None;
    let mut runtime_memory = None;
    if args.selected("chart/memory", "turno") {
        let mm = m.clone();
        turno_memory = crate::actors::memory::measure_bytes("turno-chart", IDLE, move |k| {
            let mut sys = DetSystem::builder().metrics(false).build();
            let mut v = Vec::with_capacity(k as usize);
            for _ in 0..k {
                let m2 = mm.clone();
                v.push(
                    sys.spawn(Props::new(), move || ChartActor::new(m2.clone()))
                        .unwrap(),
                );
            }
            sys.run_until_idle().unwrap();
            (sys, v)
        });
        // The runtime's own share: an idle actor with a zero-sized state
        // on the same system, so the chart's share is the difference.
        runtime_memory = crate::actors::memory::measure_bytes("turno-idle", IDLE, move |k| {
            let mut sys = DetSystem::builder().metrics(false).build();
            let v: Vec<_> = (0..k)
                .map(|_| sys.spawn(Props::new(), || Idle).unwrap())
                .collect();
            sys.run_until_idle().unwrap();
            (sys, v)
        });
    }

    // Ratios.
    let best = |case: &str, imp: &str| {
        results
            .iter()
            .filter(|r| r.0 == case && r.1.starts_with(imp))
            .map(|r| r.2)
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
    };
    let mut lines = Vec::new();
    for (case, target) in [("pure", 100.0), ("actor", 30.0)] {
        if let (Some(t), Some(x)) = (best(case, "turno"), best(case, "xstate")) {
            let ratio = t / x;
            lines.push(serde_json::json!({"bench": format!("chart/{case}_ratio"), "turno_over_xstate": ratio, "target": target, "met": ratio >= target}));
        }
    }
    if let Some(b) = turno_memory {
        lines.push(serde_json::json!({"bench": "chart/memory", "impl": "turno", "n": IDLE, "bytes_per_actor": b.round(), "target": 1024, "met": b < 1024.0}));
    }
    if let (Some(b), Some(r)) = (turno_memory, runtime_memory) {
        lines.push(serde_json::json!({"bench": "chart/memory", "impl": "turno-idle-actor", "n": IDLE, "bytes_per_actor": r.round(), "chart_share": (b - r).round()}));
    }
    if let Some(b) = xstate_memory {
        lines.push(serde_json::json!({"bench": "chart/memory", "impl": "xstate", "n": IDLE, "bytes_per_actor": b.round()}));
    }
    for l in lines {
        if args.json {
            println!("{l}");
        } else {
            eprintln!("  {l}");
        }
    }
}
