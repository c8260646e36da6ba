//! Model-checked lock-free user lane (loom): the real lane (`src/lane.rs`,
//! with two-slot blocks under loom so that a few elements cross block
//! boundaries and recycle blocks), under every interleaving loom explores.
//!
//! ```text
//! RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p turno --release --test lane_loom
//! ```
//!
//! Properties:
//! - **nothing lost, nothing twice, FIFO per producer**: two producers and
//!   a consumer racing; the consumer reads only published slots (loom checks
//!   every slot access for data races);
//! - **admission never passes the capacity**: `Reject(1)` with two racing
//!   producers admits exactly what the consumer can take, refuses the rest;
//! - **a close racing with a push** counts the element once: handed back as
//!   closed, or counted by the close;
//! - **a completed push is visible to the consumer**: a push that returned
//!   `Enqueued` is found by the consumer's next take, even when it lands in
//!   the first block while another producer is still installing it.
//!
//! - **blocks are reused, never while in use**: a bounded lane keeps the
//!   blocks its consumer leaves in a stack of spares, and the producer
//!   installing the next block takes one from it, racing the consumer's
//!   next push to it.
//!
//! And the check of the checker: the same lane with its publishing store
//! made relaxed (`Inject::RelaxedPublish`, a fault the model must catch)
//! fails the first model; `the_model_catches_a_relaxed_publication` asserts
//! that it does. And the first block published to producers before the
//! consumer (`Inject::FirstPublishedLate`)
//! fails the visibility model (`the_model_catches_a_first_block_published_late`).
//! And the spare stack with relaxed exchanges (`Inject::SpareRelaxed`): the
//! installer may write a reused block's slot before the consumer's read of
//! it, in the block's last lap, happens before (`the_model_catches_a_relaxed_spare_stack`).

#![allow(unexpected_cfgs)]
#![cfg(turno_loom)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use loom::thread;
use turno::lane_model::{Inject, ModelLane, ModelPush};
use turno::Policy;

fn bounded(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

/// Two producers push three elements while a consumer takes what it can
/// (a bounded number of looks, no spinning); then the rest is drained.
fn two_producers_one_consumer(inject: Inject) {
    bounded(2, move || {
        let lane = Arc::new(ModelLane::new(Policy::Unbounded, inject));
        // Three elements in two-slot blocks: the second claim installs a
        // block, the consumer crosses into it and recycles the first.
        let producers: Vec<_> = [(0u32, 2), (10, 1)]
            .into_iter()
            .map(|(base, n)| {
                let lane = lane.clone();
                thread::spawn(move || {
                    for v in base..base + n {
                        assert_eq!(lane.push(v), ModelPush::Enqueued);
                    }
                })
            })
            .collect();
        let mut got = Vec::new();
        for _ in 0..2 {
            got.extend(lane.take());
        }
        for p in producers {
            p.join().unwrap();
        }
        got.extend(std::iter::from_fn(|| lane.take()));
        let mine = |base: u32| {
            got.iter()
                .copied()
                .filter(|v| v / 10 == base / 10)
                .collect::<Vec<_>>()
        };
        assert_eq!(mine(0), vec![0, 1], "{got:?}");
        assert_eq!(mine(10), vec![10], "{got:?}");
        assert!(lane.is_empty());
        assert_eq!(lane.stats().taken, 3);
    });
}

#[test]
fn racing_producers_lose_nothing_and_keep_their_order() {
    two_producers_one_consumer(Inject::None);
}

#[test]
fn the_model_catches_a_relaxed_publication() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        two_producers_one_consumer(Inject::RelaxedPublish)
    }));
    assert!(
        caught.is_err(),
        "loom accepted a lane whose producers publish with a relaxed store"
    );
}

/// A push that returned `Enqueued` is visible to the consumer's next look:
/// the mailbox wakes the consumer after a push completes and relies on the
/// woken consumer finding the element (a push that is refused wakes no
/// one). Two producers race to the first push of a capacity-1 lane: the
/// one that loses the install may win the claim, and the installer is then
/// refused. Here the winner's own thread is the consumer.
fn a_completed_push_is_seen(inject: Inject) {
    bounded(3, move || {
        let lane = Arc::new(ModelLane::new(Policy::Reject(1), inject));
        let other = {
            let lane = lane.clone();
            thread::spawn(move || matches!(lane.push(1u32), ModelPush::Enqueued))
        };
        if lane.push(2) == ModelPush::Enqueued {
            assert_eq!(lane.take(), Some(2), "an admitted element was not seen");
        }
        let other_in = other.join().unwrap();
        let rest: Vec<_> = std::iter::from_fn(|| lane.take()).collect();
        assert!(rest.len() <= usize::from(other_in));
    });
}

