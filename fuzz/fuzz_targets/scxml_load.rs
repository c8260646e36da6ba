//! The SCXML loader on arbitrary text: an error with a position or a
//! document, never a panic. A loaded document is also drawn as Mermaid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match turno_scxml::load_str(text, None) {
            Ok(doc) => {
                let _ = turno_scxml::mermaid::to_mermaid(&doc);
            }
            Err(e) => {
                assert!(e.position().is_some(), "{e}");
                let _ = e.to_string();
            }
        }
    }
});
