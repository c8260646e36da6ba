//! The buffer core: one implementation of the overflow policies, shared by
//! mailboxes and streams.
//!
//! A [`Buffer`] is a FIFO queue with a [`Policy`] that decides what happens
//! when an element is offered to a full buffer. Every offer returns an
//! [`Offer`] verdict that says exactly what happened to which element, so a
//! producer can act on it and nothing is lost without a trace.
//!
//! | policy | when full | verdict |
//! |---|---|---|
//! | [`Policy::KeepNewest`] | the *oldest* queued element is evicted, the new one queued | [`Offer::Evicted`] with the evicted element ([`Offer::Evicting`] where the consumer evicts, see below) |
//! | [`Policy::KeepOldest`] | the *incoming* element is dropped | [`Offer::Dropped`] with the incoming element |
//! | [`Policy::Reject`] | the incoming element is handed back | [`Offer::Rejected`] |
//! | [`Policy::Suspend`] | the producer must wait (or, for an actor, is muted) | [`Offer::Full`] |
//! | [`Policy::Unbounded`] | never full: memory grows without limit | always [`Offer::Enqueued`] |
//!
//! The policy is split from the storage: [`Policy::decide`] is a pure
//! function of the queue's length and its policy that returns a
//! [`Decision`] (admit, evict the oldest then admit, drop the incoming
//! element, reject it, or suspend the producer), and [`Buffer`] is the
//! store that applies it. A queue kept elsewhere (a lock-free lane, say)
//! can reuse the same decision without this store.
//!
//! The buffer is single-threaded on purpose: streams wrap it in their own
//! lock and add their own wake-up logic, so the policy logic is written (and
//! tested) once. Mailboxes keep their messages in a lock-free lane that
//! applies the same decision, tested against this store.
//!
//! **Where keep-newest evicts.** [`Buffer::new`] evicts at the offer and
//! hands the evicted element to the producer ([`Offer::Evicted`], Swift
//! `AsyncStream`'s `.dropped(oldest)`: streams). [`Buffer::evicting_on_take`]
//! defers the eviction to the consumer, the rule of mailboxes, whose
//! producers never remove anything: a full offer is queued and answered
//! [`Offer::Evicting`], and the consumer's next [`Buffer::evict_owed`] (before
//! each take, and before a drain) removes, oldest first, one queued element
//! per such offer, as the eager store would have (never below the capacity:
//! elements forced past it are not evicted for). Both stores take, drop and
//! keep the same elements in the same order; the deferred one holds the
//! owed elements until the consumer comes.
//!
//! ```
//! use turno::buffer::{Buffer, Offer, Policy};
//!
//! let mut b = Buffer::new(Policy::KeepNewest(2));
//! assert!(matches!(b.offer(1), Offer::Enqueued { remaining: Some(1) }));
//! assert!(matches!(b.offer(2), Offer::Enqueued { remaining: Some(0) }));
//! // Full: the oldest element (1) is evicted to make room for 3.
//! assert!(matches!(b.offer(3), Offer::Evicted(1)));
//! assert_eq!(b.take(), Some(2));
//! assert_eq!(b.take(), Some(3));
//! ```

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

