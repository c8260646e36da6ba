//! The differential corpus, as every test that walks it reads it:
//! `tests/corpus/<case>/` holds `machine.json`, `events.json`,
//! `expected.jsonl` (recorded by XState) and, for a machine that invokes
//! child charts, `charts/NAME.json` (the chart `invoke.src: NAME` starts).

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use turno_chart::script::{Item, Show};
use turno_chart::tree::{load_json_tree, Charts};
use turno_chart::{stdlib, Event, Machine};

/// Every case's folder, sorted.
pub fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// A case's child charts: `(name, JSON config)`, sorted by name.
pub fn case_charts(case: &Path) -> Vec<(String, String)> {
    let Ok(dir) = std::fs::read_dir(case.join("charts")) else {
        return Vec::new();
    };
    let mut v: Vec<(String, String)> = dir
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

/// The fields a case's lines show beyond step, value and status: its
/// `show.json` (a list such as `["context", "emitted", "log", "children"]`,
/// what `turno chart run --show` takes), none when it has no such file.
pub fn case_show(case: &Path) -> Show {
    let Ok(text) = std::fs::read_to_string(case.join("show.json")) else {
        return Show::default();
    };
    let list: Vec<String> = serde_json::from_str(&text).expect("show.json is a list of names");
    Show::parse(&list.join(",")).unwrap_or_else(|e| panic!("{}: {e}", case.display()))
}

/// The items of an `events.json` (the format of `turno chart run`'s
/// EVENTS file, whose contract is turno-cli's:
/// `crates/turno-cli/src/events.rs`).
pub fn items(events: &Value) -> Vec<Item> {
    let item = |i: &Value| match i.get("advance_ms") {
        Some(ms) => Item::Advance(ms.as_u64().expect("milliseconds")),
        None => Item::Event(Event::from_json(i).expect("an event")),
    };
    events
        .as_array()
        .expect("an array")
        .iter()
        .map(item)
        .collect()
}

/// A case's machine (with the standard implementations), its child
/// charts and its events.
pub fn load_case(case: &Path) -> (Machine<Value>, Arc<Charts<Value>>, Vec<Item>) {
    let text = std::fs::read_to_string(case.join("machine.json")).unwrap();
    let (m, charts) = load_json_tree(&text, &case_charts(case), &stdlib::implementations())
        .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
    let events: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("events.json")).unwrap()).unwrap();
    (m, charts, items(&events))
}
