//! `turno js run FILE.js [--model node|html] [--trace OUT.json]`, without clap,
//! so the `turno` binary can delegate `turno js ...` in one line.

use std::io::Write;

use crate::{run, JsRunError, Model, RunOptions, RunReport};

const USAGE: &str = "usage: turno js run FILE.js [--model node|html] [--trace OUT.json] \
[--max-steps N] [--max-virtual-ms N] [--max-loop-iterations N]";

/// Parsed `js run` arguments.
struct Args {
    file: String,
    opts: RunOptions,
    trace_out: Option<String>,
}

fn parse(args: &[String]) -> Result<Args, JsRunError> {
    let mut it = args.iter().map(String::as_str).peekable();
    // Accept both `["js", "run", ...]` and `["run", ...]`.
    if it.peek() == Some(&"js") {
        it.next();
    }
    match it.next() {
        Some("run") => {}
        Some("-h") | Some("--help") | None => return Err(JsRunError::Usage(USAGE.into())),
        Some(other) => {
            return Err(JsRunError::Usage(format!(
                "unknown subcommand '{other}'\n{USAGE}"
            )))
        }
    }
    let mut file = None;
    let mut opts = RunOptions::new(Model::Node);
    let mut trace_out = None;
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .map(str::to_string)
                .ok_or_else(|| JsRunError::Usage(format!("{name} needs a value\n{USAGE}")))
        };
        match a {
            "--model" => opts.model = value("--model")?.parse()?,
            "--trace" => {
                trace_out = Some(value("--trace")?);
                opts.trace = true;
            }
            "--max-steps" => {
                opts.max_steps = value("--max-steps")?.parse().map_err(|_| {
                    JsRunError::Usage(format!("--max-steps needs a number\n{USAGE}"))
                })?
            }
            "--max-virtual-ms" => {
                let ms: u64 = value("--max-virtual-ms")?.parse().map_err(|_| {
                    JsRunError::Usage(format!("--max-virtual-ms needs a number\n{USAGE}"))
                })?;
                opts.max_virtual_time = std::time::Duration::from_millis(ms);
            }
            "--max-loop-iterations" => {
                opts.max_loop_iterations =
                    value("--max-loop-iterations")?.parse().map_err(|_| {
                        JsRunError::Usage(format!("--max-loop-iterations needs a number\n{USAGE}"))
                    })?
            }
            s if s.starts_with("--model=") => opts.model = s["--model=".len()..].parse()?,
            s if s.starts_with("--trace=") => {
                trace_out = Some(s["--trace=".len()..].to_string());
                opts.trace = true;
            }
            s if s.starts_with('-') => {
                return Err(JsRunError::Usage(format!("unknown option '{s}'\n{USAGE}")))
            }
            s => {
                if file.replace(s.to_string()).is_some() {
                    return Err(JsRunError::Usage(format!("only one FILE.js\n{USAGE}")));
                }
            }
        }
    }
    let file = file.ok_or_else(|| JsRunError::Usage(format!("missing FILE.js\n{USAGE}")))?;
    Ok(Args {
        file,
        opts,
        trace_out,
    })
}

fn emit(report: &RunReport, trace_out: Option<&str>) -> Result<(), String> {
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
            .map_err(|e| format!("cannot write trace {path}: {e}"))?;
    }
    Ok(())
}

/// Implements `turno js run FILE.js [--model node|html] [--trace OUT.json]`.
///
/// `args` are the words after the binary name, starting with `js` (or
/// directly with `run`). Prints the program's stdout and stderr, notes about
/// nondeterminism (on stderr, prefixed `turno js: note:`), writes the trace if
/// asked, and returns the exit code: the program's own (as Node would give
/// it), 2 for bad usage or an unreadable file, 3 when a budget stopped a
/// runaway program, 4 for an engine failure.
pub fn cli_main(args: &[String]) -> i32 {
    let parsed = match parse(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let source = match std::fs::read_to_string(&parsed.file) {
        Ok(s) => s,
        Err(source) => {
            eprintln!(
                "turno js: {}",
                JsRunError::Io {
                    path: parsed.file.clone(),
                    source
                }
            );
            return 2;
        }
    };
    match run(&source, &parsed.file, &parsed.opts) {
        Ok(report) => {
            if let Err(e) = emit(&report, parsed.trace_out.as_deref()) {
                eprintln!("turno js: {e}");
                return 2;
            }
            report.exit_code
        }
        Err(e) => {
            if let Some(partial) = e.partial_report() {
                let _ = emit(partial, parsed.trace_out.as_deref());
                eprintln!("turno js: error: {e}");
                3
            } else {
                eprintln!("turno js: error: {e}");
                4
            }
        }
    }
}
