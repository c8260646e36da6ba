//! `turno chart run MACHINE EVENTS.json`, `turno chart paths MACHINE`,
//! `turno chart mermaid MACHINE` and `turno chart svg MACHINE`, where MACHINE is an XState v5 JSON
//! machine or an SCXML document (a file ending in `.scxml`), both on
//! turno-chart's one algorithm; `export-scxml` and `scxml-suite`.
//!
//! `run` reads EVENTS and prints its lines as [`crate::events`] says (the
//! contract, the same for both formats); `--show context,emitted,log,children`
//! (JSON machines) adds those fields to every line. `--persist-at K
//! --restore-after-ms D [--snapshot-out FILE]` (JSON machines) persists
//! the chart after K items, lets D virtual ms pass with no chart alive and
//! goes on with a restored one: the output is exactly that of the same run
//! with `{"advance_ms": D}` inserted after the first K items. `--chart
//! NAME=FILE` (repeatable) makes `invoke.src: NAME` start the JSON machine
//! in FILE as a child chart; the snapshot then holds each running child
//! under `charts.<invocation id>` and the contract holds for the whole
//! tree. `paths` prints one JSON line per state, its steps written as
//! EVENTS items. Errors go to stderr with exit code 2, as
//! `FILE:LINE:COLUMN: what` where the file says where.
//!
//! SCXML documents are loaded, run and drawn by `scxml.rs`, which also
//! holds `scxml-suite` and `export-scxml`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use crate::events::{self, Item};
use serde_json::Value;
use turno_chart::tree::{load_json_tree, Charts};
use turno_chart::{load_json, mermaid, paths, script, stdlib, volatile, LoadError, Machine};

use crate::locate;

/// What `turno chart` does.
#[derive(Subcommand)]
pub enum ChartCommand {
    /// Runs a statechart (an XState v5 JSON machine, or an SCXML document:
    /// a file ending in .scxml) against a JSON array of events
    /// (`{"type": "NAME", ...}`) and time advances (`{"advance_ms": N}`);
    /// prints one JSON line per item, `{"step", "value", "status"}` (and
    /// `"error"` once the chart failed), step 0 being the state after
    /// start; `--show` adds more.
    Run {
        /// The machine: XState v5 JSON (turno's standard implementations)
        /// or SCXML (.scxml).
        machine: PathBuf,
        /// The events: a JSON array of events and `{"advance_ms": N}` items.
        events: PathBuf,
        /// Persist the chart after the first K items (0: right after the
        /// start), drop it, and go on with a chart restored from the JSON
        /// (XState JSON machines).
        #[arg(long, value_name = "K")]
        persist_at: Option<usize>,
        /// Virtual milliseconds that pass with no chart alive between
        /// persist and restore (delayed events keep their deadlines).
        #[arg(long, value_name = "D", requires = "persist_at", default_value_t = 0)]
        restore_after_ms: u64,
        /// Also write the snapshot taken to FILE.
        #[arg(long, value_name = "FILE", requires = "persist_at")]
        snapshot_out: Option<PathBuf>,
        /// A child chart: `invoke.src: NAME` starts the XState JSON machine
        /// in FILE (repeatable), as does `spawnChild` with `src: NAME`.
        /// Persisted snapshots hold every listed child chart under
        /// `charts.<id>`.
        #[arg(long = "chart", value_name = "NAME=FILE")]
        charts: Vec<String>,
        /// Also print these fields on every line (XState JSON machines), a
        /// comma-separated list: `context` (the context after the item),
        /// `emitted` (the events `emit` sent during the item), `log` (the
        /// `log` messages of the item), `children` (the children by id as
        /// XState lists them, invoked or spawned, running or finished:
        /// `{"src", "status"}`, and a child chart's `value`, `context` and
        /// its own `children`).
        #[arg(long, value_name = "FIELDS", value_parser = parse_show)]
        show: Option<script::Show>,
    },
    /// Prints every reachable state of a statechart (an XState v5 JSON
    /// machine, or an SCXML document: a file ending in .scxml) with a
    /// shortest sequence of `turno chart run` items that reaches it (one
    /// JSON line per state: `{"value", "status", "context", "steps"}`; an
    /// SCXML document's context is its `<data>`), or with `--simple` every
    /// path that visits no state twice.
    Paths {
        /// The machine: XState v5 JSON or SCXML (.scxml).
        machine: PathBuf,
        /// All simple paths instead of one shortest path per state.
        #[arg(long)]
        simple: bool,
        /// The most states (or paths) to print before giving up.
        #[arg(long, value_name = "N", default_value_t = 10_000)]
        max: usize,
    },
    /// Prints a statechart (an XState v5 JSON machine, or an SCXML
    /// document: a file ending in .scxml) as a Mermaid `stateDiagram-v2`.
    Mermaid {
        /// The machine: XState v5 JSON or SCXML (.scxml).
        machine: PathBuf,
    },
    /// Prints a statechart (an XState v5 JSON machine, or an SCXML
    /// document: a file ending in .scxml) as an SVG picture: states nested
    /// in their parents, parallel regions side by side, every transition a
    /// labelled arrow, history and final states marked (the inspector's and
    /// the wizard's drawing).
    Svg {
        /// The machine: XState v5 JSON or SCXML (.scxml).
        machine: PathBuf,
    },
    /// Runs the W3C SCXML conformance suite: one line per test
    /// (`ID pass` or `ID fail WHY`), the run time, then `N passed, M failed`.
    ScxmlSuite(crate::scxml::SuiteArgs),
    /// Prints a statechart as an SCXML document: an XState v5 JSON machine
    /// converted, an SCXML document (.scxml) checked and printed as it is.
    ExportScxml {
        /// The machine: XState v5 JSON or SCXML (.scxml).
        machine: PathBuf,
    },
}

