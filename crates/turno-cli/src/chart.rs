//! `turno chart run MACHINE.json EVENTS.json` and `turno chart mermaid
//! MACHINE.json`: XState v5 JSON machines on turno-chart's pure core.
//!
//! `run` prints one JSON line per item of EVENTS (step 0 is the initial
//! state): `{"step": i, "value": <snapshot.value>, "status": "active"|"done"}`.
//! Errors go to stderr with exit code 2.
//!
//! Files ending in `.scxml` are SCXML documents, run and drawn by
//! `scxml.rs`, which also holds `scxml-suite` and `export-scxml`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::Value;
use turno_chart::{load_json, mermaid, script, stdlib, Machine};

/// What `turno chart` does.
#[derive(Subcommand)]
pub enum ChartCommand {
    /// Runs an XState v5 JSON machine against a JSON array of events and
    /// `{"advance_ms": N}` items; prints one JSON line per item.
    Run {
        /// The machine config (XState v5 JSON, turno's standard implementations).
        machine: PathBuf,
        /// The events: a JSON array.
        events: PathBuf,
    },
    /// Prints the machine as a Mermaid `stateDiagram-v2`.
    Mermaid {
        /// The machine config.
        machine: PathBuf,
    },
    /// Runs the W3C SCXML conformance suite: one line per test
    /// (`ID pass` or `ID fail WHY`), the run time, then `N passed, M failed`.
    ScxmlSuite(crate::scxml::SuiteArgs),
    /// Prints an XState v5 JSON machine as an SCXML document.
    ExportScxml {
        /// The machine config.
        machine: PathBuf,
    },
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
    load_json(&text, &stdlib::implementations()).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs one `turno chart` command.
pub fn main(cmd: ChartCommand) -> ExitCode {
    match cmd {
        ChartCommand::Run {
            machine: mp,
            events,
        } if crate::scxml::is_scxml(&mp) => crate::scxml::run(&mp, &events),
        ChartCommand::Mermaid { machine: mp } if crate::scxml::is_scxml(&mp) => {
            crate::scxml::mermaid(&mp)
        }
        ChartCommand::ScxmlSuite(args) => crate::scxml::suite(args),
        ChartCommand::ExportScxml { machine: mp } => crate::scxml::export(&mp),
        ChartCommand::Run {
            machine: mp,
            events,
        } => {
            let m = match machine(&mp) {
                Ok(m) => m,
                Err(e) => return fail(e),
            };
            let items: Value = match read(&events).and_then(|t| {
                serde_json::from_str(&t)
                    .map_err(|e| format!("{}: not valid JSON: {e}", events.display()))
            }) {
                Ok(v) => v,
                Err(e) => return fail(e),
            };
            let lines = match script::run(&m, &items) {
                Ok(l) => l,
                Err(e) => return fail(format!("{}: {e}", events.display())),
            };
            let mut out = std::io::stdout().lock();
            for line in lines {
                let text = serde_json::to_string(&line).expect("lines serialise");
                if writeln!(out, "{text}").is_err() {
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
    }
}
