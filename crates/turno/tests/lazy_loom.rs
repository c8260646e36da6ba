//! Model-checked first use of a lazily allocated part (loom): the real
//! `LazyBox` (`src/lazy.rs`) that holds the lane's rare counters and the
//! mailbox's muted senders, under every interleaving loom explores.
//!
//! ```text
//! RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p turno --release --test lazy_loom
//! ```
//!
//! Properties:
//! - **one part**: two first uses racing allocate one part between them,
//!   and neither's write is lost;
//! - **a seal is final**: a first use racing a seal either allocates
//!   before it (and the seal hands the part over) or is refused;
//! - and the check of the checker: a first use that installs its part
//!   with a plain store instead of the compare-exchange loses a write,
//!   and `the_model_catches_a_first_use_without_its_compare_exchange`
//!   asserts that loom finds it.

#![allow(unexpected_cfgs)]
#![cfg(turno_loom)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use loom::thread;
use turno::lazy_model::ModelLazy;

fn two_first_uses(racy: bool) {
    loom::model(move || {
        let lazy = Arc::new(ModelLazy::new(racy));
        let other = {
            let lazy = lazy.clone();
            thread::spawn(move || assert!(lazy.add_one()))
        };
        assert!(lazy.add_one());
        other.join().unwrap();
        assert_eq!(lazy.total(), Some(2), "both writes are in the one part");
    });
}

#[test]
fn racing_first_uses_share_one_part() {
    two_first_uses(false);
}

#[test]
fn a_first_use_racing_a_seal_allocates_before_it_or_is_refused() {
    loom::model(|| {
        let lazy = Arc::new(ModelLazy::new(false));
        let user = {
            let lazy = lazy.clone();
            thread::spawn(move || lazy.add_one())
        };
        let sealed = lazy.seal();
        let added = user.join().unwrap();
        // The seal may find the part before the user's write to it (a
        // count of 0 or 1), but only a part the user allocated.
        match sealed {
            Some(n) => assert!(added && n <= 1, "the part the seal found was the user's"),
            None => assert!(!added, "no part may be allocated after the seal"),
        }
        assert_eq!(lazy.total(), added.then_some(1));
    });
}

#[test]
fn the_model_catches_a_first_use_without_its_compare_exchange() {
    let caught = catch_unwind(AssertUnwindSafe(|| two_first_uses(true)));
    assert!(
        caught.is_err(),
        "loom should find the write lost by a first use that overwrites another's part"
    );
}
