//! The buffered stream: Swift's `AsyncStream` / `AsyncThrowingStream`, with
//! turno's buffer core underneath.
//!
//! A [`Continuation`] is the producing end (clone it for many producers); an
//! [`AsyncStream`] (or [`AsyncThrowingStream`]) is the one consumer. Each
//! [`Continuation::push`] returns a [`YieldResult`] that says what became of
//! the element. The policy is a [`Policy`] from the [buffer core](crate::buffer),
//! so mailboxes and streams share one implementation of what "full" means.
//!
//! ## Semantics (Swift's, case by case)
//!
//! These follow `_AsyncStreamStorage` in the Swift standard library
//! (`stdlib/public/Concurrency/AsyncStreamBuffer.swift`):
//!
//! | situation | Swift | here |
//! |---|---|---|
//! | the consumer is waiting (buffer empty) | element resumes it directly, `.enqueued(remaining: limit)` | [`YieldResult::Enqueued`] with `remaining` = the full capacity (`None` when unbounded) |
//! | `.unbounded` | `.enqueued(remaining: .max)` | [`Policy::Unbounded`]: `Enqueued { remaining: None }` |
//! | `.bufferingOldest(n)`, room | `.enqueued(remaining: n - count)` | [`Policy::KeepOldest`]: `Enqueued { remaining: Some(n - len) }` |
//! | `.bufferingOldest(n)`, full | `.dropped(incoming)` | `Dropped(incoming)` |
//! | `.bufferingNewest(n)`, full, n > 0 | `.dropped(oldest)`, incoming queued | [`Policy::KeepNewest`]: `Evicted(oldest)` |
//! | n = 0, nobody waiting | `.dropped(incoming)` | `Dropped(incoming)` |
//! | after `finish()` or cancellation | `.terminated` | [`YieldResult::Terminated`] with the element handed back |
//! | `finish()` | buffered elements are still delivered, then `nil` | the same, then `None` |
//! | `finish(throwing:)` | buffered elements, then the error | [`Continuation::fail`]: the same, then `Some(Err(e))`, then `None` |
//! | `onTermination` | called once, at `finish` or when the consumer goes away | [`Continuation::on_termination`], [`Termination`] |
//!
//! Two policies Swift does not have also work, because the buffer core has
//! them: [`Policy::Reject`] answers [`YieldResult::Rejected`], and
//! [`Policy::Suspend`] answers [`YieldResult::Full`] to [`Continuation::push`]
//! while [`Continuation::send`] / [`Continuation::send_blocking`] wait for room
//! (this is the bounded channel of the benchmarks).
//!
//! Differences from Swift, each deliberate:
//!
//! - `Terminated` hands the element back (Rust has ownership; Swift drops it).
//! - When the last [`Continuation`] is dropped the stream finishes (as every
//!   Rust channel does); in Swift a forgotten continuation leaves the consumer
//!   waiting forever.
//! - A termination handler installed after termination runs at once with the
//!   recorded [`Termination`] instead of never: "exactly once" holds for every
//!   handler that was ever installed last.
//! - Many consumers are impossible by construction (the consumer is not
//!   `Clone`), where Swift queues concurrent iterators.
//!
//! ```
//! use turno::stream::{buffered, YieldResult};
//! use turno::Policy;
//!
//! let (tx, mut rx) = buffered::<u32>(Policy::KeepNewest(2));
//! assert_eq!(tx.push(1), YieldResult::Enqueued { remaining: Some(1) });
//! assert_eq!(tx.push(2), YieldResult::Enqueued { remaining: Some(0) });
//! assert_eq!(tx.push(3), YieldResult::Evicted(1)); // the oldest is pushed out
//! tx.finish();
//! assert_eq!(tx.push(4), YieldResult::Terminated(4));
//! assert_eq!(rx.blocking_iter().collect::<Vec<_>>(), [2, 3]);
//! ```

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::sync::block_on;
use crate::buffer::{BufferStats, Policy};

mod outcome;
mod shared;
mod trace;

