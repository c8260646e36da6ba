//! Property tests of the buffer core: for any sequence of offers and takes
//! under any policy, every offered element is accounted for exactly once, and
//! delivery preserves offer order.

#![cfg(not(turno_loom))]

use proptest::prelude::*;
use turno::buffer::{Buffer, Decision, Offer, Policy};

#[derive(Debug, Clone)]
enum Op {
    Offer,
    Take,
}

#[derive(Debug, Clone)]
enum StoreOp {
    Offer,
    Force,
    Take,
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        (0usize..6).prop_map(Policy::KeepNewest),
        (0usize..6).prop_map(Policy::KeepOldest),
        (0usize..6).prop_map(Policy::Reject),
        (0usize..6).prop_map(Policy::Suspend),
        Just(Policy::Unbounded),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![3 => Just(Op::Offer), 2 => Just(Op::Take)],
        0..200,
    )
}

proptest! {
    #[test]
    fn every_element_is_delivered_dropped_or_handed_back_once(policy in policy(), ops in ops()) {
        let mut b = Buffer::new(policy);
        let mut next = 0u32;
        let mut delivered = Vec::new();
        let mut dropped = Vec::new();
        let mut handed_back = Vec::new();
        for op in ops {
            match op {
                Op::Offer => {
                    match b.offer(next) {
                        Offer::Enqueued { remaining } => {
                            prop_assert_eq!(remaining, policy.capacity().map(|c| c - b.len()));
                        }
                        Offer::Evicted(e) => {
                            prop_assert!(matches!(policy, Policy::KeepNewest(_)));
                            dropped.push(e)
                        }
                        Offer::Dropped(e) => {
                            prop_assert!(!matches!(policy, Policy::KeepNewest(n) if n > 0));
                            dropped.push(e)
                        }
                        Offer::Rejected(e) => {
                            prop_assert!(matches!(policy, Policy::Reject(_)));
                            handed_back.push(e);
                        }
                        Offer::Full(e) => {
                            prop_assert!(matches!(policy, Policy::Suspend(_)));
                            handed_back.push(e);
                        }
                        Offer::Evicting => prop_assert!(false, "the eager store evicts at the offer"),
                    }
                    next += 1;
                }
                Op::Take => delivered.extend(b.take()),
            }
            if let Some(cap) = policy.capacity() {
                prop_assert!(b.len() <= cap);
            }
        }
        delivered.extend(std::iter::from_fn(|| b.take()));
        // Conservation: delivered + dropped + handed back = offered.
        prop_assert_eq!(delivered.len() + dropped.len() + handed_back.len(), next as usize);
        let mut all: Vec<u32> = delivered.iter().chain(&dropped).chain(&handed_back).copied().collect();
        all.sort_unstable();
        prop_assert_eq!(all, (0..next).collect::<Vec<_>>());
        // Order: delivery is a subsequence of offer order.
        prop_assert!(delivered.windows(2).all(|w| w[0] < w[1]));
        // The counters agree with what we saw.
        let st = b.stats();
        prop_assert_eq!(st.offered, next as u64);
        prop_assert_eq!(st.taken, delivered.len() as u64);
        prop_assert_eq!(st.dropped, dropped.len() as u64);
        prop_assert_eq!(st.rejected + st.refused_full, handed_back.len() as u64);
    }

    #[test]
    fn keep_newest_keeps_exactly_the_newest(cap in 1usize..8, n in 0u32..50) {
        let mut b = Buffer::new(Policy::KeepNewest(cap));
        for i in 0..n {
            let _ = b.offer(i);
        }
        let kept: Vec<u32> = std::iter::from_fn(|| b.take()).collect();
        let start = n.saturating_sub(cap as u32);
        prop_assert_eq!(kept, (start..n).collect::<Vec<_>>());
    }

    /// The mailbox rule (keep-newest evicted by the consumer before each
    /// take) removes and delivers exactly what the eager store does, in the
    /// same order, forced elements included; it only holds the owed ones
    /// longer.
    #[test]
    fn evicting_on_take_keeps_what_evicting_on_offer_keeps(
        policy in policy(),
        ops in prop::collection::vec(
            prop_oneof![4 => Just(StoreOp::Offer), 1 => Just(StoreOp::Force), 2 => Just(StoreOp::Take)],
            0..200,
        ),
    ) {
        let mut eager = Buffer::new(policy);
        let mut lazy = Buffer::evicting_on_take(policy);
        let (mut eager_gone, mut lazy_gone) = (Vec::new(), Vec::new());
        for (next, op) in (0u32..).zip(ops) {
            match op {
                StoreOp::Offer => match (eager.offer(next), lazy.offer(next)) {
                    (Offer::Evicted(e), Offer::Evicting) => eager_gone.push(e),
                    (a, b) => prop_assert_eq!(a, b),
                },
                StoreOp::Force => prop_assert_eq!(eager.force(next), lazy.force(next)),
                StoreOp::Take => {
                    lazy_gone.extend(lazy.evict_owed());
                    prop_assert_eq!(&lazy_gone, &eager_gone);
                    prop_assert_eq!(lazy.take(), eager.take());
                    prop_assert_eq!(lazy.len(), eager.len());
                }
            }
        }
        lazy_gone.extend(lazy.evict_owed());
        prop_assert_eq!(&lazy_gone, &eager_gone);
        prop_assert_eq!(lazy.drain().collect::<Vec<_>>(), eager.drain().collect::<Vec<_>>());
        let (l, e) = (lazy.stats(), eager.stats());
        prop_assert_eq!((l.offered, l.attempts, l.taken, l.dropped, l.drained), (e.offered, e.attempts, e.taken, e.dropped, e.drained));
    }

    #[test]
    fn keep_oldest_keeps_exactly_the_oldest(cap in 1usize..8, n in 0u32..50) {
        let mut b = Buffer::new(Policy::KeepOldest(cap));
        for i in 0..n {
            let _ = b.offer(i);
        }
        let kept: Vec<u32> = std::iter::from_fn(|| b.take()).collect();
        prop_assert_eq!(kept, (0..n.min(cap as u32)).collect::<Vec<_>>());
    }

    #[test]
    fn the_store_does_what_the_pure_decision_says(
        policy in policy(),
        ops in prop::collection::vec(
            prop_oneof![4 => Just(StoreOp::Offer), 1 => Just(StoreOp::Force), 2 => Just(StoreOp::Take)],
            0..200,
        ),
    ) {
        let mut b = Buffer::new(policy);
        for (next, op) in (0u32..).zip(ops) {
            let len = b.len();
            match op {
                StoreOp::Offer => {
                    let decided = policy.decide(len);
                    prop_assert_eq!(b.decision(), decided);
                    prop_assert_eq!(b.is_full(), decided != Decision::Admit);
                    let offer = b.offer(next);
                    match (decided, offer) {
                        (Decision::Admit, Offer::Enqueued { .. }) => prop_assert_eq!(b.len(), len + 1),
                        (Decision::EvictOldestThenAdmit, Offer::Evicted(_)) => prop_assert_eq!(b.len(), len),
                        (Decision::DropIncoming, Offer::Dropped(e))
                        | (Decision::Reject, Offer::Rejected(e))
                        | (Decision::Suspend, Offer::Full(e)) => {
                            prop_assert_eq!(e, next);
                            prop_assert_eq!(b.len(), len);
                        }
                        (d, o) => prop_assert!(false, "decided {:?} but the store said {:?}", d, o),
                    }
                }
                StoreOp::Force => {
                    prop_assert!(b.force(next).is_queued());
                    prop_assert_eq!(b.len(), len + 1);
                }
                StoreOp::Take => {
                    let _ = b.take();
                }
            }
        }
    }

    #[test]
    fn the_decision_admits_exactly_below_capacity_and_is_monotone(policy in policy(), len in 0usize..20) {
        let d = policy.decide(len);
        match policy.capacity() {
            None => prop_assert_eq!(d, Decision::Admit),
            Some(cap) => {
                prop_assert_eq!(d == Decision::Admit, len < cap);
                // Once full, a longer queue is full the same way (except that
                // keep-newest evicts once there is something to evict).
                let later = policy.decide(len + 1);
                if d != Decision::Admit && d != Decision::DropIncoming {
                    prop_assert_eq!(later, d);
                }
                if d != Decision::Admit {
                    prop_assert_ne!(later, Decision::Admit);
                }
            }
        }
    }
}
