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

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_core::Stream;

use super::sync::{block_on, Mutex};
use crate::buffer::{Buffer, BufferStats, Offer, Policy};

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
    /// one was pushed out: here it is ([`Policy::KeepNewest`]; Swift's
    /// `.dropped(oldest)`).
    Evicted(T),
    /// The pushed element was lost to the policy: here it is
    /// ([`Policy::KeepOldest`], or any policy with capacity 0 and no consumer
    /// waiting; Swift's `.dropped(incoming)`).
    Dropped(T),
    /// The stream is full and its policy is [`Policy::Reject`]: here is the
    /// element back.
    Rejected(T),
    /// The stream is full and its policy is [`Policy::Suspend`]: here is the
    /// element back; [`Continuation::send`] would have waited.
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
    /// buffer evicts at the offer ([`Buffer::new`](crate::buffer::Buffer::new)),
    /// so it never answers [`Offer::Evicting`].
    fn from_offer(offer: Offer<T>) -> Self {
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

/// Why a stream terminated, as told to the [`Continuation::on_termination`]
/// handler. Swift's `.finished(nil)`, `.finished(error)` and `.cancelled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    /// A producer called [`Continuation::finish`], or the last producer was
    /// dropped.
    Finished,
    /// A producer called [`Continuation::fail`].
    Failed,
    /// The consumer was dropped before the stream finished.
    Cancelled,
}

/// A [`try_next`](AsyncStream::try_next) found nothing to take yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("nothing to take yet: the stream is open and empty")]
pub struct Empty;

type Handler = Box<dyn FnOnce(Termination) + Send>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    /// Finished by a producer: buffered elements are still delivered.
    Finished,
    /// The consumer is gone.
    Cancelled,
}

struct State<T, E> {
    buffer: Buffer<T>,
    /// An element handed straight to a waiting consumer (Swift's `resume`).
    handoff: Option<T>,
    handed_off: u64,
    consumer: Option<Waker>,
    /// The consumer has polled, found nothing and waits (Swift's `waiting`).
    consumer_waiting: bool,
    /// Producers waiting for room (suspend policy), FIFO.
    senders: VecDeque<(u64, Waker)>,
    next_sender: u64,
    phase: Phase,
    failure: Option<E>,
    termination: Option<Termination>,
    handler: Option<Handler>,
    producers: usize,
}

struct Shared<T, E> {
    state: Mutex<State<T, E>>,
    policy: Policy,
}

/// What to do once the lock is released.
#[must_use]
struct Wake {
    wakers: Vec<Waker>,
    handler: Option<(Handler, Termination)>,
}

impl Wake {
    fn run(self) {
        for w in self.wakers {
            w.wake();
        }
        if let Some((h, t)) = self.handler {
            h(t);
        }
    }
}

impl<T, E> State<T, E> {
    /// Records the termination; returns the handler to call, at most once.
    fn terminate(&mut self, t: Termination) -> Option<(Handler, Termination)> {
        if self.termination.is_some() {
            return None;
        }
        self.termination = Some(t);
        self.handler.take().map(|h| (h, t))
    }

    fn wake_all(&mut self) -> Vec<Waker> {
        let mut wakers: Vec<Waker> = self.senders.drain(..).map(|(_, w)| w).collect();
        if self.consumer_waiting {
            self.consumer_waiting = false;
            wakers.extend(self.consumer.take());
        }
        wakers
    }

    /// Room for one more element: in the buffer, or in the hands of a
    /// waiting consumer.
    fn has_room(&self) -> bool {
        (self.consumer_waiting && self.handoff.is_none()) || !self.buffer.is_full()
    }
}

impl<T, E> Shared<T, E> {
    fn new(policy: Policy) -> Self {
        Shared {
            state: Mutex::new(State {
                buffer: Buffer::new(policy),
                handoff: None,
                handed_off: 0,
                consumer: None,
                consumer_waiting: false,
                senders: VecDeque::new(),
                next_sender: 0,
                phase: Phase::Open,
                failure: None,
                termination: None,
                handler: None,
                producers: 1,
            }),
            policy,
        }
    }