fn parse_show(list: &str) -> Result<script::Show, String> {
    script::Show::parse(list)
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("turno chart: {msg}");
    ExitCode::from(2)
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn machine(path: &Path) -> Result<Machine<Value>, String> {
    let text = read(path)?;
    load_json(&text, &volatile::guards(stdlib::implementations()))
        .map_err(|e| load_error(&path.display().to_string(), &text, &e))
}

/// A machine file's error, pointing at the line: `file:line:column: ...`
/// (the loader names a JSON path, serde_json a line and column).
pub fn load_error(file: &str, text: &str, e: &LoadError) -> String {
    match e {
        LoadError::Invalid(b) => locate::in_file(file, text, &b.path, e),
        LoadError::Syntax(m) => {
            let at = m.rsplit_once(" at line ").and_then(|(_, lc)| {
                let (l, c) = lc.split_once(" column ")?;
                Some((l.parse::<usize>().ok()?, c.parse::<usize>().ok()?))
            });
            match at {
                Some((line, col)) => format!("{file}:{line}:{col}: {e}"),
                None => format!("{file}: {e}"),
            }
        }
    }
}

/// The machine and its `--chart NAME=FILE` child charts.
fn machine_tree(
    path: &Path,
    charts: &[String],
) -> Result<(Machine<Value>, Arc<Charts<Value>>), String> {
    let mut named = Vec::new();
    let mut files = Vec::new();
    for c in charts {
        let Some((name, file)) = c
            .split_once('=')
            .filter(|(n, f)| !n.is_empty() && !f.is_empty())
        else {
            return Err(format!("--chart {c:?}: expected NAME=FILE"));
        };
        named.push((name.to_string(), read(Path::new(file))?));
        files.push((name.to_string(), file.to_string()));
    }
    let text = read(path)?;
    load_json_tree(&text, &named, &volatile::guards(stdlib::implementations())).map_err(|e| {
        let (file, source) = match &e.chart {
            Some(n) => match files.iter().zip(&named).find(|((name, _), _)| name == n) {
                Some(((_, file), (_, source))) => (file.clone(), source.as_str()),
                None => (n.clone(), ""),
            },
            None => (path.display().to_string(), text.as_str()),
        };
        load_error(&file, source, &e.error)
    })
}

/// The items of an EVENTS file ([`crate::events`]), or the message saying
/// where it is wrong.
pub fn read_items(path: &Path) -> Result<Vec<Item>, String> {
    let text = read(path)?;
    events::parse(&text).map_err(|e| e.in_file(&path.display().to_string()))
}

/// Prints the drawing of `d` (the diagram of the machine in `path`).
pub fn print_svg(path: &Path, d: &turno_chart::svg::Diagram) -> ExitCode {
    match turno_chart::svg::layout(d) {
        Ok(l) => {
            println!("{}", l.svg(&turno_chart::svg::Highlight::default()));
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("{}: {e}", path.display())),
    }
}

/// Runs one `turno chart` command.
pub fn main(cmd: ChartCommand) -> ExitCode {
    match cmd {
        ChartCommand::Run {
            machine: mp,
            show: Some(_),
            ..
        } if crate::scxml::is_scxml(&mp) => fail(format!(
            "{}: --show is for XState JSON machines",
            mp.display()
        )),
        ChartCommand::Run {
            machine: mp,
            events,
            persist_at: None,
            ..
        } if crate::scxml::is_scxml(&mp) => match read_items(&events) {
            Ok(items) => crate::scxml::run(&mp, &events, &items),
            Err(e) => fail(e),
        },
        ChartCommand::Run { machine: mp, .. } if crate::scxml::is_scxml(&mp) => fail(format!(
            "{}: --persist-at is for XState JSON machines; SCXML sessions are not persisted",
            mp.display()
        )),
        ChartCommand::Svg { machine: mp } if crate::scxml::is_scxml(&mp) => crate::scxml::svg(&mp),
        ChartCommand::Mermaid { machine: mp } if crate::scxml::is_scxml(&mp) => {
            crate::scxml::mermaid(&mp)
        }
        ChartCommand::Paths {
            machine: mp,
            simple,
            max,
        } if crate::scxml::is_scxml(&mp) => crate::scxml::paths(&mp, simple, max),
        ChartCommand::ScxmlSuite(args) => crate::scxml::suite(args),
        ChartCommand::ExportScxml { machine: mp } => crate::scxml::export(&mp),
        ChartCommand::Run {
            machine: mp,
            events,
            persist_at,
            restore_after_ms,
            snapshot_out,
            charts,
            show,
        } => {
            let (m, charts) = match machine_tree(&mp, &charts) {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            let items: Vec<_> = match read_items(&events) {
                Ok(items) => items.iter().map(Item::to_chart).collect(),
                Err(e) => return fail(e),
            };
            let at = persist_at.map(|after_items| script::PersistAt {
                after_items,
                restore_after_ms,
            });
            let show = show.unwrap_or_default();
            let run = match script::run_shown(&m, charts, &items, at, show) {
                Ok(r) => r,
                Err(e) => return fail(format!("{}: {e}", events.display())),
            };
            if let (Some(path), Some(text)) = (&snapshot_out, &run.snapshot) {
                if let Err(e) = std::fs::write(path, text) {
                    return fail(format!("{}: {e}", path.display()));
                }
            }
            let lines = run.lines;
            let mut out = std::io::stdout().lock();
            for line in lines {
                let text = serde_json::to_string(&line).expect("lines serialise");
                if writeln!(out, "{text}").is_err() {
                    return ExitCode::from(2);
                }
            }
            ExitCode::SUCCESS
        }
        ChartCommand::Paths {
            machine: mp,
            simple,
            max,
        } => {
            let m = match machine(&mp) {
                Ok(m) => m,
                Err(e) => return fail(e),
            };
            let explorer = paths::Explorer::new(&m).limit(max);
            let found = if simple {
                explorer.simple_paths()
            } else {
                explorer.shortest_paths()
            };
            let found = match found {
                Ok(f) => f,
                Err(e) => return fail(format!("{}: {e}", mp.display())),
            };
            let mut out = std::io::stdout().lock();
            for p in found {
                let s = p.state();
                let line = serde_json::json!({
                    "value": s.value(&m).to_json(),
                    "status": s.status.as_str(),
                    "context": s.context,
                    "steps": p.items(),
                });
                if writeln!(out, "{line}").is_err() {
                    return ExitCode::from(2);
                }
            }
            ExitCode::SUCCESS
        }
        ChartCommand::Mermaid { machine: mp } => match machine(&mp) {
            Ok(m) => {
                print!("{}", mermaid::to_mermaid(&m));
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        ChartCommand::Svg { machine: mp } => match machine(&mp) {
            Ok(m) => print_svg(&mp, &turno_chart::svg::Diagram::from_machine(&m)),
            Err(e) => fail(e),
        },
    }
}