#[test]
fn a_completed_push_is_visible_to_the_consumer() {
    a_completed_push_is_seen(Inject::None);
}

#[test]
fn the_model_catches_a_first_block_published_late() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        a_completed_push_is_seen(Inject::FirstPublishedLate)
    }));
    assert!(
        caught.is_err(),
        "the model must find the consumer missing an element in a block published to producers first"
    );
}

#[test]
fn admission_never_passes_the_capacity() {
    bounded(3, || {
        let lane = Arc::new(ModelLane::new(Policy::Reject(1), Inject::None));
        let producers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|v| {
                let lane = lane.clone();
                thread::spawn(move || matches!(lane.push(v), ModelPush::Enqueued))
            })
            .collect();
        let early = lane.take();
        assert!(lane.len() <= 1);
        let admitted = producers
            .into_iter()
            .map(|p| p.join().unwrap())
            .filter(|ok| *ok)
            .count();
        let rest: Vec<_> = std::iter::from_fn(|| lane.take()).collect();
        let delivered = usize::from(early.is_some()) + rest.len();
        assert_eq!(delivered, admitted);
        // Both admitted only if the consumer took the first before the
        // second was decided.
        assert!(admitted == 1 || early.is_some());
        let s = lane.stats();
        assert_eq!((s.offered, s.rejected as usize), (2, 2 - admitted));
    });
}

#[test]
fn a_close_racing_with_a_push_counts_the_element_once() {
    bounded(3, || {
        let lane = Arc::new(ModelLane::new(Policy::Suspend(4), Inject::None));
        let producer = {
            let lane = lane.clone();
            thread::spawn(move || lane.push(7u32))
        };
        let mut drained = Vec::new();
        let left = lane.close(|v| drained.push(v));
        let pushed = producer.join().unwrap();
        match pushed {
            ModelPush::Closed(v) => {
                assert_eq!(v, 7);
                assert_eq!(left, 0);
            }
            // Admitted before the close: counted by it (drained, or dropped
            // with the lane if still being written).
            ModelPush::Enqueued => assert_eq!(left, 1),
            ModelPush::Refused(_) => panic!("room for four"),
        }
        assert!(drained.len() <= left);
        assert_eq!(lane.take(), None);
        assert_eq!(lane.stats().drained, left as u64);
    });
}

/// One producer sends five elements through a `Suspend(2)` lane (two-slot
/// blocks under loom: its spare stack holds two) while the consumer takes
/// them: the consumer leaves the first block while the producer fills the
/// second, and the producer's third install takes the left block from the
/// stack. Both wait by yielding (the lane's waiting parties are the
/// stream's and the mailbox's, not the lane's).
fn blocks_are_reused(inject: Inject) {
    bounded(2, move || {
        let lane = Arc::new(ModelLane::new(Policy::Suspend(2), inject));
        let producer = {
            let lane = lane.clone();
            thread::spawn(move || {
                for mut v in 0u32..5 {
                    loop {
                        match lane.push(v) {
                            ModelPush::Enqueued => break,
                            ModelPush::Refused(back) => v = back,
                            ModelPush::Closed(_) => panic!("never closed"),
                        }
                        thread::yield_now();
                    }
                }
            })
        };
        let mut got = Vec::new();
        while got.len() < 5 {
            match lane.take() {
                Some(v) => got.push(v),
                None => thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert_eq!(got, [0, 1, 2, 3, 4]);
        assert!(lane.is_empty());
    });
}

#[test]
fn blocks_left_by_the_consumer_are_reused_safely() {
    blocks_are_reused(Inject::None);
}

#[test]
fn the_model_catches_a_relaxed_spare_stack() {
    let caught = catch_unwind(AssertUnwindSafe(|| blocks_are_reused(Inject::SpareRelaxed)));
    assert!(
        caught.is_err(),
        "loom accepted a spare stack whose exchanges are relaxed"
    );
}
