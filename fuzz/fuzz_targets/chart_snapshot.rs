//! The persisted-snapshot reader of turno-chart on arbitrary text, and on
//! valid snapshots with a window of bytes overwritten: a typed error with a
//! JSON path, or a snapshot that restores; never a panic, never a
//! half-restored chart.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use turno_chart::persist::{Persist, Sanitizer};
use turno_chart::{initial_transition, load_json, stdlib, transition, Event, Machine};

const MACHINE: &str = r#"{
  "id": "f", "version": "2", "initial": "a", "context": {"n": 0},
  "states": {
    "a": {"on": {"GO": "b"}, "entry": {"type": "inc", "params": {"key": "n"}}},
    "b": {"invoke": {"id": "job", "src": "never"}, "after": {"500": "c"}, "on": {"P": "p"}},
    "c": {"initial": "x", "states": {"x": {}, "y": {}, "h": {"type": "history", "history": "deep"}}},
    "p": {"type": "parallel", "states": {"r1": {}, "r2": {"initial": "q", "states": {"q": {}}}}}
  }}"#;

fn setup() -> &'static (Machine<Value>, Vec<String>) {
    static S: OnceLock<(Machine<Value>, Vec<String>)> = OnceLock::new();
    S.get_or_init(|| {
        let m = load_json(MACHINE, &stdlib::implementations()).unwrap();
        let (s0, _) = initial_transition(&m).unwrap();
        let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
        let (s2, _) = transition(&m, &s1, Event::new("P")).unwrap();
        let p = Persist::new(&m);
        let seeds = [s0, s1, s2].iter().map(|s| p.to_string(s).unwrap()).collect();
        (m, seeds)
    })
}

fn check(m: &Machine<Value>, text: &str) {
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
}

fuzz_target!(|data: &[u8]| {
    let (m, seeds) = setup();
    if let Ok(text) = std::str::from_utf8(data) {
        check(m, text);
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
            check(m, text);
        }
    }
});
