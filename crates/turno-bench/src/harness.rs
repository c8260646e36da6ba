//! The measuring harness shared by every bench: one warm-up run, then
//! [`RUNS`] timed runs, and the median is reported.
//!
//! A bench calls [`Harness::measure`] once per (case, implementation) with a
//! closure that does `n` operations and returns when they are done. With
//! `--json` each measurement is printed as it completes, one JSON object per
//! line: `{"bench":..., "impl":..., "n":..., "secs":..., "per_sec":...}`.
//! Without, a table is printed at the end, per case, fastest first.

use std::io::Write;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Timed runs per measurement (after one warm-up run).
pub const RUNS: usize = 5;

/// One measurement: the median of [`RUNS`] runs.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    /// The case, for example `stream/mpsc_bounded_1024`.
    pub bench: String,
    /// The implementation measured, for example `turno` or `crossbeam-channel`.
    #[serde(rename = "impl")]
    pub imp: String,
    /// Operations per run (messages, turns...).
    pub n: u64,
    /// Median wall-clock seconds for one run.
    pub secs: f64,
    /// `n / secs`.
    pub per_sec: f64,
}

/// Collects measurements and prints them. See the [module docs](self).
pub struct Harness {
    json: bool,
    runs: usize,
    results: Vec<Measurement>,
}

impl Harness {
    /// A harness printing JSON lines (`json`) or a table at the end.
    pub fn new(json: bool) -> Self {
        Harness {
            json,
            runs: RUNS,
            results: Vec::new(),
        }
    }

    /// Overrides the number of timed runs (at least 1).
    pub fn runs(mut self, runs: usize) -> Self {
        self.runs = runs.max(1);
        self
    }

    /// Measures `run`, which performs `n` operations per call: one warm-up,
    /// then the timed runs; records and returns the median.
    pub fn measure(
        &mut self,
        bench: &str,
        imp: &str,
        n: u64,
        mut run: impl FnMut(),
    ) -> Measurement {
        self.measure_span(bench, imp, n, || {
            let start = Instant::now();
            run();
            start.elapsed()
        })
    }

    /// Like [`Harness::measure`], but `run` times itself and returns the
    /// span that counts (a bench whose set-up or teardown stays outside the
    /// timing, like fan-in's system and consumer).
    pub fn measure_span(
        &mut self,
        bench: &str,
        imp: &str,
        n: u64,
        mut run: impl FnMut() -> Duration,
    ) -> Measurement {
        run();
        let mut times: Vec<Duration> = (0..self.runs).map(|_| run()).collect();
        times.sort();
        let secs = times[times.len() / 2].as_secs_f64();
        let m = Measurement {
            bench: bench.to_string(),
            imp: imp.to_string(),
            n,
            secs,
            per_sec: n as f64 / secs,
        };
        if self.json {
            let line = serde_json::to_string(&m).unwrap_or_default();
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        } else {
            eprintln!("  {bench:<34} {imp:<18} {:>12.0}/s", m.per_sec);
        }
        self.results.push(m.clone());
        m
    }

    /// Records a measurement taken elsewhere (a peer timed in its own
    /// process, like XState on Node): `n` operations in `secs` (median).
    #[cfg_attr(not(feature = "chart"), allow(dead_code))]
    pub fn record(&mut self, bench: &str, imp: &str, n: u64, secs: f64) {
        let m = Measurement {
            bench: bench.to_string(),
            imp: imp.to_string(),
            n,
            secs,
            per_sec: n as f64 / secs,
        };
        if self.json {
            let line = serde_json::to_string(&m).unwrap_or_default();
            println!("{line}");
        } else {
            eprintln!("  {bench:<34} {imp:<18} {:>12.0}/s", m.per_sec);
        }
        self.results.push(m);
    }

    /// Prints the table (nothing in JSON mode, where lines went out already).
    pub fn finish(self) {
        // Nothing timed (e.g. `memory`, which prints its own lines): no table.
        if self.json || self.results.is_empty() {
            return;
        }
        let mut benches: Vec<&str> = Vec::new();
        for m in &self.results {
            if !benches.contains(&m.bench.as_str()) {
                benches.push(&m.bench);
            }
        }
        println!(
            "| bench | impl | n | median secs | per second | vs fastest |\n|---|---|---:|---:|---:|---:|"
        );
        for b in benches {
            let mut rows: Vec<&Measurement> =
                self.results.iter().filter(|m| m.bench == b).collect();
            rows.sort_by(|x, y| y.per_sec.total_cmp(&x.per_sec));
            let best = rows.first().map(|m| m.per_sec).unwrap_or(1.0);
            for m in rows {
                println!(
                    "| {} | {} | {} | {:.4} | {} | {:.2}x |",
                    m.bench,
                    m.imp,
                    m.n,
                    m.secs,
                    human(m.per_sec),
                    m.per_sec / best
                );
            }
        }
    }
}

/// `12.3 M`, `456 k`...
pub fn human(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}
