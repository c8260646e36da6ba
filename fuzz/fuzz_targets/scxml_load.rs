//! The SCXML loader on arbitrary text: an error with a position or a
//! document, never a panic. A loaded document is also drawn as Mermaid and,
//! on the null data model, run: started, sent every event name it mentions,
//! and driven 10 virtual seconds (errors are fine, panics and hangs are not).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use turno_scxml::{Event, Processor};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let doc = match turno_scxml::load_str(text, None) {
        Ok(doc) => doc,
        Err(e) => {
            assert!(e.position().is_some(), "{e}");
            let _ = e.to_string();
            return;
        }
    };
    let _ = turno_scxml::mermaid::to_mermaid(&doc);
    let names: Vec<String> = doc
        .transitions
        .iter()
        .flat_map(|t| t.events.iter().cloned())
        .take(16)
        .collect();
    let mut sys = Processor::new();
    // Without the `ecmascript` feature only null-data-model documents start.
    let Ok(root) = sys.start(Arc::new(doc)) else {
        return;
    };
    for name in names {
        sys.send(root, Event::external(name, None));
        if sys.run_until(sys.now_ms()).is_err() {
            return;
        }
    }
    let _ = sys.run_until(10_000.0);
    let _ = sys.atomic_states(root);
});
