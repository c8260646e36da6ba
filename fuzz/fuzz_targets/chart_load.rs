//! The XState JSON loader on arbitrary text: a machine or a typed error
//! naming a JSON path, never a panic. A loaded machine is also drawn as
//! Mermaid and run for a few events (a runaway loop is an error too).
#![no_main]

use libfuzzer_sys::fuzz_target;
use turno_chart::{initial_transition, load_json, mermaid, stdlib, transition, Event, LoadError};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match load_json::<serde_json::Value>(text, &stdlib::implementations()) {
        Ok(m) => {
            let m = m.with_max_microsteps(100);
            let _ = mermaid::to_mermaid(&m);
            if let Ok((mut s, _)) = initial_transition(&m) {
                for name in ["A", "B", "xstate.init", "*"] {
                    match transition(&m, &s, Event::new(name)) {
                        Ok((next, _)) => s = next,
                        Err(e) => {
                            let _ = e.to_string();
                            break;
                        }
                    }
                    let _ = serde_json::to_string(&s.value(&m));
                }
            }
        }
        Err(LoadError::Invalid(e)) => assert!(e.path.starts_with('$'), "{e}"),
        Err(LoadError::Syntax(s)) => assert!(!s.is_empty()),
    }
});