pub use outcome::{Empty, Termination, YieldResult};
#[cfg(turno_loom)]
pub use shared::Inject;
use shared::Shared;

/// The producing end of a buffered stream: Swift's `AsyncStream.Continuation`.
///
/// Cheap to clone; every clone may push from any thread. Pushing never
/// blocks and never allocates in steady state. The stream finishes when any
/// clone calls [`finish`](Continuation::finish) (or [`fail`](Continuation::fail)),
/// or when the last clone is dropped.
pub struct Continuation<T, E = Infallible> {
    shared: Arc<Shared<T, E>>,
}

/// The consumer of a buffered stream: Swift's `AsyncStream`.
///
/// A [`Stream`] of `T`, and a blocking iterator through
/// [`next_blocking`](AsyncStream::next_blocking) and
/// [`blocking_iter`](AsyncStream::blocking_iter). Dropping it before the
/// stream finished cancels the stream: the producers' next pushes answer
/// [`YieldResult::Terminated`] and the termination handler runs with
/// [`Termination::Cancelled`].
pub struct AsyncStream<T> {
    shared: Arc<Shared<T, Infallible>>,
}

/// The consumer of a fallible buffered stream: Swift's `AsyncThrowingStream`.
///
/// A [`Stream`] of `Result<T, E>`: after [`Continuation::fail`] the buffered
/// elements are delivered first, then the error once, then the end.
pub struct AsyncThrowingStream<T, E> {
    shared: Arc<Shared<T, E>>,
}

/// A buffered stream with the given policy: the producing end and the
/// consumer. See the [module docs](self) for the semantics of each policy.
///
/// ```
/// use turno::stream::{buffered, Termination, YieldResult};
/// use turno::Policy;
/// use std::sync::{Arc, Mutex};
///
/// let (tx, mut rx) = buffered::<&str>(Policy::KeepOldest(1));
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// tx.on_termination(move |t| s.lock().unwrap().push(t));
/// assert_eq!(tx.push("a"), YieldResult::Enqueued { remaining: Some(0) });
/// assert_eq!(tx.push("b"), YieldResult::Dropped("b")); // keep-oldest: the incoming one
/// assert_eq!(rx.next_blocking(), Some("a"));
/// drop(rx); // the consumer goes away: cancelled
/// assert_eq!(tx.push("c"), YieldResult::Terminated("c"));
/// assert_eq!(*seen.lock().unwrap(), [Termination::Cancelled]);
/// ```
pub fn buffered<T>(policy: Policy) -> (Continuation<T>, AsyncStream<T>) {
    let shared = Arc::new(Shared::new(policy));
    (
        Continuation {
            shared: shared.clone(),
        },
        AsyncStream { shared },
    )
}

/// A buffered stream that records its buffer in `system`'s trace, under
/// `name`: every push (`stream_push`, with the depth after it), every
/// element lost to the policy (`stream_drop`: keep-newest's evicted oldest,
/// keep-oldest's dropped incoming), handed back (`stream_reject`) or
/// refused by a full suspend stream (`stream_full`), and every take
/// (`stream_take`), at the system's time (virtual on
/// [`DetSystem`](crate::DetSystem)). The inspector plots a traced stream's
/// depth, losses and sojourn times beside the mailboxes'. The depth is
/// read just after each push or take: exact when one thread drives the
/// stream (as on virtual time), a close reading when producers and the
/// consumer run at once. Without a trace sink on the system it is
/// [`buffered`].
///
/// ```
/// use turno::stream::buffered_traced;
/// use turno::trace::{ActorEvent, RingSink};
/// use turno::{DetSystem, Policy};
///
/// let ring = RingSink::new(64);
/// let sys = DetSystem::builder().trace(ring.clone()).build();
/// let (tx, mut rx) = buffered_traced::<u8>(&sys, "sensor", Policy::KeepOldest(1));
/// let _ = tx.push(1);
/// let _ = tx.push(2); // keep-oldest: dropped
/// assert_eq!(rx.try_next(), Ok(Some(1)));
/// let kinds: Vec<String> = ring.events().iter().map(|e| match &e.kind {
///     ActorEvent::StreamOpen { name, .. } => format!("open {name}"),
///     ActorEvent::StreamPush { depth, .. } => format!("push {depth}"),
///     ActorEvent::StreamDrop { .. } => "drop".into(),
///     ActorEvent::StreamTake { depth, .. } => format!("take {depth}"),
///     _ => "other".into(),
/// }).collect();
/// assert_eq!(kinds, ["open sensor", "push 1", "drop", "take 0"]);
/// ```
pub fn buffered_traced<T>(
    system: &impl crate::System,
    name: &str,
    policy: Policy,
) -> (Continuation<T>, AsyncStream<T>) {
    let engine = crate::system::sealed::Sealed::engine(system);
    let mut shared = Shared::new(policy);
    shared.trace = trace::StreamTracer::open(engine.shared.clone(), name, policy).map(Box::new);
    let shared = Arc::new(shared);
    (
        Continuation {
            shared: shared.clone(),
        },
        AsyncStream { shared },
    )
}

