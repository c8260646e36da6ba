//! The persisted-snapshot reader of turno-chart on arbitrary text, and on
//! valid snapshots with a window of bytes overwritten (among them a tree
//! whose invoked child chart is nested under `charts`): a typed error with
//! a JSON path, or a snapshot that restores; never a panic, never a
//! half-restored chart.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use turno_chart::persist::{Persist, RestoreError, Sanitizer};
use turno_chart::tree::{Charts, Tree};
use turno_chart::{initial_transition, load_json, stdlib, transition, Event, Machine};

const MACHINE: &str = r#"{
  "id": "f", "version": "2", "initial": "a", "context": {"n": 0},
  "states": {
    "a": {"on": {"GO": "b"}, "entry": {"type": "inc", "params": {"key": "n"}}},
    "b": {"invoke": [{"id": "job", "src": "never"}, {"id": "kid", "src": "kid"}],
          "after": {"500": "c"}, "on": {"P": "p", "K": {"actions": {"type": "sendTo", "params": {"to": "kid", "event": {"type": "T"}}}}}},
    "c": {"initial": "x", "states": {"x": {}, "y": {}, "h": {"type": "history", "history": "deep"}}},
    "p": {"type": "parallel", "states": {"r1": {}, "r2": {"initial": "q", "states": {"q": {}}}}}
  }}"#;

const KID: &str = r#"{
  "id": "kid", "initial": "k1", "context": {"t": 0},
  "states": {
    "k1": {"after": {"300": "k2"}, "on": {"T": {"actions": {"type": "inc", "params": {"key": "t"}}}}},
    "k2": {"on": {"T": "k1"}}
  }}"#;

type Setup = (Machine<Value>, Arc<Charts<Value>>, Vec<String>);

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let imp = stdlib::implementations().actor("kid");
        let m = load_json(MACHINE, &imp).unwrap();
        let charts = Arc::new(Charts::new().chart("kid", Arc::new(load_json(KID, &imp).unwrap())));
        let (s0, _) = initial_transition(&m).unwrap();
        let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
        let (s2, _) = transition(&m, &s1, Event::new("P")).unwrap();
        let p = Persist::new(&m);
        let mut seeds: Vec<String> = [s0, s1, s2].iter().map(|s| p.to_string(s).unwrap()).collect();
        let (mut tree, _) = Tree::start(&m, charts.clone(), 0).unwrap();
        tree.event(&m, &[], Event::new("GO")).unwrap();
        tree.event(&m, &[], Event::new("K")).unwrap();
        seeds.push(p.tree_to_string(&tree).unwrap());
        (m, charts, seeds)
    })
}

fn check(m: &Machine<Value>, charts: &Arc<Charts<Value>>, text: &str) {
    let p = Persist::new(m).sanitizer(Sanitizer::new().idempotent("never"));
    match p.read(text) {
        Ok(_) => {
            let _ = p.restore(text, 1000);
        }
        Err(e) => {
            assert!(e.path.starts_with('$'), "{e}");
            let _ = e.to_string();
            assert!(p.restore(text, 1000).is_err());
        }
    }
    match p.restore_tree(text, charts.clone(), 1000) {
        Ok(r) => assert!(r.tree.paths().len() <= 1),
        Err(RestoreError::Snapshot(e)) => assert!(e.path.starts_with('$'), "{e}"),
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (m, charts, seeds) = setup();
    if let Ok(text) = std::str::from_utf8(data) {
        check(m, charts, text);
    }
    if data.len() >= 3 {
        let seed = seeds[data[0] as usize % seeds.len()].as_bytes();
        let at = (u16::from_le_bytes([data[1], data[2]]) as usize) % seed.len();
        let mut bytes = seed.to_vec();
        for (i, &b) in data[3..].iter().enumerate() {
            if at + i < bytes.len() {
                bytes[at + i] = b;
            }
        }
        if let Ok(text) = std::str::from_utf8(&bytes) {
            check(m, charts, text);
        }
    }
});
