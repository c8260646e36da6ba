//! What the two ends of a buffered stream are told: a push's verdict
//! ([`YieldResult`]), why the stream ended ([`Termination`]) and an empty
//! poll ([`Empty`]).

use crate::buffer::Offer;

/// What became of one pushed element. Swift's `YieldResult`, plus the two
/// verdicts of policies Swift does not have.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a push's verdict says whether the element was queued, dropped or handed back"]
pub enum YieldResult<T> {
    /// The element is queued (or was handed straight to the waiting
    /// consumer). `remaining` is the room left, `None` when unbounded.
    Enqueued {
        /// Free slots left, `None` for an unbounded stream.
        remaining: Option<usize>,
    },
    /// The pushed element was queued, and to make room the oldest queued
    /// one was pushed out: here it is ([`Policy::KeepNewest`](crate::Policy::KeepNewest); Swift's
    /// `.dropped(oldest)`).
    Evicted(T),
    /// The pushed element was lost to the policy: here it is
    /// ([`Policy::KeepOldest`](crate::Policy::KeepOldest), or any policy with capacity 0 and no consumer
    /// waiting; Swift's `.dropped(incoming)`).
    Dropped(T),
    /// The stream is full and its policy is [`Policy::Reject`](crate::Policy::Reject): here is the
    /// element back.
    Rejected(T),
    /// The stream is full and its policy is [`Policy::Suspend`](crate::Policy::Suspend): here is the
    /// element back; [`Continuation::send`](super::Continuation::send) would have waited.
    Full(T),
    /// The stream has finished or its consumer has gone: here is the element
    /// back.
    Terminated(T),
}

impl<T> YieldResult<T> {
    /// True when the pushed element is queued: [`YieldResult::Enqueued`]
    /// and [`YieldResult::Evicted`].
    pub fn is_enqueued(&self) -> bool {
        matches!(self, YieldResult::Enqueued { .. } | YieldResult::Evicted(_))
    }

    /// The element carried by the verdict, if any.
    pub fn into_inner(self) -> Option<T> {
        match self {
            YieldResult::Enqueued { .. } => None,
            YieldResult::Evicted(t)
            | YieldResult::Dropped(t)
            | YieldResult::Rejected(t)
            | YieldResult::Full(t)
            | YieldResult::Terminated(t) => Some(t),
        }
    }
}

impl<T> YieldResult<T> {
    /// The buffer core's verdict is the stream's, one for one. A stream's
    /// locked buffer evicts at the offer ([`Buffer::new`](crate::buffer::Buffer::new)),
    /// and keep-newest never goes on the lane, so it never answers
    /// [`Offer::Evicting`].
    pub(super) fn from_offer(offer: Offer<T>) -> Self {
        match offer {
            Offer::Enqueued { remaining } => YieldResult::Enqueued { remaining },
            Offer::Evicted(t) => YieldResult::Evicted(t),
            Offer::Dropped(t) => YieldResult::Dropped(t),
            Offer::Rejected(t) => YieldResult::Rejected(t),
            Offer::Full(t) => YieldResult::Full(t),
            Offer::Evicting => unreachable!("a stream's buffer evicts at the offer"),
        }
    }
}

/// Why a stream terminated, as told to the [`Continuation::on_termination`](super::Continuation::on_termination)
/// handler. Swift's `.finished(nil)`, `.finished(error)` and `.cancelled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    /// A producer called [`Continuation::finish`](super::Continuation::finish), or the last producer was
    /// dropped.
    Finished,
    /// A producer called [`Continuation::fail`](super::Continuation::fail).
    Failed,
    /// The consumer was dropped before the stream finished.
    Cancelled,
}

/// A [`try_next`](super::AsyncStream::try_next) found nothing to take yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("nothing to take yet: the stream is open and empty")]
pub struct Empty;