/// A fallible buffered stream: Swift's `AsyncThrowingStream`.
///
/// ```
/// use turno::stream::throwing;
/// use turno::Policy;
///
/// let (tx, mut rx) = throwing::<u8, String>(Policy::Unbounded);
/// let _ = tx.push(1);
/// tx.fail("sensor unplugged".to_string());
/// assert_eq!(rx.next_blocking(), Some(Ok(1)));
/// assert_eq!(rx.next_blocking(), Some(Err("sensor unplugged".to_string())));
/// assert_eq!(rx.next_blocking(), None);
/// ```
pub fn throwing<T, E>(policy: Policy) -> (Continuation<T, E>, AsyncThrowingStream<T, E>) {
    let shared = Arc::new(Shared::new(policy));
    (
        Continuation {
            shared: shared.clone(),
        },
        AsyncThrowingStream { shared },
    )
}

impl<T, E> Continuation<T, E> {
    /// Pushes an element without waiting (Swift's `yield`) and returns what
    /// became of it. See the [module docs](self) for each policy's verdicts.
    #[doc(alias = "yield")]
    pub fn push(&self, item: T) -> YieldResult<T> {
        let verdict = self.shared.push(item);
        if let Some(t) = &self.shared.trace {
            t.pushed(&verdict, self.shared.len());
        }
        verdict
    }

    /// Pushes an element, waiting while a [`Policy::Suspend`] stream is full
    /// (every other policy answers at once, as [`push`](Self::push)). Never
    /// answers [`YieldResult::Full`].
    ///
    /// Cancel-safe: dropping the future before it completes delivers
    /// nothing (the element is dropped with the future).
    pub fn send(&self, item: T) -> SendFuture<'_, T, E> {
        SendFuture {
            shared: &self.shared,
            item: Some(item),
            id: None,
        }
    }

    /// [`send`](Self::send), blocking the thread while the stream is full.
    pub fn send_blocking(&self, item: T) -> YieldResult<T> {
        let item = match self.shared.send_spinning(item) {
            Ok(verdict) => {
                if let Some(t) = &self.shared.trace {
                    t.pushed(&verdict, self.shared.len());
                }
                return verdict;
            }
            Err(item) => item,
        };
        // The future records its own verdict.
        block_on(self.send(item))
    }

    /// Finishes the stream: the consumer still receives what is buffered,
    /// then the end. Later pushes answer [`YieldResult::Terminated`]. Returns
    /// false (and does nothing) if the stream had already terminated.
    pub fn finish(&self) -> bool {
        self.shared.finish(None)
    }

    /// Finishes the stream with an error (Swift's `finish(throwing:)`): the
    /// consumer receives what is buffered, then the error, then the end.
    /// Returns false (and drops the error) if the stream had already
    /// terminated.
    pub fn fail(&self, error: E) -> bool {
        self.shared.finish(Some(error))
    }

    /// Installs the termination handler (Swift's `onTermination`), replacing
    /// any earlier one. It runs exactly once: when the stream finishes
    /// ([`Termination::Finished`] / [`Termination::Failed`]) or when the
    /// consumer is dropped first ([`Termination::Cancelled`]); if the stream
    /// has already terminated, it runs at once. It runs on the thread that
    /// terminated the stream, outside the stream's lock.
    pub fn on_termination(&self, handler: impl FnOnce(Termination) + Send + 'static) {
        self.shared.on_termination(Box::new(handler));
    }

    /// True once the stream has finished or its consumer has gone.
    pub fn is_terminated(&self) -> bool {
        self.shared.is_terminated()
    }

    /// The buffering policy.
    pub fn policy(&self) -> Policy {
        self.shared.policy
    }

    /// Elements buffered now.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters: offered, taken, dropped, rejected, max depth. Elements
    /// handed straight to a waiting consumer count as offered and taken.
    pub fn stats(&self) -> BufferStats {
        self.shared.stats()
    }
}

