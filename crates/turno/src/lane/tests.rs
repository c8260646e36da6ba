//! The lock-free lane against the locked reference ([`Buffer`]): the same
//! verdicts for the same operations on one thread (property test), and
//! conservation under real threads (every element offered is delivered,
//! handed back or drained, exactly once).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::buffer::Buffer;

#[derive(Debug, Clone, Copy)]
enum Op {
    Offer,
    /// The message path's push (`Lane::push_admitted`), then the general
    /// one when it hands the element back, as `Mailbox::push_user` does.
    Admit,
    Retry,
    Force,
    Take,
    Close,
}

fn policy() -> impl Strategy<Value = Policy> {
    // Capacities past one block (31 slots) so that admission decisions are
    // taken across block boundaries too.
    prop_oneof![
        (0usize..40).prop_map(Policy::KeepNewest),
        (0usize..4).prop_map(Policy::KeepNewest),
        (0usize..40).prop_map(Policy::KeepOldest),
        (0usize..40).prop_map(Policy::Reject),
        (0usize..40).prop_map(Policy::Suspend),
        (1usize..4).prop_map(Policy::Suspend),
        Just(Policy::Unbounded),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            4 => Just(Op::Offer),
            4 => Just(Op::Admit),
            1 => Just(Op::Retry),
            1 => Just(Op::Force),
            5 => Just(Op::Take),
            1 => Just(Op::Close),
        ],
        0..300,
    )
}

/// The reference: the locked lane as the mailbox used it (a `Buffer` and a
/// closed flag; closing drains the buffer), with keep-newest evictions made
/// on take (`Buffer::evicting_on_take`, the mailbox rule).
struct Reference {
    buf: Buffer<u32>,
    closed: bool,
}

impl Reference {
    fn push(&mut self, v: u32, mode: Mode) -> Result<Offer<u32>, u32> {
        if self.closed {
            return Err(v);
        }
        Ok(match mode {
            Mode::Offer | Mode::Muting => self.buf.offer(v),
            Mode::Retry => self.buf.offer_again(v),
            Mode::Force => self.buf.force(v),
        })
    }
}