/// What a bounded queue does when it is full.
///
/// The capacity is the number of elements the queue holds before the policy
/// applies. Two things go past it in a mailbox, by design: **replies** to
/// requests the actor made itself ([`Context::ask`](crate::Context::ask))
/// are always queued (the asker bounds them, one per request; refusing one
/// would only turn it into a timeout), so a `KeepOldest(1)` mailbox can hold
/// a message and a reply; and an **actor sender** meeting a full `Suspend`
/// mailbox has its message queued and is muted (the overshoot, bounded by
/// one turn's sends per muted sender). Use [`Policy::validate`] to check a
/// policy before building anything from it; [`Buffer::new`] accepts any policy, including capacity 0
/// (a buffer that holds nothing, as Swift's `AsyncStream` allows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "policy", content = "capacity")]
pub enum Policy {
    /// A sliding window: when full, the oldest queued element is evicted and
    /// the incoming one is queued. Capacity 1 keeps the last known value.
    /// In a mailbox the receiver makes the eviction, before its next take
    /// ([`Verdict::Evicting`](crate::Verdict::Evicting)), so the mailbox
    /// holds up to its capacity plus what arrives during one turn; a stream
    /// evicts at the push and hands the evicted element to the producer.
    KeepNewest(usize),
    /// When full, the incoming element is dropped; the queued ones are kept.
    KeepOldest(usize),
    /// When full, the incoming element is handed back to the producer.
    Reject(usize),
    /// When full, the producer waits: async senders await space, blocking
    /// senders block, and actor senders are muted (not scheduled) until the
    /// queue drains below its low watermark (half the capacity).
    Suspend(usize),
    /// Never full. This is the hazard that bounded policies exist to avoid:
    /// under sustained overload memory and queueing delay grow without limit.
    Unbounded,
}

impl Policy {
    /// The capacity, or `None` for [`Policy::Unbounded`].
    pub fn capacity(&self) -> Option<usize> {
        match *self {
            Policy::KeepNewest(n)
            | Policy::KeepOldest(n)
            | Policy::Reject(n)
            | Policy::Suspend(n) => Some(n),
            Policy::Unbounded => None,
        }
    }

    /// A short stable name, used in metrics labels, traces and tables.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::KeepNewest(_) => "keep_newest",
            Policy::KeepOldest(_) => "keep_oldest",
            Policy::Reject(_) => "reject",
            Policy::Suspend(_) => "suspend",
            Policy::Unbounded => "unbounded",
        }
    }

    /// The depth below which a suspended producer may go on: half the
    /// capacity, rounded down, and at least 1 (`Suspend(1)` releases its
    /// producers once it is empty). `None` for policies that never suspend.
    ///
    /// ```
    /// use turno::Policy;
    /// assert_eq!(Policy::Suspend(8).low_watermark(), Some(4));
    /// assert_eq!(Policy::Suspend(1).low_watermark(), Some(1));
    /// assert_eq!(Policy::KeepNewest(8).low_watermark(), None);
    /// ```
    pub fn low_watermark(&self) -> Option<usize> {
        match *self {
            Policy::Suspend(n) => Some((n / 2).max(1)),
            _ => None,
        }
    }

    /// [`Policy::decide`]'s admission alone, for a store's fast path:
    /// `Some(remaining)` when `decide(len)` is [`Decision::Admit`], with the
    /// room left below the capacity once the element is in (`None` for
    /// [`Policy::Unbounded`]: the `remaining` of
    /// [`Offer::Enqueued`]), and `None` for every other decision (the store
    /// then asks `decide`). One test of the variant and one comparison,
    /// where `decide` and the capacity's own match read the policy twice;
    /// it agrees with `decide` (`admit_agrees_with_decide`).
    #[inline(always)]
    pub(crate) const fn admit(&self, len: usize) -> Option<Option<usize>> {
        match *self {
            Policy::KeepNewest(n)
            | Policy::KeepOldest(n)
            | Policy::Reject(n)
            | Policy::Suspend(n) => {
                if len < n {
                    Some(Some(n - (len + 1)))
                } else {
                    None
                }
            }
            Policy::Unbounded => Some(None),
        }
    }

    /// What an offer to a queue holding `len` elements must do under this
    /// policy. Pure: it looks at nothing but its arguments, so any store
    /// can apply it.
    ///
    /// A queue is full when `len` reaches the capacity (a queue pushed past
    /// it by [`Buffer::force`] is full too). Under [`Policy::KeepNewest`] a
    /// full queue with nothing in it (capacity 0) has no oldest element to
    /// evict, so the incoming one is dropped.
    ///
    /// ```
    /// use turno::buffer::{Decision, Policy};
    ///
    /// assert_eq!(Policy::KeepNewest(2).decide(1), Decision::Admit);
    /// assert_eq!(Policy::KeepNewest(2).decide(2), Decision::EvictOldestThenAdmit);
    /// assert_eq!(Policy::KeepNewest(0).decide(0), Decision::DropIncoming);
    /// assert_eq!(Policy::KeepOldest(2).decide(2), Decision::DropIncoming);
    /// assert_eq!(Policy::Reject(2).decide(3), Decision::Reject);
    /// assert_eq!(Policy::Suspend(2).decide(2), Decision::Suspend);
    /// assert_eq!(Policy::Unbounded.decide(usize::MAX), Decision::Admit);
    /// ```
    pub const fn decide(&self, len: usize) -> Decision {
        let cap = match *self {
            Policy::KeepNewest(n)
            | Policy::KeepOldest(n)
            | Policy::Reject(n)
            | Policy::Suspend(n) => n,
            Policy::Unbounded => return Decision::Admit,
        };
        if len < cap {
            return Decision::Admit;
        }
        match *self {
            Policy::KeepNewest(_) if len > 0 => Decision::EvictOldestThenAdmit,
            Policy::KeepNewest(_) | Policy::KeepOldest(_) => Decision::DropIncoming,
            Policy::Reject(_) => Decision::Reject,
            Policy::Suspend(_) => Decision::Suspend,
            Policy::Unbounded => Decision::Admit,
        }
    }

    /// Checks that the policy makes sense for a queue that must hold at
    /// least one element (a mailbox): a bounded capacity of 0 is refused.
    pub fn validate(&self) -> Result<(), PolicyError> {
        match self.capacity() {
            Some(0) => Err(PolicyError::ZeroCapacity { policy: *self }),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.capacity() {
            Some(n) => write!(f, "{}({n})", self.name().replace('_', "-")),
            None => f.write_str("unbounded"),
        }
    }
}

