//! `turno js run FILE.js`: the JavaScript event-loop explorer's command line.
//!
//! All argument parsing lives here (the `turno-js` library has no CLI code).
//! Exit codes: the program's own (as the real runtime would give it), 2 for
//! bad usage or an unreadable file (clap also exits with 2 on bad usage), 3
//! when a budget stopped a runaway program, 4 for an engine failure.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use turno_js::{Browser, Cost, InputEvent, JsRunError, Model, RunOptions, RunReport};

/// `turno js ...`.
#[derive(Subcommand)]
pub enum JsCommand {
    /// Run FILE.js on virtual time and print what it prints, in the order the
    /// real runtime would.
    Run(RunArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum ModelArg {
    /// Node.js 20 (phases, process.nextTick, setImmediate).
    Node,
    /// A browser page (the HTML Standard event loop).
    #[value(alias = "browser")]
    Html,
}

#[derive(Clone, Copy, ValueEnum)]
enum BrowserArg {
    /// What headless Chromium does where the HTML Standard lets the browser choose.
    Chromium,
    /// The HTML Standard only: runnable tasks in the order they became runnable.
    Spec,
}

/// Arguments of `turno js run`.
#[derive(Args)]
pub struct RunArgs {
    /// The JavaScript file to run.
    file: PathBuf,
    /// The host model.
    #[arg(long, value_enum, default_value = "node")]
    model: ModelArg,
    /// Browser profile of the html model: the order among task sources.
    #[arg(long, value_enum, default_value = "chromium")]
    browser: BrowserArg,
    /// Write the trace (turno-js-trace JSON lines) to this file.
    #[arg(long, value_name = "OUT.json")]
    trace: Option<PathBuf>,
    /// Record the trace (to --trace, or a temporary file) and open it in the inspector.
    #[arg(long)]
    inspect: bool,
    /// Virtual nanoseconds per executed boa instruction (0: JavaScript takes no time).
    #[arg(long, value_name = "NS", default_value_t = Cost::DEFAULT.ns_per_instruction())]
    cost: f64,
    /// Scripted user input (html): a JSON array of key presses and clicks at virtual times.
    #[arg(long, value_name = "input.json")]
    input: Option<PathBuf>,
    /// Most host steps (callbacks, microtasks, the script) before the run stops.
    #[arg(long, value_name = "N", default_value_t = RunOptions::new(Model::Node).max_steps)]
    max_steps: u64,
    /// Most virtual milliseconds the run may reach.
    #[arg(long, value_name = "N", default_value_t = 3_600_000)]
    max_virtual_ms: u64,
    /// Most iterations of any one JavaScript loop.
    #[arg(long, value_name = "N", default_value_t = RunOptions::new(Model::Node).max_loop_iterations)]
    max_loop_iterations: u64,
    /// Keep every built-in the engine has, even those the modelled runtime
    /// lacks (by default Node 20's missing `Promise.withResolvers`,
    /// `Object.groupBy`, ... are hidden: docs/js-runtime.md).
    #[arg(long)]
    all_builtins: bool,
}

/// Runs `turno js <command>` and returns the process exit code.
pub fn main(cmd: JsCommand) -> ExitCode {
    let JsCommand::Run(mut args) = cmd;
    let inspect = args
        .inspect
        .then(|| crate::inspect::trace_to(&mut args.trace, &args.file));
    let code = run(args);
    match inspect {
        Some((trace, source)) => crate::inspect::open_js(code, &trace, &source),
        None => ExitCode::from(u8::try_from(code).unwrap_or(1)),
    }
}

fn run(args: RunArgs) -> i32 {
    let model = match args.model {
        ModelArg::Node => Model::Node,
        ModelArg::Html => Model::Html,
    };
    let cost = match Cost::per_instruction_ns(args.cost) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("turno js: --cost: {e}");
            return 2;
        }
    };
    let input = match &args.input {
        None => Vec::new(),
        Some(path) => {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("turno js: cannot read {}: {e}", path.display());
                    return 2;
                }
            };
            match InputEvent::parse_script(&text) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("turno js: {}: {e}", path.display());
                    return 2;
                }
            }
        }
    };
    let file = args.file.to_string_lossy().to_string();
    let source = match std::fs::read_to_string(&args.file) {
        Ok(s) => s,
        Err(source) => {
            eprintln!("turno js: {}", JsRunError::Io { path: file, source });
            return 2;
        }
    };
    let opts = RunOptions {
        browser: match args.browser {
            BrowserArg::Chromium => Browser::Chromium,
            BrowserArg::Spec => Browser::Spec,
        },
        cost,
        input,
        base_dir: args.file.parent().map(|p| p.to_path_buf()),
        max_steps: args.max_steps,
        max_virtual_time: Duration::from_millis(args.max_virtual_ms),
        max_loop_iterations: args.max_loop_iterations,
        all_builtins: args.all_builtins,
        trace: args.trace.is_some(),
        ..RunOptions::new(model)
    };
    match turno_js::run(&source, &file, &opts) {
        Ok(report) => {
            if let Err(e) = emit(&report, args.trace.as_ref()) {
                eprintln!("turno js: {e}");
                return 2;
            }
            report.exit_code
        }
        Err(e) => {
            if let Some(partial) = e.partial_report() {
                let _ = emit(partial, args.trace.as_ref());
                eprintln!("turno js: error: {e}");
                3
            } else {
                eprintln!("turno js: error: {e}");
                4
            }
        }
    }
}

/// Prints the program's output, the notes (on stderr, prefixed
/// `turno js: note:`), and writes the trace if asked.
fn emit(report: &RunReport, trace_out: Option<&PathBuf>) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(report.stdout.as_bytes());
    let _ = out.flush();
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(report.stderr.as_bytes());
    for n in &report.notes {
        let _ = writeln!(err, "turno js: note: {n}");
    }
    if let (Some(path), Some(trace)) = (trace_out, &report.trace) {
        std::fs::write(path, trace.to_json_lines())
            .map_err(|e| format!("cannot write trace {}: {e}", path.display()))?;
    }
    Ok(())
}