    /// One push attempt under the lock. `Full` only for a suspend policy.
    fn offer(&self, st: &mut State<T, E>, item: T) -> (YieldResult<T>, Option<Waker>) {
        if st.phase != Phase::Open {
            return (YieldResult::Terminated(item), None);
        }
        if st.consumer_waiting && st.handoff.is_none() {
            st.handoff = Some(item);
            st.handed_off += 1;
            st.consumer_waiting = false;
            let remaining = self.policy.capacity();
            return (YieldResult::Enqueued { remaining }, st.consumer.clone());
        }
        (YieldResult::from_offer(st.buffer.offer(item)), None)
    }

    fn push(&self, item: T) -> YieldResult<T> {
        let mut st = self.state.lock();
        let (verdict, wake) = self.offer(&mut st, item);
        drop(st);
        if let Some(w) = wake {
            w.wake();
        }
        verdict
    }

    fn finish(&self, failure: Option<E>) -> bool {
        let mut st = self.state.lock();
        if st.phase != Phase::Open {
            return false;
        }
        st.phase = Phase::Finished;
        let t = if failure.is_some() {
            Termination::Failed
        } else {
            Termination::Finished
        };
        st.failure = failure;
        let wake = Wake {
            handler: st.terminate(t),
            wakers: st.wake_all(),
        };
        drop(st);
        wake.run();
        true
    }

    fn cancel(&self) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        st.phase = Phase::Cancelled;
        let leftovers: Vec<T> = st.buffer.drain().chain(st.handoff.take()).collect();
        st.consumer = None;
        let wake = Wake {
            handler: st.terminate(Termination::Cancelled),
            wakers: st.wake_all(),
        };
        let failure = st.failure.take();
        drop(guard);
        // Dropped outside the lock: an element's destructor may do anything.
        drop(leftovers);
        drop(failure);
        wake.run();
    }

    fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Result<T, E>>> {
        let mut st = self.state.lock();
        if let Some(item) = st.handoff.take() {
            return Poll::Ready(Some(Ok(item)));
        }
        if let Some(item) = st.buffer.take() {
            let sender = st.senders.pop_front();
            drop(st);
            if let Some((_, w)) = sender {
                w.wake();
            }
            return Poll::Ready(Some(Ok(item)));
        }
        match st.phase {
            Phase::Open => {}
            Phase::Finished | Phase::Cancelled => {
                return Poll::Ready(st.failure.take().map(Err));
            }
        }
        st.consumer_waiting = true;
        match &st.consumer {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.consumer = Some(cx.waker().clone()),
        }
        // A waiting consumer is room for one element even at capacity 0: let
        // a suspended producer know.
        let sender = st.senders.pop_front();
        drop(st);
        if let Some((_, w)) = sender {
            w.wake();
        }
        Poll::Pending
    }

    fn try_next(&self) -> Result<Option<Result<T, E>>, Empty> {
        let mut st = self.state.lock();
        if let Some(item) = st.handoff.take() {
            return Ok(Some(Ok(item)));
        }
        if let Some(item) = st.buffer.take() {
            let sender = st.senders.pop_front();
            drop(st);
            if let Some((_, w)) = sender {
                w.wake();
            }
            return Ok(Some(Ok(item)));
        }
        match st.phase {
            Phase::Open => Err(Empty),
            Phase::Finished | Phase::Cancelled => Ok(st.failure.take().map(Err)),
        }
    }

    fn stats(&self) -> BufferStats {
        let st = self.state.lock();
        let mut stats = st.buffer.stats();
        stats.offered += st.handed_off;
        stats.taken += st.handed_off - u64::from(st.handoff.is_some());
        stats
    }
}

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
        self.shared.push(item)
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
        let mut st = self.shared.state.lock();
        match st.termination {
            Some(t) => {
                drop(st);
                handler(t);
            }
            None => {
                let old = st.handler.replace(Box::new(handler));
                drop(st);
                drop(old);
            }
        }
    }

    /// True once the stream has finished or its consumer has gone.
    pub fn is_terminated(&self) -> bool {
        self.shared.state.lock().phase != Phase::Open
    }

    /// The buffering policy.
    pub fn policy(&self) -> Policy {
        self.shared.policy
    }

    /// Elements buffered now.
    pub fn len(&self) -> usize {
        self.shared.state.lock().buffer.len()
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
        self.shared.state.lock().producers += 1;
        Continuation {
            shared: self.shared.clone(),
        }
    }
}