/// What one offer must do, as [`Policy::decide`] works it out. Each
/// decision maps onto one [`Offer`] verdict when a [`Buffer`] applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// There is room: queue the incoming element ([`Offer::Enqueued`]).
    Admit,
    /// Full under [`Policy::KeepNewest`]: push the oldest queued element
    /// out, then queue the incoming one ([`Offer::Evicted`]; or queue it and
    /// leave the eviction to the consumer, [`Offer::Evicting`]).
    EvictOldestThenAdmit,
    /// Full under [`Policy::KeepOldest`] (or keep-newest with nothing to
    /// evict): the incoming element is lost ([`Offer::Dropped`]).
    DropIncoming,
    /// Full under [`Policy::Reject`]: hand the element back
    /// ([`Offer::Rejected`]).
    Reject,
    /// Full under [`Policy::Suspend`]: hand the element back, the producer
    /// waits for room ([`Offer::Full`]).
    Suspend,
}

/// A policy that cannot be used where it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A bounded mailbox needs room for at least one message.
    #[error("{policy} holds nothing: a mailbox capacity must be at least 1 (use a capacity >= 1, or Policy::Unbounded knowing the hazard)")]
    ZeroCapacity {
        /// The refused policy.
        policy: Policy,
    },
}

/// The verdict of one [`Buffer::offer`]: what happened, to which element.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "an offer's verdict says whether the element was queued, dropped or handed back"]
pub enum Offer<T> {
    /// The element was queued. `remaining` is the room left after it
    /// (`None` when unbounded): zero is the early warning.
    Enqueued {
        /// Free slots left after this element, `None` for an unbounded queue.
        remaining: Option<usize>,
    },
    /// The incoming element was queued, and to make room the oldest queued
    /// one was pushed out: here it is ([`Policy::KeepNewest`]).
    Evicted(T),
    /// The incoming element was queued into a full keep-newest store that
    /// evicts on take ([`Buffer::evicting_on_take`]): the consumer evicts
    /// the oldest queued element before its next take.
    Evicting,
    /// The incoming element was lost to the policy: here it is
    /// ([`Policy::KeepOldest`], or any policy with capacity 0).
    Dropped(T),
    /// The queue is full and its policy is [`Policy::Reject`]: the element
    /// is handed back untouched.
    Rejected(T),
    /// The queue is full and its policy is [`Policy::Suspend`]: the element
    /// is handed back and the producer should wait for room.
    Full(T),
}

