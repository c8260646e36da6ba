//! The trace reader on any bytes: never a panic; every error names a line.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use turno_trace::{Index, Reader};

fuzz_target!(|data: &[u8]| {
    if let Ok(reader) = Reader::new(data) {
        for event in reader {
            if let Err(e) = event {
                assert!(e.line >= 2);
                break;
            }
        }
    }
    if let Ok(index) = Index::build_with(Cursor::new(data), 3) {
        let n = index.len();
        for k in [0, n / 2, n] {
            let world = index.world_at(Cursor::new(data), k).expect("a validated prefix replays");
            let _ = world.wait_for();
            let (before, next) = index
                .world_and_next(Cursor::new(data), k)
                .expect("a validated prefix replays");
            assert_eq!(before, world);
            assert_eq!(next.is_some(), k < n);
        }
    }
});
