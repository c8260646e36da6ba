//! The W3C SCXML conformance suite runner.
//!
//! The suite folder holds `manifest.xml` (each test: id, mandatory or
//! optional, manual or automated, and its documents), the tests converted
//! for ECMAScript (`testNNN.txml.scxml`) and for each an expected run
//! (`testNNN.txml.json`: `initialConfiguration`, then `events`, each sent
//! `after` milliseconds with the `nextConfiguration` it must lead to).
//!
//! A test runs on [`Processor`] in virtual time: the initial configuration is
//! checked right after the first macrostep (before any external event, as
//! an asynchronous processor would show it), then for each scripted event
//! the clock advances by `after` (running every macrostep and delayed event
//! due), the event is sent and processed, and the atomic configuration is
//! compared as a set.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::event::Event;
use crate::load::load_file;
use crate::processor::Processor;
use crate::xml::{self, Element};

/// The environment variable naming the suite folder (overrides the default).
pub const SUITE_DIR_ENV: &str = "TURNO_SCXML_SUITE";

/// One test of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    /// The manifest's id (`"355"`).
    pub id: String,
    /// Mandatory (or optional).
    pub mandatory: bool,
    /// Needs a person to judge it.
    pub manual: bool,
    /// Documents to run, as file stems (`test403a.txml`); all must pass.
    pub starts: Vec<String>,
}

/// The outcome of one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The test.
    pub id: String,
    /// `None` when it passed, else why not.
    pub failure: Option<String>,
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct Report {
    /// One per test, in manifest order.
    pub outcomes: Vec<Outcome>,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

impl Report {
    /// Tests that passed.
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.failure.is_none()).count()
    }

    /// Tests that failed.
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.passed()
    }

    /// The report as the CLI prints it: one line per test (`id pass` or
    /// `id fail why`), the run time, and `N passed, M failed` last.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for o in &self.outcomes {
            match &o.failure {
                None => s.push_str(&format!("{} pass\n", o.id)),
                Some(why) => s.push_str(&format!("{} fail {}\n", o.id, why.replace('\n', " "))),
            }
        }
        s.push_str(&format!(
            "suite time: {:.3} s\n",
            self.elapsed.as_secs_f64()
        ));
        s.push_str(&format!(
            "{} passed, {} failed\n",
            self.passed(),
            self.failed()
        ));
        s
    }
}

/// Which tests to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// Mandatory automated tests (the default).
    Mandatory,
    /// Mandatory and optional automated tests (`--all`).
    All,
}

/// The suite folder: `explicit` if given, else `$TURNO_SCXML_SUITE`, else
/// `../shared/conformance/scxml-w3c` next to the workspace root (found by
/// walking up from `start` to the directory holding `Cargo.lock`).
pub fn locate_suite(explicit: Option<&Path>, start: &Path) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(SUITE_DIR_ENV) {
        return Some(PathBuf::from(p));
    }
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join("Cargo.lock").exists() {
            let p = d.join("../shared/conformance/scxml-w3c");
            return p.exists().then_some(p);
        }
        dir = d.parent();
    }
    None
}

/// Reads `manifest.xml`.
pub fn read_manifest(dir: &Path) -> Result<Vec<TestCase>, String> {
    let path = dir.join("manifest.xml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let root = xml::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    collect_tests(&root, &mut out)?;
    Ok(out)
}

fn collect_tests(el: &Element, out: &mut Vec<TestCase>) -> Result<(), String> {
    for c in el.elements() {
        if c.name == "test" {
            let id = c
                .attr("id")
                .ok_or_else(|| format!("{}: <test> without id", c.pos))?
                .to_owned();
            let starts = c
                .elements()
                .filter(|s| s.name == "start")
                .filter_map(|s| s.attr("uri"))
                .map(|u| u.rsplit('/').next().unwrap_or(u).to_owned())
                .collect();
            out.push(TestCase {
                id,
                mandatory: c.attr("conformance") == Some("mandatory"),
                manual: c.attr("manual") == Some("true"),
                starts,
            });
        } else {
            collect_tests(c, out)?;
        }
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Script {
    initial_configuration: Vec<String>,
    #[serde(default)]
    events: Vec<ScriptEvent>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScriptEvent {
    #[serde(default)]
    after: f64,
    event: ScriptEventBody,
    next_configuration: Vec<String>,
}

#[derive(Deserialize)]
struct ScriptEventBody {
    name: String,
    #[serde(default)]
    data: Option<serde_json::Value>,
}

/// Runs the selected tests of the suite in `dir`.
pub fn run_suite(dir: &Path, selection: Selection) -> Result<Report, String> {
    let tests = read_manifest(dir)?;
    let started = Instant::now();
    let outcomes = tests
        .iter()
        .filter(|t| !t.manual && (t.mandatory || selection == Selection::All))
        .map(|t| Outcome {
            id: t.id.clone(),
            failure: run_test(dir, t).err(),
        })
        .collect();
    Ok(Report {
        outcomes,
        elapsed: started.elapsed(),
    })
}

/// Runs one test: every document it names must pass.
pub fn run_test(dir: &Path, test: &TestCase) -> Result<(), String> {
    if test.starts.is_empty() {
        return Err("no document".into());
    }
    for stem in &test.starts {
        let prefix = if test.starts.len() > 1 {
            format!("{stem}: ")
        } else {
            String::new()
        };
        run_document(dir, stem).map_err(|e| format!("{prefix}{e}"))?;
    }
    Ok(())
}

fn run_document(dir: &Path, stem: &str) -> Result<(), String> {
    let scxml = dir.join(format!("{stem}.scxml"));
    let json = dir.join(format!("{stem}.json"));
    if !scxml.exists() {
        return Err(format!("no converted document {}", scxml.display()));
    }
    let script_text = std::fs::read_to_string(&json)
        .map_err(|e| format!("no expected run {}: {e}", json.display()))?;
    let script: Script =
        serde_json::from_str(&script_text).map_err(|e| format!("{}: {e}", json.display()))?;
    let doc = load_file(&scxml).map_err(|e| format!("load: {e}"))?;
    let mut sys = Processor::new();
    let root = sys
        .start(Arc::new(doc))
        .map_err(|e| format!("start: {e}"))?;
    let failed = |sys: &Processor| match sys.session(root).and_then(|s| s.failure()) {
        Some(f) => Err(f.to_owned()),
        None => Ok(()),
    };
    failed(&sys)?;
    check(
        &sys.atomic_states(root),
        &script.initial_configuration,
        "initial",
    )?;
    for (i, ev) in script.events.iter().enumerate() {
        let t = sys.now_ms() + ev.after;
        sys.run_until(t).map_err(|e| e.to_string())?;
        sys.send(
            root,
            Event::external(ev.event.name.clone(), ev.event.data.clone()),
        );
        sys.run_until(t).map_err(|e| e.to_string())?;
        failed(&sys)?;
        check(
            &sys.atomic_states(root),
            &ev.next_configuration,
            &format!("after event {} ({:?})", i + 1, ev.event.name),
        )?;
    }
    Ok(())
}

fn check(actual: &[String], expected: &[String], when: &str) -> Result<(), String> {
    let a: BTreeSet<&str> = actual.iter().map(String::as_str).collect();
    let e: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    if a == e {
        Ok(())
    } else {
        Err(format!("{when}: configuration {a:?}, expected {e:?}"))
    }
}