impl<T> Offer<T> {
    /// True when the offered element itself was queued:
    /// [`Offer::Enqueued`], [`Offer::Evicted`] and [`Offer::Evicting`].
    pub fn is_queued(&self) -> bool {
        matches!(
            self,
            Offer::Enqueued { .. } | Offer::Evicted(_) | Offer::Evicting
        )
    }
}

/// Counters kept by a [`Buffer`].
///
/// `offered` counts elements, once each, however many times a producer
/// retried one that a full [`Policy::Suspend`] buffer handed back
/// ([`Buffer::offer_again`]); `attempts` counts every offer, retries
/// included, and `refused_full` the attempts that met a full buffer. So for
/// elements: `offered = taken + dropped_incoming + rejected + drained +
/// queued + given up`, where an element is given up when its producer stops
/// retrying after a `Full` (a waiting sender always succeeds in the end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferStats {
    /// Elements offered (including forced ones), each counted once.
    pub offered: u64,
    /// Offers made, counting every retry of an element refused as full.
    #[serde(default)]
    pub attempts: u64,
    /// Elements taken out by the consumer.
    pub taken: u64,
    /// Elements lost to the policy (evicted or incoming).
    pub dropped: u64,
    /// Elements handed back by [`Policy::Reject`].
    pub rejected: u64,
    /// Attempts handed back by [`Policy::Suspend`] because the queue was full.
    pub refused_full: u64,
    /// Elements removed without being taken (for example drained to dead
    /// letters when a mailbox closes).
    pub drained: u64,
    /// The greatest depth ever reached.
    pub max_depth: usize,
}

/// A FIFO queue with an overflow [`Policy`]. See the [module docs](self).
///
/// Steady-state operation does not allocate: the ring buffer grows to the
/// depth actually reached and is then reused.
pub struct Buffer<T> {
    items: VecDeque<T>,
    policy: Policy,
    stats: BufferStats,
    /// `Some`: keep-newest evictions are the consumer's (see
    /// [`Buffer::evicting_on_take`]); the number still owed.
    owed: Option<usize>,
}

impl<T> Buffer<T> {
    /// An empty buffer with the given policy. Nothing is allocated until the
    /// first element arrives, so an idle actor's mailbox costs no queue
    /// memory, and a huge nominal capacity costs nothing until it is used.
    pub fn new(policy: Policy) -> Self {
        Buffer {
            items: VecDeque::new(),
            policy,
            stats: BufferStats::default(),
            owed: None,
        }
    }

    /// A buffer whose keep-newest evictions are made by the consumer, the
    /// mailbox rule (see the [module docs](self)): a full offer is queued
    /// and answered [`Offer::Evicting`]; [`Buffer::evict_owed`] removes the
    /// owed elements. Other policies behave as under [`Buffer::new`].
    ///
    /// ```
    /// use turno::buffer::{Buffer, Offer, Policy};
    ///
    /// let mut b = Buffer::evicting_on_take(Policy::KeepNewest(2));
    /// let _ = (b.offer(1), b.offer(2));
    /// assert_eq!(b.offer(3), Offer::Evicting); // queued: 1 is owed
    /// assert_eq!(b.len(), 3);
    /// assert_eq!(b.evict_owed().collect::<Vec<_>>(), vec![1]);
    /// assert_eq!(b.take(), Some(2));
    /// assert_eq!(b.stats().dropped, 1);
    /// ```
    pub fn evicting_on_take(policy: Policy) -> Self {
        Buffer {
            owed: Some(0),
            ..Buffer::new(policy)
        }
    }