fn lane_push(lane: &Lane<u32>, v: u32, mode: Mode) -> Result<Offer<u32>, u32> {
    match lane.push(v, mode)? {
        Pushed::Done(offer, _) => Ok(offer),
        Pushed::WouldSuspend(v) => Ok(Offer::Full(v)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Same operations, same verdicts, same elements out, same counters.
    #[test]
    fn the_lane_gives_the_locked_lanes_verdicts(policy in policy(), ops in ops()) {
        let lane = Lane::new(policy);
        let mut reference = Reference { buf: Buffer::evicting_on_take(policy), closed: false };
        for (v, op) in ops.into_iter().enumerate() {
            let v = v as u32;
            match op {
                Op::Offer | Op::Retry | Op::Force => {
                    let mode = match op {
                        Op::Offer => Mode::Offer,
                        Op::Retry => Mode::Retry,
                        _ => Mode::Force,
                    };
                    prop_assert_eq!(lane_push(&lane, v, mode), reference.push(v, mode), "{:?} of {}", op, v);
                }
                Op::Admit => {
                    let got = match lane.push_admitted(v) {
                        Ok((depth, remaining)) => {
                            // Admitted: the depth is the length after the
                            // push, and the room left is the lane's own
                            // answer (checked against the reference below).
                            prop_assert_eq!(depth, lane.len(), "depth of {}", v);
                            Ok(Offer::Enqueued { remaining })
                        }
                        Err(v) => match lane.push_slow(v, Mode::Offer) {
                            Ok(Pushed::Done(offer, _)) => Ok(offer),
                            Ok(Pushed::WouldSuspend(v)) => Ok(Offer::Full(v)),
                            Err(v) => Err(v),
                        },
                    };
                    prop_assert_eq!(got, reference.push(v, Mode::Offer), "{:?} of {}", op, v);
                }
                Op::Take => {
                    let mut evicted = Vec::new();
                    // SAFETY: this test is the lane's only consumer.
                    let got = unsafe { lane.take(|v| evicted.push(v)) };
                    let (want, want_evicted) = if reference.closed {
                        (None, Vec::new())
                    } else {
                        let gone: Vec<u32> = reference.buf.evict_owed().collect();
                        (reference.buf.take(), gone)
                    };
                    prop_assert_eq!(got.map(|(v, _)| v), want);
                    prop_assert_eq!(evicted, want_evicted);
                    if let Some((_, depth)) = got {
                        prop_assert_eq!(depth, reference.buf.len());
                    }
                }
                Op::Close => {
                    let (mut drained, mut evicted) = (Vec::new(), Vec::new());
                    // SAFETY: as above.
                    let left = unsafe { lane.close(|v| drained.push(v), |v| evicted.push(v)) };
                    let (want, want_evicted): (Vec<u32>, Vec<u32>) = if reference.closed {
                        (Vec::new(), Vec::new())
                    } else {
                        reference.closed = true;
                        let gone = reference.buf.evict_owed().collect();
                        (reference.buf.drain().collect(), gone)
                    };
                    prop_assert_eq!(left, want.len());
                    prop_assert_eq!(drained, want);
                    prop_assert_eq!(evicted, want_evicted);
                }
            }
            let want_len = if reference.closed { 0 } else { reference.buf.len() };
            prop_assert_eq!(lane.len(), want_len);
            prop_assert_eq!(lane.stats(), reference.buf.stats());
            // SAFETY: as above.
            prop_assert_eq!(unsafe { lane.ready() }, want_len > 0);
        }
    }
}

/// An element that counts its drops, to show the lane frees each one once.
struct Counted {
    id: u64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// `producers` threads offer `each` elements while this thread takes them;
/// with `close_after`, it closes the lane after that many takes while the
/// producers go on. Every element must end exactly once: taken, evicted
/// (keep-newest), drained by the close, handed back by a verdict, or
/// (admitted before the close but still being written) dropped with the
/// lane, and counted in the close.
fn race(policy: Policy, producers: u64, each: u64, close_after: Option<usize>) {
    let lane: Arc<Lane<Counted>> = Arc::new(Lane::new(policy));
    let drops = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..producers)
        .map(|p| {
            let (lane, drops) = (lane.clone(), drops.clone());
            std::thread::spawn(move || {
                let mut back = Vec::new();
                let mut closed = 0u64;
                let mut evicting = 0u64;
                for i in 0..each {
                    let id = p * each + i;
                    let mut msg = Counted {
                        id,
                        drops: drops.clone(),
                    };
                    let mut mode = Mode::Offer;
                    loop {
                        match lane.push(msg, mode) {
                            Ok(Pushed::Done(Offer::Enqueued { .. }, _)) => break,
                            Ok(Pushed::Done(Offer::Evicting, _)) => {
                                evicting += 1;
                                break;
                            }
                            Ok(Pushed::Done(Offer::Full(m), _)) => {
                                // A waiting sender retries; one in three
                                // gives up after its first retry.
                                if mode == Mode::Retry && i % 3 == 1 {
                                    back.push(m.id);
                                    break;
                                }
                                msg = m;
                                mode = Mode::Retry;
                                std::thread::yield_now();
                            }
                            Ok(Pushed::Done(Offer::Dropped(m) | Offer::Rejected(m), _)) => {
                                back.push(m.id);
                                break;
                            }
                            Err(m) => {
                                back.push(m.id);
                                // Offered already if this was a retry.
                                closed += u64::from(mode == Mode::Offer);
                                break;
                            }
                            Ok(Pushed::Done(Offer::Evicted(_), _)) => {
                                unreachable!("the lane evicts on take")
                            }
                            Ok(Pushed::WouldSuspend(_)) => unreachable!("no muting sender here"),
                        }
                    }
                }
                (back, closed, evicting)
            })
        })
        .collect();
    let mut taken = Vec::new();
    let mut drained = Vec::new();
    let mut evicted = Vec::new();
    let mut left = 0;
    loop {
        // SAFETY: this thread is the lane's only consumer.
        match unsafe { lane.take(|m| evicted.push(m.id)) } {
            Some((m, _)) => {
                taken.push(m.id);
                if close_after == Some(taken.len()) {
                    // SAFETY: as above.
                    left = unsafe { lane.close(|m| drained.push(m.id), |m| evicted.push(m.id)) };
                    break;
                }
            }
            None if handles.iter().all(|h| h.is_finished()) => break,
            None => std::thread::yield_now(),
        }
    }
    let mut back = Vec::new();
    let mut closed = 0;
    let mut evicting = 0;
    for h in handles {
        let (b, c, e) = h.join().unwrap();
        back.extend(b);
        closed += c;
        evicting += e;
    }
    // The producers are joined: whatever they wrote is visible now.
    // SAFETY: as above.
    while let Some((m, _)) = unsafe { lane.take(|m| evicted.push(m.id)) } {
        taken.push(m.id);
    }
    let stats = lane.stats();
    drop(Arc::try_unwrap(lane).ok().expect("the producers are done"));
    let mut seen = HashSet::new();
    for id in taken.iter().chain(&drained).chain(&back).chain(&evicted) {
        assert!(seen.insert(*id), "{id} counted twice under {policy}");
    }
    let total = (producers * each) as usize;
    let in_flight = total - seen.len();
    assert_eq!(in_flight, left - drained.len(), "under {policy}");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        total,
        "each element dropped once under {policy}"
    );
    // A send to a closed lane is no offer (as for the locked lane).
    assert_eq!(stats.offered, total as u64 - closed, "under {policy}");
    assert_eq!(stats.taken, taken.len() as u64, "under {policy}");
    assert_eq!(stats.drained, left as u64, "under {policy}");
    if close_after.is_none() {
        assert_eq!(
            taken.len() + back.len() + evicted.len(),
            total,
            "under {policy}"
        );
    }
    if let Policy::KeepNewest(cap) = policy {
        // At most one eviction per `Evicting` verdict, every one counted;
        // and once the producers are done the lane is trimmed to at most
        // the capacity before each take, so the last `cap` survive.
        assert!(evicted.len() as u64 <= evicting, "under {policy}");
        assert_eq!(stats.dropped, evicted.len() as u64, "under {policy}");
        if close_after.is_none() {
            assert!(taken.len() >= cap.min(total), "under {policy}");
        }
    } else if let Some(cap) = policy.capacity() {
        assert!(stats.max_depth <= cap, "{} past {cap}", stats.max_depth);
    }
}

#[test]
fn many_producers_lose_nothing_under_every_lane_policy() {
    for policy in [
        Policy::Unbounded,
        Policy::Suspend(8),
        Policy::Suspend(1),
        Policy::Reject(5),
        Policy::KeepOldest(40),
        Policy::KeepNewest(4),
        Policy::KeepNewest(1),
    ] {
        race(policy, 4, 3_000, None);
    }
}

#[test]
fn a_close_racing_with_producers_counts_each_element_once() {
    for policy in [
        Policy::Unbounded,
        Policy::Suspend(64),
        Policy::Reject(16),
        Policy::KeepNewest(8),
    ] {
        race(policy, 3, 2_000, Some(500));
    }
}

/// Blocks in the lane's spare stack, counted by walking it (one thread).
fn spares<P: Place<u32>>(lane: &Lane<u32, P>) -> usize {
    let mut n = 0;
    let mut b = lane.spare.load(Ordering::Acquire);
    while !b.is_null() {
        n += 1;
        // SAFETY: one thread: the blocks in the stack are live and linked.
        b = unsafe { &*b }.next.load(Ordering::Acquire);
    }
    n
}

/// Fills `lane` with `n` elements and takes them all.
fn fill_and_drain<P: Place<u32>>(lane: &Lane<u32, P>, n: u32) {
    for v in 0..n {
        assert!(matches!(
            lane.push(v, Mode::Offer),
            Ok(Pushed::Done(Offer::Enqueued { .. }, _))
        ));
    }
    for v in 0..n {
        // SAFETY: one thread is the only consumer.
        assert_eq!(unsafe { lane.take_one(drop) }, Some(v));
    }
}

#[test]
fn a_bounded_lane_keeps_the_blocks_its_capacity_fills() {
    // 100 elements fill three blocks of 31 and 7 slots of a fourth; the
    // consumer leaves the three (it is still in the fourth).
    let lane: Lane<u32> = Lane::new(Policy::Suspend(100));
    fill_and_drain(&lane, 100);
    assert_eq!(spares(&lane), 3);
    // Filled again, the lane installs its three next blocks from the stack
    // and the consumer leaves three more: a stack that kept only one spare
    // would end with one.
    fill_and_drain(&lane, 100);
    assert_eq!(spares(&lane), 3);
    // Never more than its capacity fills, plus one.
    let tiny: Lane<u32> = Lane::new(Policy::Suspend(1));
    for _ in 0..100 {
        fill_and_drain(&tiny, 1);
    }
    assert!(spares(&tiny) <= 2, "{}", spares(&tiny));
}

#[test]
fn an_unbounded_lane_keeps_one_spare_block() {
    let lane: Lane<u32> = Lane::new(Policy::Unbounded);
    fill_and_drain(&lane, 500);
    assert_eq!(spares(&lane), 1);
}

#[test]
fn a_stream_lane_keeps_its_consumer_words_off_the_producers_lines() {
    let lane: Lane<u32, OwnLines<u32>> = Lane::new(Policy::Suspend(8));
    let line = |p: *const u8| p as usize / 128;
    let consumer = [
        line((&lane.consumer.taken as *const AtomicUsize).cast()),
        line((&lane.consumer.head as *const UnsafeCell<Head<u32>>).cast()),
        line((&lane.consumer.owed as *const AtomicUsize).cast()),
    ];
    let producers = [
        line((&lane.tail as *const AtomicUsize).cast()),
        line((&lane.tail_block as *const AtomicPtr<Block<u32>>).cast()),
        line((&lane.counts.max_depth as *const AtomicUsize).cast()),
    ];
    for p in producers {
        assert!(!consumer.contains(&p), "{consumer:?} {producers:?}");
    }
}