impl<T, E> Clone for Continuation<T, E> {
    fn clone(&self) -> Self {
        self.shared.add_producer();
        Continuation {
            shared: self.shared.clone(),
        }
    }
}

impl<T, E> Drop for Continuation<T, E> {
    fn drop(&mut self) {
        if self.shared.remove_producer() {
            self.shared.finish(None);
        }
    }
}

impl<T, E> fmt::Debug for Continuation<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Continuation")
            .field("policy", &self.shared.policy)
            .finish_non_exhaustive()
    }
}

/// The future of [`Continuation::send`].
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T, E> {
    shared: &'a Shared<T, E>,
    item: Option<T>,
    id: Option<u64>,
}

// The element is never pinned: it is moved in and out freely.
impl<T, E> Unpin for SendFuture<'_, T, E> {}

impl<T, E> Future for SendFuture<'_, T, E> {
    type Output = YieldResult<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<YieldResult<T>> {
        let this = self.get_mut();
        let Some(item) = this.item.take() else {
            panic!("turno::stream::Send polled after completion");
        };
        match this.shared.poll_send(item, &mut this.id, cx) {
            Ok(verdict) => {
                if let Some(t) = &this.shared.trace {
                    t.pushed(&verdict, this.shared.len());
                }
                Poll::Ready(verdict)
            }
            Err(item) => {
                this.item = Some(item);
                Poll::Pending
            }
        }
    }
}

impl<T, E> Drop for SendFuture<'_, T, E> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.shared.drop_send(id);
        }
    }
}

impl<T> AsyncStream<T> {
    /// Waits for the next element, blocking the thread. `None` once the
    /// stream has finished and everything buffered was taken.
    pub fn next_blocking(&mut self) -> Option<T> {
        // SAFETY: `&mut self`: this is the one consumer.
        if let Some(item) = unsafe { self.shared.take_lock_free() } {
            self.took();
            return Some(item);
        }
        // SAFETY: as above.
        unsafe { self.shared.spin_for_element() };
        block_on(std::future::poll_fn(|cx| self.poll_next_inner(cx)))
    }

    /// A blocking iterator over the rest of the stream.
    pub fn blocking_iter(&mut self) -> BlockingIter<'_, T> {
        BlockingIter { stream: self }
    }

    /// Takes the next element if there is one now: `Ok(Some(item))`, or
    /// `Ok(None)` when the stream has ended, or [`Empty`]. Does not count as
    /// waiting: with capacity 0 only an awaiting consumer receives anything.
    pub fn try_next(&mut self) -> Result<Option<T>, Empty> {
        // SAFETY: `&mut self`: this is the one consumer.
        let next = unsafe { self.shared.try_next() }
            .map(|o| o.map(|r| r.unwrap_or_else(|never| match never {})));
        if let Ok(Some(_)) = next {
            self.took();
        }
        next
    }

    fn poll_next_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        // SAFETY: `&mut self`: this is the one consumer.
        let next = unsafe { self.shared.poll_next(cx) }
            .map(|o| o.map(|r| r.unwrap_or_else(|never| match never {})));
        if let Poll::Ready(Some(_)) = next {
            self.took();
        }
        next
    }

    /// Records a take, when the stream is traced.
    #[inline]
    fn took(&self) {
        if let Some(t) = &self.shared.trace {
            t.took(self.shared.len());
        }
    }

    /// Elements buffered now.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters (see [`Continuation::stats`]).
    pub fn stats(&self) -> BufferStats {
        self.shared.stats()
    }
}

