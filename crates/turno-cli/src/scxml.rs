//! The SCXML side of `turno chart`: `turno chart scxml-suite [DIR] [--all]`,
//! and `turno chart run FILE.scxml EVENTS.json`, `turno chart paths
//! FILE.scxml`, `turno chart mermaid FILE.scxml`, `turno chart export-scxml
//! FILE.scxml` (files ending in `.scxml` are SCXML documents; the EVENTS
//! contract and the output are those of XState JSON machines,
//! [`crate::events`]).
//!
//! Exit codes: 0 success (for the suite: nothing failed), 1 a suite test
//! failed, 2 bad usage, an unreadable or invalid file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};
use turno_scxml::paths::Explorer;

use crate::events::Item;
use turno_scxml::suite::{locate_suite, run_suite, Selection, SUITE_DIR_ENV};

/// `turno chart scxml-suite`.
#[derive(Args)]
pub struct SuiteArgs {
    /// The suite folder (manifest.xml, testNNN.txml.scxml and .json).
    /// Default: $TURNO_SCXML_SUITE, else ../shared/conformance/scxml-w3c
    /// beside the workspace holding the current directory.
    pub dir: Option<PathBuf>,
    /// Run the optional automated tests too.
    #[arg(long)]
    pub all: bool,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("turno chart: {msg}");
    ExitCode::from(2)
}

/// Is this file an SCXML document (by its extension)?
pub fn is_scxml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("scxml"))
}

/// `turno chart scxml-suite`.
pub fn suite(args: SuiteArgs) -> ExitCode {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let Some(dir) = locate_suite(args.dir.as_deref(), &cwd) else {
        return fail(format!(
            "no suite folder: give DIR, set {SUITE_DIR_ENV}, or run inside a workspace with ../shared/conformance/scxml-w3c"
        ));
    };
    let selection = if args.all {
        Selection::All
    } else {
        Selection::Mandatory
    };
    match run_suite(&dir, selection) {
        Ok(report) => {
            print!("{}", report.render());
            if report.failed() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => fail(e),
    }
}

fn load(path: &Path) -> Result<turno_scxml::Document, String> {
    turno_scxml::load_file(path).map_err(|e| match e.position() {
        // `file:line:column: ...`, as compilers say it.
        Some(_) => format!("{}:{e}", path.display()),
        None => e.to_string(),
    })
}

/// `turno chart run FILE.scxml EVENTS.json`: one JSON line per item.
pub fn run(machine: &Path, events: &Path, items: &[Item]) -> ExitCode {
    let doc = match load(machine) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let items: Vec<_> = items.iter().map(Item::to_scxml).collect();
    let lines = match turno_scxml::script::run(&doc, &items) {
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

/// `turno chart paths FILE.scxml [--simple] [--max N]`: the lines of
/// `turno chart paths` for a JSON machine, the context being the
/// document's `<data>`.
pub fn paths(machine: &Path, simple: bool, max: usize) -> ExitCode {
    let doc = match load(machine) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let explorer = Explorer::new(&doc).limit(max);
    let found = if simple {
        explorer.simple_paths()
    } else {
        explorer.shortest_paths()
    };
    let found = match found {
        Ok(f) => f,
        Err(e) => return fail(format!("{}: {e}", machine.display())),
    };
    let mut out = std::io::stdout().lock();
    for p in found {
        let steps: Vec<Value> = p.steps.iter().map(item_json).collect();
        let line = json!({
            "value": p.value,
            "status": if p.running { "active" } else { "done" },
            "context": p.data,
            "steps": steps,
        });
        if writeln!(out, "{line}").is_err() {
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

/// A step as an EVENTS item.
fn item_json(item: &turno_scxml::script::Item) -> Value {
    match item {
        turno_scxml::script::Item::Event(e) => {
            let mut m = match &e.data {
                Some(Value::Object(m)) => m.clone(),
                _ => serde_json::Map::new(),
            };
            m.insert("type".into(), Value::String(e.name.clone()));
            Value::Object(m)
        }
        turno_scxml::script::Item::Advance(ms) => json!({"advance_ms": ms}),
    }
}

/// `turno chart mermaid FILE.scxml`.
pub fn mermaid(machine: &Path) -> ExitCode {
    match load(machine) {
        Ok(doc) => {
            print!("{}", turno_scxml::mermaid::to_mermaid(&doc));
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// `turno chart svg FILE.scxml`: the document's states and the transitions
/// it writes (not the synthetic initial ones, drawn as initial arrows).
pub fn svg(machine: &Path) -> ExitCode {
    match load(machine) {
        Ok(doc) => crate::chart::print_svg(machine, &diagram(&doc)),
        Err(e) => fail(e),
    }
}

fn diagram(doc: &turno_scxml::Document) -> turno_chart::svg::Diagram {
    use turno_chart::svg::{Arrow, Diagram, Node, NodeKind};
    use turno_scxml::model::{HistoryKind, StateKind};
    let initial_child = |s: usize| {
        let t = doc.states[s].initial?;
        match doc.transitions[t].targets[..] {
            [c] if doc.states[c].parent == Some(s) => Some(c),
            _ => None,
        }
    };
    let states = doc
        .states
        .iter()
        .enumerate()
        .map(|(i, s)| Node {
            id: s.id.clone(),
            label: match (i, &doc.name) {
                (0, Some(n)) => n.clone(),
                (0, None) => "scxml".into(),
                _ => s.id.clone(),
            },
            parent: s.parent,
            kind: match s.kind {
                StateKind::Parallel => NodeKind::Parallel,
                StateKind::Final => NodeKind::Final,
                StateKind::History(h) => NodeKind::History {
                    deep: h == HistoryKind::Deep,
                },
                StateKind::Scxml | StateKind::State if !s.children.is_empty() => NodeKind::Compound,
                StateKind::Scxml | StateKind::State => NodeKind::Atomic,
            },
            initial: initial_child(i),
        })
        .collect();
    let transitions = doc
        .states
        .iter()
        .flat_map(|s| s.transitions.iter())
        .map(|&t| {
            let tr = &doc.transitions[t];
            let mut label = if tr.events.is_empty() {
                "always".to_string()
            } else {
                tr.events.join(" ")
            };
            if let Some(c) = &tr.cond {
                label.push_str(&format!(" [{c}]"));
            }
            Arrow {
                source: tr.source,
                targets: tr.targets.clone(),
                label,
            }
        })
        .collect();
    Diagram {
        states,
        transitions,
        initial: None,
    }
}

/// `turno chart export-scxml MACHINE`: an XState v5 JSON machine (with
/// turno-chart's standard implementations) as an SCXML document; an SCXML
/// document is checked and printed as it is.
pub fn export(machine: &Path) -> ExitCode {
    if is_scxml(machine) {
        // A document already: checked, and printed as it is.
        return match load(machine).and_then(|_| {
            std::fs::read_to_string(machine).map_err(|e| format!("{}: {e}", machine.display()))
        }) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        };
    }
    let text = match std::fs::read_to_string(machine) {
        Ok(t) => t,
        Err(e) => return fail(format!("{}: {e}", machine.display())),
    };
    let m = match turno_chart::load_json(&text, &turno_chart::stdlib::implementations()) {
        Ok(m) => m,
        Err(e) => {
            return fail(crate::chart::load_error(
                &machine.display().to_string(),
                &text,
                &e,
            ))
        }
    };
    match turno_scxml::export::to_scxml(&m) {
        Ok(doc) => {
            print!("{doc}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("{}: {e}", machine.display())),
    }
}