impl<T, E> Drop for Continuation<T, E> {
    fn drop(&mut self) {
        let last = {
            let mut st = self.shared.state.lock();
            st.producers -= 1;
            st.producers == 0
        };
        if last {
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
        let shared = this.shared;
        let mut st = shared.state.lock();
        let suspend = matches!(shared.policy, Policy::Suspend(_));
        if st.phase == Phase::Open && suspend && !st.has_room() {
            // Wait, without offering: a refused offer would be counted.
            this.item = Some(item);
            match this
                .id
                .and_then(|id| st.senders.iter_mut().find(|(i, _)| *i == id))
            {
                Some((_, w)) => {
                    if !w.will_wake(cx.waker()) {
                        *w = cx.waker().clone();
                    }
                }
                None => {
                    let id = st.next_sender;
                    st.next_sender += 1;
                    this.id = Some(id);
                    st.senders.push_back((id, cx.waker().clone()));
                }
            }
            return Poll::Pending;
        }
        if let Some(id) = this.id.take() {
            st.senders.retain(|(i, _)| *i != id);
        }
        let (verdict, wake) = shared.offer(&mut st, item);
        // Room may remain for the next waiting producer.
        let next = if st.has_room() && st.phase == Phase::Open {
            st.senders.pop_front()
        } else {
            None
        };
        drop(st);
        if let Some(w) = wake {
            w.wake();
        }
        if let Some((_, w)) = next {
            w.wake();
        }
        Poll::Ready(verdict)
    }
}

impl<T, E> Drop for SendFuture<'_, T, E> {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let mut st = self.shared.state.lock();
        let before = st.senders.len();
        st.senders.retain(|(i, _)| *i != id);
        // Not in the queue: this sender was woken for room it will not use
        // now. Pass the wake-up on, or it is lost.
        let next = if st.senders.len() == before && st.has_room() {
            st.senders.pop_front()
        } else {
            None
        };
        drop(st);
        if let Some((_, w)) = next {
            w.wake();
        }
    }
}

impl<T> AsyncStream<T> {
    /// Waits for the next element, blocking the thread. `None` once the
    /// stream has finished and everything buffered was taken.
    pub fn next_blocking(&mut self) -> Option<T> {
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
        self.shared
            .try_next()
            .map(|o| o.map(|r| r.unwrap_or_else(|never| match never {})))
    }

    fn poll_next_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.shared
            .poll_next(cx)
            .map(|o| o.map(|r| r.unwrap_or_else(|never| match never {})))
    }

    /// Elements buffered now.
    pub fn len(&self) -> usize {
        self.shared.state.lock().buffer.len()
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
        self.shared.cancel();
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
        block_on(std::future::poll_fn(|cx| self.shared.poll_next(cx)))
    }

    /// Takes the next element or the error if there is one now (see
    /// [`AsyncStream::try_next`]).
    pub fn try_next(&mut self) -> Result<Option<Result<T, E>>, Empty> {
        self.shared.try_next()
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
        self.shared.poll_next(cx)
    }
}

impl<T, E> Drop for AsyncThrowingStream<T, E> {
    fn drop(&mut self) {
        self.shared.cancel();
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