    /// Removes the elements owed to keep-newest offers answered
    /// [`Offer::Evicting`], oldest first, counted as dropped: as many as
    /// such offers since the last call, and never below the capacity.
    /// Empty for a buffer built by [`Buffer::new`].
    pub fn evict_owed(&mut self) -> std::collections::vec_deque::Drain<'_, T> {
        let owed = self.owed.unwrap_or(0);
        let over = self
            .policy
            .capacity()
            .map_or(0, |cap| self.items.len().saturating_sub(cap));
        let n = owed.min(over);
        if let Some(owed) = &mut self.owed {
            *owed = 0;
        }
        self.stats.dropped += n as u64;
        self.items.drain(..n)
    }

    /// The policy this buffer applies.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Number of queued elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// True when an offer would trigger the policy (any decision but
    /// [`Decision::Admit`]).
    pub fn is_full(&self) -> bool {
        self.decision() != Decision::Admit
    }

    /// Free slots, `None` when unbounded. Never negative: a buffer pushed
    /// past its capacity by [`Buffer::force`] reports 0.
    pub fn remaining(&self) -> Option<usize> {
        self.policy
            .capacity()
            .map(|cap| cap.saturating_sub(self.items.len()))
    }

    /// The counters so far.
    pub fn stats(&self) -> BufferStats {
        self.stats
    }

    /// Offers an element and applies the policy if the buffer is full.
    pub fn offer(&mut self, item: T) -> Offer<T> {
        self.stats.offered += 1;
        self.attempt(item)
    }

    /// Offers again an element that this buffer handed back as
    /// [`Offer::Full`]: counted as an attempt, not as a new element.
    pub fn offer_again(&mut self, item: T) -> Offer<T> {
        self.attempt(item)
    }

    /// What the next offer would do, given what is queued now.
    pub fn decision(&self) -> Decision {
        self.policy.decide(self.items.len())
    }

    fn attempt(&mut self, item: T) -> Offer<T> {
        self.stats.attempts += 1;
        match self.decision() {
            Decision::Admit => self.push(item),
            Decision::EvictOldestThenAdmit if self.owed.is_some() => {
                if let Some(owed) = &mut self.owed {
                    *owed += 1;
                }
                let _ = self.push(item);
                Offer::Evicting
            }
            Decision::EvictOldestThenAdmit => match self.items.pop_front() {
                Some(oldest) => {
                    self.items.push_back(item);
                    self.stats.dropped += 1;
                    Offer::Evicted(oldest)
                }
                // `decide` evicts only from a non-empty queue.
                None => unreachable!("evict-oldest decided for an empty queue"),
            },
            Decision::DropIncoming => {
                self.stats.dropped += 1;
                Offer::Dropped(item)
            }
            Decision::Reject => {
                self.stats.rejected += 1;
                Offer::Rejected(item)
            }
            Decision::Suspend => {
                self.stats.refused_full += 1;
                Offer::Full(item)
            }
        }
    }

    /// Queues an element whatever the policy says. Used where the caller has
    /// its own bound (a muted actor sender's overshoot, a reply to a request
    /// the receiver made itself).
    pub fn force(&mut self, item: T) -> Offer<T> {
        self.stats.offered += 1;
        self.stats.attempts += 1;
        self.push(item)
    }

    fn push(&mut self, item: T) -> Offer<T> {
        self.items.push_back(item);
        self.stats.max_depth = self.stats.max_depth.max(self.items.len());
        Offer::Enqueued {
            remaining: self.remaining(),
        }
    }

    /// Takes the oldest element.
    pub fn take(&mut self) -> Option<T> {
        let item = self.items.pop_front();
        if item.is_some() {
            self.stats.taken += 1;
        }
        item
    }

    /// Removes every queued element, counting them as drained (not taken).
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.stats.drained += self.items.len() as u64;
        self.items.drain(..)
    }
}