impl<T> Stream for AsyncStream<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().poll_next_inner(cx)
    }
}

impl<T> Drop for AsyncStream<T> {
    fn drop(&mut self) {
        // SAFETY: the consumer's drop: this is the one consumer.
        unsafe { self.shared.cancel() };
    }
}

impl<T> fmt::Debug for AsyncStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncStream")
            .field("policy", &self.shared.policy)
            .finish_non_exhaustive()
    }
}

impl<T, E> AsyncThrowingStream<T, E> {
    /// Waits for the next element or the error, blocking the thread.
    pub fn next_blocking(&mut self) -> Option<Result<T, E>> {
        // SAFETY: `&mut self`: this is the one consumer.
        if let Some(item) = unsafe { self.shared.take_lock_free() } {
            return Some(Ok(item));
        }
        // SAFETY: as above.
        unsafe { self.shared.spin_for_element() };
        // SAFETY: as above.
        block_on(std::future::poll_fn(|cx| unsafe {
            self.shared.poll_next(cx)
        }))
    }

    /// Takes the next element or the error if there is one now (see
    /// [`AsyncStream::try_next`]).
    pub fn try_next(&mut self) -> Result<Option<Result<T, E>>, Empty> {
        // SAFETY: `&mut self`: this is the one consumer.
        unsafe { self.shared.try_next() }
    }

    /// A blocking iterator over the rest of the stream.
    pub fn blocking_iter(&mut self) -> impl Iterator<Item = Result<T, E>> + '_ {
        std::iter::from_fn(move || self.next_blocking())
    }

    /// The counters (see [`Continuation::stats`]).
    pub fn stats(&self) -> BufferStats {
        self.shared.stats()
    }
}

impl<T, E> Stream for AsyncThrowingStream<T, E> {
    type Item = Result<T, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T, E>>> {
        // SAFETY: `Pin<&mut Self>`: this is the one consumer.
        unsafe { self.shared.poll_next(cx) }
    }
}

impl<T, E> Drop for AsyncThrowingStream<T, E> {
    fn drop(&mut self) {
        // SAFETY: the consumer's drop: this is the one consumer.
        unsafe { self.shared.cancel() };
    }
}

impl<T, E> fmt::Debug for AsyncThrowingStream<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncThrowingStream")
            .field("policy", &self.shared.policy)
            .finish_non_exhaustive()
    }
}

/// A blocking iterator over an [`AsyncStream`]; see
/// [`AsyncStream::blocking_iter`].
#[derive(Debug)]
pub struct BlockingIter<'a, T> {
    stream: &'a mut AsyncStream<T>,
}

impl<T> Iterator for BlockingIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.stream.next_blocking()
    }
}

#[cfg(all(test, not(turno_loom)))]
mod tests;

/// The stream with an injected fault, for `tests/stream_loom.rs`.
#[cfg(turno_loom)]
pub(crate) mod model {
    use std::sync::Arc;

    pub use super::Inject;
    use super::{AsyncStream, Continuation, Shared};
    use crate::buffer::Policy;

    /// [`buffered`](super::buffered) with `inject`.
    pub fn buffered_with_fault<T>(
        policy: Policy,
        inject: Inject,
    ) -> (Continuation<T>, AsyncStream<T>) {
        let mut shared = Shared::new(policy);
        shared.inject = inject;
        let shared = Arc::new(shared);
        (
            Continuation {
                shared: shared.clone(),
            },
            AsyncStream { shared },
        )
    }
}
