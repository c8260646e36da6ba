//! `turno inspect TRACE...`: serves the inspector for a recorded trace on
//! 127.0.0.1 and prints its URL (several cluster nodes' traces are merged
//! into one cluster trace); `turno js run FILE.js --inspect` and
//! `turno demo overload --inspect [POLICY]` record a trace and open it in one go.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use turno::Policy;

use crate::demo;

/// `turno inspect TRACE... [--port N] [--source FILE]`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A trace file (`turno-trace` or `turno-js-trace` JSON lines), or
    /// several cluster nodes' traces, shown as one cluster trace.
    #[arg(required = true, num_args = 1..)]
    pub trace: Vec<PathBuf>,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The JavaScript program to show (default: the trace's `file`, as
    /// given or next to the trace).
    #[arg(long)]
    pub source: Option<PathBuf>,
}

/// Runs `turno inspect`.
pub fn main(args: &InspectArgs) -> ExitCode {
    match args.trace.as_slice() {
        [one] => serve(one, args.source.as_deref(), args.port),
        several => {
            let loaded = turno_inspect::Loaded::open_cluster(several);
            let names: Vec<String> = several.iter().map(|p| p.display().to_string()).collect();
            serve_loaded(loaded, &names.join(" + "), args.port)
        }
    }
}

fn serve(trace: &Path, source: Option<&Path>, port: u16) -> ExitCode {
    let name = trace.display().to_string();
    serve_loaded(turno_inspect::Loaded::open(trace, source), &name, port)
}

fn serve_loaded(
    loaded: Result<turno_inspect::Loaded, turno_inspect::Error>,
    trace: &str,
    port: u16,
) -> ExitCode {
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            eprintln!("turno inspect: {e}");
            return ExitCode::from(2);
        }
    };
    let ix = loaded.index();
    if let Some(e) = ix.error() {
        eprintln!(
            "turno inspect: {}: the trace is cut at {e}; showing the {} events before",
            trace,
            ix.len()
        );
    }
    let times = loaded
        .index_times()
        .map(|t| {
            format!(
                "; {:.0} ms on a CPU, {:.0} ms waiting for one",
                t.cpu.as_secs_f64() * 1000.0,
                t.waiting.as_secs_f64() * 1000.0
            )
        })
        .unwrap_or_default();
    eprintln!(
        "turno inspect: {} events indexed in {:.0} ms ({} checkpoints{times})",
        ix.len(),
        loaded.index_ms(),
        ix.checkpoints()
    );
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let result = turno_inspect::serve_blocking(loaded, addr, |url| {
        println!("{url}");
        eprintln!("turno inspect: serving {} at {url} (Ctrl-C to stop)", trace);
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("turno inspect: {e}");
            ExitCode::from(2)
        }
    }
}

fn temp_trace(stem: &str) -> PathBuf {
    std::env::temp_dir().join(format!("turno-{stem}-{}.jsonl", std::process::id()))
}

/// `turno js run FILE.js --inspect`: the trace goes to `--trace` if given,
/// else to a temporary file. Returns (trace, source).
pub fn trace_to(trace: &mut Option<PathBuf>, file: &Path) -> (PathBuf, PathBuf) {
    let path = trace.get_or_insert_with(|| temp_trace("js")).clone();
    (path, file.to_owned())
}

/// Serves the trace that `turno js run --inspect` wrote (if the run wrote
/// one; otherwise exits with the run's code).
pub fn open_js(code: i32, trace: &Path, source: &Path) -> ExitCode {
    if !trace.exists() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let served = serve(trace, Some(source), 0);
    // A trace written to a temporary file (no --trace) goes with the server.
    if trace == temp_trace("js") {
        let _ = std::fs::remove_file(trace);
    }
    served
}

/// `turno demo overload --inspect POLICY`: runs the overload scenario under one
/// policy with a trace and serves it.
pub fn demo(scenario: &demo::Scenario, policy: &str) -> ExitCode {
    let Some(policy) = parse_policy(policy, scenario.capacity) else {
        eprintln!(
            "turno demo overload: --inspect takes unbounded, keep-newest, keep-oldest, reject or suspend, not {policy:?}"
        );
        return ExitCode::from(2);
    };
    let path = temp_trace("demo");
    let file = match std::fs::File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("turno demo overload: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let sink = turno::trace::JsonLinesSink::new(std::io::BufWriter::new(file));
    let outcome = demo::run_on(scenario, policy, turno::DetSystem::builder().trace(sink));
    eprintln!(
        "turno demo overload: {policy}: sent {}, delivered {}, dropped {}, rejected {}, queued {}, max depth {}; trace in {}",
        outcome.sent,
        outcome.delivered,
        outcome.dropped,
        outcome.rejected,
        outcome.queued,
        outcome.max_depth,
        path.display()
    );
    let served = serve(&path, None, 0);
    // The trace was only for this page: it goes with the server.
    let _ = std::fs::remove_file(&path);
    served
}

fn parse_policy(name: &str, capacity: usize) -> Option<Policy> {
    demo::policies(capacity)
        .into_iter()
        .find(|p| p.name().replace('_', "-") == name || p.to_string() == name)
}