impl<T> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("policy", &self.policy)
            .field("len", &self.items.len())
            .field("stats", &self.stats)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admit_agrees_with_decide() {
        let caps = [0, 1, 2, 3, 31, 32, usize::MAX];
        let policies = caps.iter().flat_map(|&n| {
            [
                Policy::KeepNewest(n),
                Policy::KeepOldest(n),
                Policy::Reject(n),
                Policy::Suspend(n),
            ]
        });
        for policy in policies.chain([Policy::Unbounded]) {
            let cap = policy.capacity().unwrap_or(usize::MAX);
            let lens = (0..40).chain([cap.saturating_sub(1), cap, usize::MAX - 1, usize::MAX]);
            for len in lens {
                let admitted = policy.decide(len) == Decision::Admit;
                let want = admitted.then(|| policy.capacity().map(|c| c - (len + 1)));
                assert_eq!(policy.admit(len), want, "{policy} at {len}");
            }
        }
    }

    #[test]
    fn keep_newest_evicts_oldest_and_returns_it() {
        let mut b = Buffer::new(Policy::KeepNewest(3));
        for i in 0..3 {
            assert!(matches!(b.offer(i), Offer::Enqueued { .. }));
        }
        assert_eq!(b.offer(3), Offer::Evicted(0));
        assert_eq!(b.offer(4), Offer::Evicted(1));
        assert_eq!(b.drain().collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(b.stats().dropped, 2);
    }

    #[test]
    fn keep_newest_one_is_last_known_value() {
        let mut b = Buffer::new(Policy::KeepNewest(1));
        assert_eq!(b.offer("a"), Offer::Enqueued { remaining: Some(0) });
        assert_eq!(b.offer("b"), Offer::Evicted("a"));
        assert_eq!(b.offer("c"), Offer::Evicted("b"));
        assert_eq!(b.take(), Some("c"));
        assert_eq!(b.take(), None);
    }

    #[test]
    fn evicting_on_take_removes_what_the_eager_store_removed() {
        let mut lazy = Buffer::evicting_on_take(Policy::KeepNewest(2));
        let mut eager = Buffer::new(Policy::KeepNewest(2));
        for i in 0..2 {
            assert_eq!(lazy.offer(i), eager.offer(i));
        }
        assert_eq!(eager.offer(2), Offer::Evicted(0));
        assert_eq!(lazy.offer(2), Offer::Evicting);
        // A forced element past the capacity is not evicted for.
        let _ = (eager.force(3), lazy.force(3));
        assert_eq!(eager.offer(4), Offer::Evicted(1));
        assert_eq!(lazy.offer(4), Offer::Evicting);
        assert_eq!(lazy.len(), 5);
        assert_eq!(lazy.evict_owed().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(lazy.evict_owed().count(), 0);
        assert_eq!(lazy.take(), eager.take());
        let (l, e) = (lazy.stats(), eager.stats());
        assert_eq!(
            (l.offered, l.taken, l.dropped),
            (e.offered, e.taken, e.dropped)
        );
        // The deferred store held the owed elements meanwhile.
        assert_eq!((l.max_depth, e.max_depth), (5, 3));
        assert_eq!(lazy.drain().collect::<Vec<_>>(), vec![3, 4]);
        // Nothing owed under the eager store.
        assert_eq!(eager.evict_owed().count(), 0);
    }

    #[test]
    fn keep_oldest_drops_incoming() {
        let mut b = Buffer::new(Policy::KeepOldest(2));
        assert_eq!(b.offer(1), Offer::Enqueued { remaining: Some(1) });
        assert_eq!(b.offer(2), Offer::Enqueued { remaining: Some(0) });
        assert_eq!(b.offer(3), Offer::Dropped(3));
        assert_eq!(b.take(), Some(1));
        assert_eq!(b.offer(4), Offer::Enqueued { remaining: Some(0) });
        assert_eq!(b.drain().collect::<Vec<_>>(), vec![2, 4]);
    }

    #[test]
    fn reject_and_suspend_hand_the_element_back() {
        let mut r = Buffer::new(Policy::Reject(1));
        assert!(matches!(r.offer(1), Offer::Enqueued { .. }));
        assert_eq!(r.offer(2), Offer::Rejected(2));
        let mut s = Buffer::new(Policy::Suspend(1));
        assert!(matches!(s.offer(1), Offer::Enqueued { .. }));
        assert_eq!(s.offer(2), Offer::Full(2));
        assert_eq!(s.stats().refused_full, 1);
    }

    #[test]
    fn retries_count_as_attempts_not_as_elements() {
        let mut s = Buffer::new(Policy::Suspend(1));
        assert!(matches!(s.offer(1), Offer::Enqueued { .. }));
        assert_eq!(s.offer(2), Offer::Full(2));
        assert_eq!(s.offer_again(2), Offer::Full(2));
        assert_eq!(s.take(), Some(1));
        assert!(matches!(s.offer_again(2), Offer::Enqueued { .. }));
        let st = s.stats();
        assert_eq!((st.offered, st.attempts, st.refused_full), (2, 4, 2));
    }

    #[test]
    fn force_overshoots_and_remaining_saturates() {
        let mut s = Buffer::new(Policy::Suspend(1));
        assert_eq!(s.force(1), Offer::Enqueued { remaining: Some(0) });
        assert_eq!(s.force(2), Offer::Enqueued { remaining: Some(0) });
        assert_eq!(s.len(), 2);
        assert_eq!(s.stats().max_depth, 2);
    }

    #[test]
    fn zero_capacity_is_refused_for_mailboxes_but_drops_in_buffers() {
        assert!(Policy::KeepOldest(0).validate().is_err());
        assert!(Policy::Unbounded.validate().is_ok());
        let msg = Policy::Reject(0).validate().unwrap_err().to_string();
        assert!(msg.contains("reject(0)"), "{msg}");
        let mut b = Buffer::new(Policy::KeepNewest(0));
        assert_eq!(b.offer(7), Offer::Dropped(7));
        assert!(b.is_empty());
    }

    #[test]
    fn decide_admits_below_capacity_whatever_the_policy() {
        for p in [
            Policy::KeepNewest(3),
            Policy::KeepOldest(3),
            Policy::Reject(3),
            Policy::Suspend(3),
        ] {
            for len in 0..3 {
                assert_eq!(p.decide(len), Decision::Admit, "{p} at {len}");
            }
        }
        assert_eq!(Policy::Unbounded.decide(0), Decision::Admit);
        assert_eq!(Policy::Unbounded.decide(usize::MAX), Decision::Admit);
    }

    #[test]
    fn decide_at_and_past_capacity_follows_the_policy() {
        for len in [3, 4, 100] {
            assert_eq!(
                Policy::KeepNewest(3).decide(len),
                Decision::EvictOldestThenAdmit
            );
            assert_eq!(Policy::KeepOldest(3).decide(len), Decision::DropIncoming);
            assert_eq!(Policy::Reject(3).decide(len), Decision::Reject);
            assert_eq!(Policy::Suspend(3).decide(len), Decision::Suspend);
        }
    }

    #[test]
    fn decide_at_capacity_zero_never_evicts_from_nothing() {
        assert_eq!(Policy::KeepNewest(0).decide(0), Decision::DropIncoming);
        assert_eq!(Policy::KeepOldest(0).decide(0), Decision::DropIncoming);
        assert_eq!(Policy::Reject(0).decide(0), Decision::Reject);
        assert_eq!(Policy::Suspend(0).decide(0), Decision::Suspend);
    }

    #[test]
    fn the_store_applies_the_decision_it_was_given() {
        let mut b = Buffer::new(Policy::Suspend(1));
        assert_eq!(b.decision(), Decision::Admit);
        assert!(!b.is_full());
        let _ = b.offer(1);
        assert_eq!(b.decision(), Decision::Suspend);
        assert!(b.is_full());
        let _ = b.force(2);
        assert_eq!(b.decision(), Decision::Suspend);
        assert_eq!(b.take(), Some(1));
        assert_eq!(b.take(), Some(2));
        assert_eq!(b.decision(), Decision::Admit);
    }

    #[test]
    fn unbounded_never_refuses() {
        let mut b = Buffer::new(Policy::Unbounded);
        for i in 0..1000 {
            assert_eq!(b.offer(i), Offer::Enqueued { remaining: None });
        }
        assert_eq!(b.len(), 1000);
    }
}
