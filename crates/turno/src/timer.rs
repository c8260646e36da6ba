//! Timers: a message to oneself after a delay, cancellable until handled.
//!
//! A timer's message waits in the actor (not in the mailbox) until the
//! deadline; then a fire signal enters the system lane, which no overflow
//! policy drops. [`Context::cancel_timer`](crate::Context::cancel_timer)
//! guarantees the message is not handled afterwards, even if the fire signal
//! is already queued.

pub use crate::ids::TimerId;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::ids::{ActorId, RequestId};
use crate::time::Instant;

/// What a timer entry in the scheduler's heap stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    User(TimerId),
    Ask(RequestId),
    /// The end of a simulated busy period.
    WakeUp,
}

/// One pending timer: deliver `key` to `actor` at `deadline`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TimerEntry {
    pub(crate) deadline: Instant,
    /// Set order: timers with the same deadline fire in the order they
    /// were set.
    seq: u64,
    pub(crate) actor: ActorId,
    pub(crate) key: TimerKey,
}

/// The timer heap every scheduler keeps (each behind its own lock):
/// earliest deadline first, ties in set order.
#[derive(Debug, Default)]
pub(crate) struct TimerHeap {
    heap: BinaryHeap<Reverse<TimerEntry>>,
    seq: u64,
}

impl TimerHeap {
    /// Adds a timer; true when it is now the earliest (a sleeping timer
    /// thread must wake to wait for it instead).
    pub(crate) fn push(&mut self, actor: ActorId, key: TimerKey, deadline: Instant) -> bool {
        self.seq += 1;
        let earliest = self.next_deadline().is_none_or(|d| deadline < d);
        self.heap.push(Reverse(TimerEntry {
            deadline,
            seq: self.seq,
            actor,
            key,
        }));
        earliest
    }

    /// The earliest deadline, if any timer is pending.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(t)| t.deadline)
    }

    /// Takes the earliest timer if its deadline is `at` or earlier.
    pub(crate) fn pop_due(&mut self, at: Instant) -> Option<TimerEntry> {
        match self.heap.peek() {
            Some(Reverse(t)) if t.deadline <= at => self.heap.pop().map(|Reverse(t)| t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn earliest_first_and_ties_in_set_order() {
        let mut h = TimerHeap::default();
        assert!(h.push(ActorId(1), TimerKey::User(TimerId(1)), at(20)));
        assert!(!h.push(ActorId(2), TimerKey::User(TimerId(2)), at(30)));
        assert!(h.push(ActorId(3), TimerKey::User(TimerId(3)), at(10)));
        // Same deadline as the earliest: not earlier, so no wake-up needed.
        assert!(!h.push(ActorId(4), TimerKey::WakeUp, at(10)));
        assert_eq!(h.next_deadline(), Some(at(10)));
        assert_eq!(h.pop_due(at(9)), None);
        let order: Vec<ActorId> = std::iter::from_fn(|| h.pop_due(at(25)))
            .map(|t| t.actor)
            .collect();
        assert_eq!(order, [ActorId(3), ActorId(4), ActorId(1)]);
        assert_eq!(h.next_deadline(), Some(at(30)));
        assert_eq!(h.pop_due(at(30)).map(|t| t.actor), Some(ActorId(2)));
        assert_eq!(h.next_deadline(), None);
    }
}
