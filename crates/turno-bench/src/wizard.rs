//! `turno-bench wizard`: the signup wizard under load on loopback (see
//! `turno_wizard::load`): `--n` users (default 400), `--concurrency` at a
//! time (default 64), every
//! 4th with a fault (timeout after charging, lost reply, server error,
//! latency in turn). Prints completed signups per second, request and
//! signup latency percentiles, and checks that the gateway's ledger holds
//! exactly one charge per completed signup (exit status 1 otherwise).
//!
//! It has no peer: it measures the whole application (axum, one chart
//! actor per session, SQLite writes per step, the gateway's SQLite file),
//! not turno alone.

use crate::Args;
use turno_wizard::load::{self, LoadConfig};

/// Runs the load test and prints its report.
pub fn run(args: &Args) {
    let cfg = LoadConfig {
        users: args.n.unwrap_or(400) as usize,
        concurrency: args.concurrency.unwrap_or(64),
        fault_every: 4,
    };
    let dir = std::env::temp_dir().join(format!("turno-bench-wizard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let report = rt.block_on(load::run(&dir, &cfg));
    let _ = std::fs::remove_dir_all(&dir);
    let r = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("turno-bench wizard: {e}");
            std::process::exit(2);
        }
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&r).expect("a report serializes")
        );
    } else {
        println!(
            "wizard: {} users ({} with faults), {} at a time: {} completed in {:.2} s = {:.1} signups/s",
            r.users, r.faulted, cfg.concurrency, r.completed, r.seconds, r.signups_per_sec
        );
        println!(
            "  requests: {} (p50 {:.2} ms, p99 {:.2} ms); signup duration p50 {:.0} ms, p99 {:.0} ms",
            r.requests, r.request_p50_ms, r.request_p99_ms, r.signup_p50_ms, r.signup_p99_ms
        );
        println!(
            "  CONFIRM to completed, sessions without a fault (long-polled as the page does): p50 {:.0} ms, p99 {:.0} ms",
            r.confirm_p50_ms,
            r.confirm_p99_ms
        );
        println!(
            "  charges in the gateway's ledger: {} (completed signups: {}) -> {}",
            r.charges,
            r.completed,
            if r.charges == r.completed {
                "equal"
            } else {
                "NOT EQUAL"
            }
        );
    }
    if r.charges != r.completed {
        std::process::exit(1);
    }
}
