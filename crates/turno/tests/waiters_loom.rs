//! Model-checked handshake between an outside sender waiting for room in
//! a full suspend mailbox and the take that makes room (loom): the real
//! `Waiters` (`src/waiters.rs`, its part allocated by the first sender to
//! register), with the lane's room as one atomic, under every interleaving
//! loom explores.
//!
//! ```text
//! RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p turno --release --test waiters_loom
//! ```
//!
//! Properties:
//! - **no lost wake-up**: a sender refused twice (before and after it
//!   registered) is always notified by the take that made room after its
//!   first refusal, whether or not that take found the part allocated;
//! - and the check of the checker: a sender that registers without its
//!   fence (`Inject::RegisterWithoutFence`) can be missed, and
//!   `the_model_catches_a_registration_without_its_fence` asserts that loom
//!   finds it.

#![allow(unexpected_cfgs)]
#![cfg(turno_loom)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use turno::waiters_model::{Inject, ModelWaiters};

/// One sender meets a full lane (`room` 0) and waits; one taker makes room
/// (`room` 1, a release store as the lane's `taken` is) and looks, as
/// `Mailbox::after_take` does. With `second` a second sender registers
/// too, so that the part may be installed by either.
fn handshake(inject: Inject, second: bool) {
    loom::model(move || {
        let waiters = Arc::new(ModelWaiters::new(inject));
        let room = Arc::new(AtomicUsize::new(0));
        let taker = {
            let (waiters, room) = (waiters.clone(), room.clone());
            thread::spawn(move || {
                room.store(1, Ordering::Release);
                waiters.notify_registered();
            })
        };
        let other = second.then(|| {
            let waiters = waiters.clone();
            thread::spawn(move || drop(waiters.register()))
        });
        // The sender: refused (the lane looked full), registers, tries
        // again (the lane's claim reads `taken` with SeqCst).
        let registered = waiters.register();
        let waits = room.load(Ordering::SeqCst) == 0;
        taker.join().unwrap();
        if let Some(t) = other {
            t.join().unwrap();
        }
        if waits {
            assert!(
                waiters.notified(),
                "a sender waits, and the take that made room did not wake it"
            );
        }
        drop(registered);
    });
}

#[test]
fn a_waiting_sender_is_woken_by_the_take_that_made_room() {
    handshake(Inject::None, false);
}

#[test]
fn a_waiting_sender_is_woken_whoever_allocated_the_part() {
    handshake(Inject::None, true);
}

#[test]
fn the_model_catches_a_registration_without_its_fence() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        handshake(Inject::RegisterWithoutFence, false)
    }));
    assert!(
        caught.is_err(),
        "loom found no lost wake-up in a sender registering without its fence"
    );
}
