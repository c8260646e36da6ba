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
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_core::Stream;

use super::sync::{block_on, fence, AtomicBool, AtomicUsize, Mutex};
use crate::buffer::{Buffer, BufferStats, Offer, Policy};
use crate::lane::{Lane, Mode, Pushed};

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
    /// locked buffer evicts at the offer ([`Buffer::new`](crate::buffer::Buffer::new)),
    /// and keep-newest never goes on the lane, so it never answers
    /// [`Offer::Evicting`].
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

/// Test-only fault injection for the loom model (`tests/stream_loom.rs`).
#[cfg(turno_loom)]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Inject {
    /// The stream as written.
    #[default]
    None,
    /// A producer that queued an element on the lane reads the consumer's
    /// waiting flag without its `SeqCst` fence (and relaxed): it may miss a
    /// consumer that has just found the lane empty, whose wake-up is then
    /// lost.
    NotifyWithoutFence,
}

/// What the lock protects. With the lane store (every policy but
/// keep-newest) the elements are on the lane and `buffer` stays empty; the
/// hand-off, the wakers, the phase and the termination are here either way.
struct State<T, E> {
    /// The locked store: keep-newest (its `Evicted(oldest)` is answered at
    /// the push, which the lane cannot do), and the reference store.
    buffer: Buffer<T>,
    /// An element handed straight to a waiting consumer (Swift's `resume`).
    handoff: Option<T>,
    handed_off: u64,
    consumer: Option<Waker>,
    /// The consumer has polled, found nothing and waits (Swift's `waiting`).
    /// Mirrored in [`Shared::waiting`] for the lock-free push.
    consumer_waiting: bool,
    /// Producers waiting for room (suspend policy), FIFO. Its length is
    /// mirrored in [`Shared::senders_waiting`] for the lock-free take.
    senders: VecDeque<(u64, Waker)>,
    next_sender: u64,
    phase: Phase,
    failure: Option<E>,
    termination: Option<Termination>,
    handler: Option<Handler>,
    producers: usize,
}

/// One stream. The elements are on a lock-free [`Lane`] (pushed with one
/// compare-exchange, taken without the lock), except for keep-newest which
/// keeps the locked [`Buffer`]; everything else is under `state`'s lock.
///
/// **The lane's two hand-shakes**, each a Dekker pair (a store, a `SeqCst`
/// fence, a load of the other side's store), as in `idle.rs`:
///
/// - *a producer and the waiting consumer*: a producer that queued an
///   element on the lane fences and reads `waiting`; the consumer, before it
///   waits, sets `consumer_waiting` and `waiting` under the lock, fences and
///   looks at the lane again. Either the producer sees `waiting` (and wakes
///   the consumer under the lock) or the consumer sees the element.
/// - *the consumer and a waiting sender* (suspend policy): a sender that
///   meets a full lane queues itself under the lock, stores the queue's
///   length in `senders_waiting`, fences and offers again; the consumer,
///   after a take (which publishes the lane's `taken`), fences and reads
///   `senders_waiting`. Either the sender's new offer sees the room, or the
///   consumer sees the sender and wakes the first one.
///
/// A producer that sees `waiting` takes the lock path, where the hand-off
/// of Swift's table is decided exactly as with the locked store: the
/// element goes straight to the consumer when it waits on an empty lane.
/// The consumer reads the lane without the lock until it has waited
/// (`registered`); the poll after a wait takes the lock, so that a
/// hand-off (older than anything on the lane) comes first.
struct Shared<T, E> {
    state: Mutex<State<T, E>>,
    policy: Policy,
    /// `None`: the locked store (`State::buffer`).
    lane: Option<Lane<T>>,
    /// `State::consumer_waiting`, readable without the lock.
    waiting: AtomicBool,
    /// `State::senders.len()`, readable without the lock.
    senders_waiting: AtomicUsize,
    /// The consumer's own flag (only it reads or writes it): it waited, so
    /// its next poll takes the lock (a hand-off may be there).
    registered: AtomicBool,
    #[cfg(turno_loom)]
    inject: Inject,
}

/// Steps of the short looks before a blocking wait
/// ([`Shared::spin_for_element`], [`Shared::send_spinning`]), each a
/// [`backoff`](crate::sync::backoff) step: spins of 1, 2, 4, .. 32 CPU
/// hints, then yields of the core.
#[cfg(not(turno_loom))]
const SPIN_STEPS: u32 = 8;

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

/// One offer under the lock: a verdict (and the consumer to wake), or, for
/// a sender of a full suspend stream, the element back to wait with.
enum Step<T> {
    Done(YieldResult<T>, Option<Waker>),
    Wait(T, Option<Waker>),
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
}

impl<T, E> Shared<T, E> {
    fn new(policy: Policy) -> Self {
        // Keep-newest answers `Evicted(oldest)` at the push: the lane
        // evicts at the consumer, so it stays on the locked store.
        Self::with_store(policy, !matches!(policy, Policy::KeepNewest(_)))
    }

    /// `lock_free`: the elements on a lane (not for keep-newest); false:
    /// on the locked `Buffer`, the reference the lane store is tested
    /// against.
    fn with_store(policy: Policy, lock_free: bool) -> Self {
        assert!(
            !(lock_free && matches!(policy, Policy::KeepNewest(_))),
            "keep-newest streams use the locked store"
        );
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
            lane: lock_free.then(|| Lane::new(policy)),
            waiting: AtomicBool::new(false),
            senders_waiting: AtomicUsize::new(0),
            registered: AtomicBool::new(false),
            #[cfg(turno_loom)]
            inject: Inject::None,
        }
    }

    fn is_suspend(&self) -> bool {
        matches!(self.policy, Policy::Suspend(_))
    }

    /// Sets the consumer's waiting flag and its mirror (under the lock).
    fn set_waiting(&self, st: &mut State<T, E>, waiting: bool) {
        st.consumer_waiting = waiting;
        self.waiting.store(waiting, SeqCst);
    }

    /// Stores the waiting senders' count (under the lock, after every
    /// change of the queue).
    fn sync_senders(&self, st: &State<T, E>) {
        self.senders_waiting.store(st.senders.len(), SeqCst);
    }

    /// The first waiting sender, out of the queue (under the lock).
    fn pop_sender(&self, st: &mut State<T, E>) -> Option<Waker> {
        let w = st.senders.pop_front().map(|(_, w)| w);
        if w.is_some() {
            self.sync_senders(st);
        }
        w
    }

    /// Wakes every waiter: at the termination (under the lock).
    fn wake_all(&self, st: &mut State<T, E>) -> Vec<Waker> {
        let mut wakers: Vec<Waker> = st.senders.drain(..).map(|(_, w)| w).collect();
        self.sync_senders(st);
        if st.consumer_waiting {
            self.set_waiting(st, false);
            wakers.extend(st.consumer.take());
        }
        wakers
    }

    /// The waiting consumer, no longer waiting, to wake (under the lock).
    fn stop_waiting(&self, st: &mut State<T, E>) -> Option<Waker> {
        if st.consumer_waiting {
            self.set_waiting(st, false);
            st.consumer.clone()
        } else {
            None
        }
    }

    /// Room for one more element: in the store, or in the hands of a
    /// waiting consumer.
    fn has_room(&self, st: &State<T, E>) -> bool {
        if st.consumer_waiting && st.handoff.is_none() {
            return true;
        }
        match &self.lane {
            Some(lane) => self.policy.capacity().is_none_or(|c| lane.len() < c),
            None => !st.buffer.is_full(),
        }
    }

    /// Nothing on the lane, not even a claimed element still being written.
    fn lane_empty(&self) -> bool {
        self.lane.as_ref().is_none_or(|l| l.admitted() == 0)
    }

    /// After a lock-free push queued an element: the producer's half of the
    /// first hand-shake (see [`Shared`]).
    fn notify_consumer(&self) {
        #[cfg(turno_loom)]
        if self.inject == Inject::NotifyWithoutFence {
            if self.waiting.load(Relaxed) {
                self.wake_consumer();
            }
            return;
        }
        fence(SeqCst);
        if self.waiting.load(SeqCst) {
            self.wake_consumer();
        }
    }

    #[cold]
    fn wake_consumer(&self) {
        let mut st = self.state.lock();
        let w = self.stop_waiting(&mut st);
        drop(st);
        if let Some(w) = w {
            w.wake();
        }
    }

    /// After a lock-free take, on a suspend stream: the consumer's half of
    /// the second hand-shake (see [`Shared`]).
    fn notify_sender(&self) {
        if !self.is_suspend() {
            return;
        }
        fence(SeqCst);
        if self.senders_waiting.load(SeqCst) > 0 {
            let mut st = self.state.lock();
            let w = self.pop_sender(&mut st);
            drop(st);
            if let Some(w) = w {
                w.wake();
            }
        }
    }

    /// One offer under the lock. `mode`: [`Mode::Muting`] for a sender of a
    /// suspend stream (a full stream answers [`Step::Wait`], uncounted),
    /// [`Mode::Offer`] otherwise.
    fn offer(&self, st: &mut State<T, E>, item: T, mode: Mode) -> Step<T> {
        if st.phase != Phase::Open {
            return Step::Done(YieldResult::Terminated(item), None);
        }
        if st.consumer_waiting && st.handoff.is_none() && self.lane_empty() {
            st.handoff = Some(item);
            st.handed_off += 1;
            let remaining = self.policy.capacity();
            return Step::Done(YieldResult::Enqueued { remaining }, self.stop_waiting(st));
        }
        let Some(lane) = &self.lane else {
            if mode == Mode::Muting && st.buffer.is_full() {
                // Wait, without offering: a refused offer would be counted.
                return Step::Wait(item, None);
            }
            return Step::Done(YieldResult::from_offer(st.buffer.offer(item)), None);
        };
        // The consumer may be waiting for an element still being written
        // on the lane: this one is ready now. Even a refused push wakes it
        // when the lane holds something: the refused producer may be the
        // one that installed the lane's first block, which the consumer
        // could not see before (another producer's element in it included).
        match lane.push(item, mode) {
            Err(item) => {
                let wake = if self.lane_empty() {
                    None
                } else {
                    self.stop_waiting(st)
                };
                Step::Done(YieldResult::Terminated(item), wake)
            }
            Ok(Pushed::WouldSuspend(item)) => {
                let wake = if self.lane_empty() {
                    None
                } else {
                    self.stop_waiting(st)
                };
                Step::Wait(item, wake)
            }
            Ok(Pushed::Done(offer, _)) => {
                let wake = if offer.is_queued() || !self.lane_empty() {
                    self.stop_waiting(st)
                } else {
                    None
                };
                Step::Done(YieldResult::from_offer(offer), wake)
            }
        }
    }

    /// The lock-free push, when the lane store is used and the consumer is
    /// not waiting; `None` hands the element back for the lock path.
    #[inline]
    fn push_lock_free(&self, item: T, mode: Mode) -> Result<YieldResult<T>, T> {
        let Some(lane) = &self.lane else {
            return Err(item);
        };
        if self.waiting.load(SeqCst) {
            // The consumer waits: the lock decides whether it gets the
            // element straight away.
            return Err(item);
        }
        let pushed = lane.push(item, mode);
        if let Ok(Pushed::Done(offer, _)) = &pushed {
            if offer.is_queued() {
                self.notify_consumer();
                let Ok(Pushed::Done(offer, _)) = pushed else {
                    unreachable!("matched above")
                };
                return Ok(YieldResult::from_offer(offer));
            }
        }
        match pushed {
            // Sealed (finished) or closed (cancelled).
            Err(item) => Ok(YieldResult::Terminated(item)),
            Ok(Pushed::WouldSuspend(item)) => Err(item),
            Ok(Pushed::Done(offer, _)) => Ok(YieldResult::from_offer(offer)),
        }
    }

    fn push(&self, item: T) -> YieldResult<T> {
        let item = match self.push_lock_free(item, Mode::Offer) {
            Ok(verdict) => return verdict,
            Err(item) => item,
        };
        let mut st = self.state.lock();
        let step = self.offer(&mut st, item, Mode::Offer);
        drop(st);
        match step {
            Step::Done(verdict, wake) => {
                if let Some(w) = wake {
                    w.wake();
                }
                verdict
            }
            Step::Wait(..) => unreachable!("only a muting offer waits"),
        }
    }

    fn finish(&self, failure: Option<E>) -> bool {
        let mut st = self.state.lock();
        if st.phase != Phase::Open {
            return false;
        }
        st.phase = Phase::Finished;
        if let Some(lane) = &self.lane {
            // Later pushes are refused; what was admitted is still taken.
            lane.seal();
        }
        let t = if failure.is_some() {
            Termination::Failed
        } else {
            Termination::Finished
        };
        st.failure = failure;
        let wake = Wake {
            handler: st.terminate(t),
            wakers: self.wake_all(&mut st),
        };
        drop(st);
        wake.run();
        true
    }

    /// The consumer is gone.
    ///
    /// # Safety
    /// Only the consumer calls it (its drop).
    unsafe fn cancel(&self) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        st.phase = Phase::Cancelled;
        let mut leftovers: Vec<T> = st.buffer.drain().collect();
        if let Some(lane) = &self.lane {
            // SAFETY: forwarded from the caller.
            unsafe { lane.close(|v| leftovers.push(v), drop) };
        }
        leftovers.extend(st.handoff.take());
        st.consumer = None;
        let wake = Wake {
            handler: st.terminate(Termination::Cancelled),
            wakers: self.wake_all(st),
        };
        let failure = st.failure.take();
        drop(guard);
        // Dropped outside the lock: an element's destructor may do anything.
        drop(leftovers);
        drop(failure);
        wake.run();
    }

    /// Takes the next element from the store (under the lock), waking one
    /// waiting sender for the room it leaves.
    ///
    /// # Safety
    /// Only the consumer calls it.
    unsafe fn take_locked(&self, st: &mut State<T, E>) -> Option<(T, Option<Waker>)> {
        let item = match &self.lane {
            // SAFETY: forwarded from the caller.
            Some(lane) => unsafe { lane.take_one(drop) },
            None => st.buffer.take(),
        }?;
        Some((item, self.pop_sender(st)))
    }

    /// The lock-free take (lane store, the consumer has not waited since
    /// its last poll under the lock).
    ///
    /// # Safety
    /// Only the consumer calls it.
    #[inline]
    unsafe fn take_lock_free(&self) -> Option<T> {
        let lane = self.lane.as_ref()?;
        if self.registered.load(Relaxed) {
            return None;
        }
        // SAFETY: forwarded from the caller.
        let item = unsafe { lane.take_one(drop) }?;
        self.notify_sender();
        Some(item)
    }

    /// # Safety
    /// Only the consumer calls it.
    unsafe fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Result<T, E>>> {
        // SAFETY: forwarded from the caller.
        if let Some(item) = unsafe { self.take_lock_free() } {
            return Poll::Ready(Some(Ok(item)));
        }
        let mut st = self.state.lock();
        self.registered.store(false, Relaxed);
        if let Some(item) = st.handoff.take() {
            return Poll::Ready(Some(Ok(item)));
        }
        // SAFETY: forwarded from the caller.
        if let Some((item, sender)) = unsafe { self.take_locked(&mut st) } {
            self.set_waiting(&mut st, false);
            drop(st);
            if let Some(w) = sender {
                w.wake();
            }
            return Poll::Ready(Some(Ok(item)));
        }
        match st.phase {
            Phase::Open => {}
            // Admitted before the seal, still being written: wait for it.
            Phase::Finished if !self.lane_empty() => {}
            Phase::Finished | Phase::Cancelled => {
                self.set_waiting(&mut st, false);
                return Poll::Ready(st.failure.take().map(Err));
            }
        }
        match &st.consumer {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.consumer = Some(cx.waker().clone()),
        }
        self.set_waiting(&mut st, true);
        if self.lane.is_some() {
            self.registered.store(true, Relaxed);
            // The consumer's half of the first hand-shake: an element
            // queued by a producer that did not see `waiting`.
            fence(SeqCst);
            // SAFETY: forwarded from the caller.
            if let Some((item, sender)) = unsafe { self.take_locked(&mut st) } {
                self.set_waiting(&mut st, false);
                self.registered.store(false, Relaxed);
                drop(st);
                if let Some(w) = sender {
                    w.wake();
                }
                return Poll::Ready(Some(Ok(item)));
            }
        }
        // A waiting consumer is room for one element even at capacity 0: let
        // a suspended producer know. Not while the lane holds an element
        // still being written (the consumer waits for it, and a sender
        // woken now would only be refused and wake the consumer again).
        let sender = if self.lane_empty() {
            self.pop_sender(&mut st)
        } else {
            None
        };
        drop(st);
        if let Some(w) = sender {
            w.wake();
        }
        Poll::Pending
    }

    /// # Safety
    /// Only the consumer calls it.
    unsafe fn try_next(&self) -> Result<Option<Result<T, E>>, Empty> {
        // SAFETY: forwarded from the caller.
        if let Some(item) = unsafe { self.take_lock_free() } {
            return Ok(Some(Ok(item)));
        }
        let mut st = self.state.lock();
        if let Some(item) = st.handoff.take() {
            self.registered.store(st.consumer_waiting, Relaxed);
            return Ok(Some(Ok(item)));
        }
        // SAFETY: forwarded from the caller.
        if let Some((item, sender)) = unsafe { self.take_locked(&mut st) } {
            drop(st);
            if let Some(w) = sender {
                w.wake();
            }
            return Ok(Some(Ok(item)));
        }
        match st.phase {
            Phase::Open => Err(Empty),
            // Admitted before the seal, still being written.
            Phase::Finished if !self.lane_empty() => Err(Empty),
            Phase::Finished | Phase::Cancelled => Ok(st.failure.take().map(Err)),
        }
    }

    /// Before a blocking wait for an element: a short look at the lane (its
    /// next slot: a read, no shared write) while the producer is likely to
    /// be a few instructions away, so that the common short gap costs no
    /// park and no lock.
    ///
    /// # Safety
    /// Only the consumer calls it.
    unsafe fn spin_for_element(&self) {
        #[cfg(not(turno_loom))]
        {
            let Some(lane) = &self.lane else { return };
            if self.registered.load(Relaxed) {
                return;
            }
            let mut step = 0;
            for _ in 0..SPIN_STEPS {
                // SAFETY: forwarded from the caller.
                if unsafe { lane.ready() } || lane.is_closed() {
                    return;
                }
                crate::sync::backoff(&mut step);
            }
        }
    }

    /// Before a blocking send: the lock-free push, and on a full suspend
    /// lane a short look at its length (reads, no shared write) while the
    /// consumer is likely to take one soon, offering again when there is
    /// room. `Err` hands the element back for the blocking send.
    fn send_spinning(&self, item: T) -> Result<YieldResult<T>, T> {
        let suspend = self.is_suspend();
        let mode = if suspend { Mode::Muting } else { Mode::Offer };
        #[allow(unused_mut)]
        let mut item = match self.push_lock_free(item, mode) {
            Ok(verdict) => return Ok(verdict),
            Err(item) => item,
        };
        #[cfg(not(turno_loom))]
        if let (true, Some(lane), Some(cap)) = (suspend, &self.lane, self.policy.capacity()) {
            let mut step = 0;
            for _ in 0..SPIN_STEPS {
                if lane.len() < cap {
                    match self.push_lock_free(item, mode) {
                        Ok(verdict) => return Ok(verdict),
                        Err(back) => item = back,
                    }
                }
                crate::sync::backoff(&mut step);
            }
        }
        Err(item)
    }

    /// Elements buffered now (claimed ones still being written included).
    fn len(&self) -> usize {
        match &self.lane {
            None => self.state.lock().buffer.len(),
            Some(lane) if !lane.is_closed() => lane.len(),
            // Sealed by a finish (what was admitted is still there) or
            // closed by the consumer's drop (nothing is).
            Some(lane) => match self.state.lock().phase {
                Phase::Finished => lane.admitted(),
                Phase::Open | Phase::Cancelled => 0,
            },
        }
    }

    fn stats(&self) -> BufferStats {
        let st = self.state.lock();
        let mut stats = match &self.lane {
            Some(lane) => lane.stats(),
            None => st.buffer.stats(),
        };
        stats.offered += st.handed_off;
        stats.taken += st.handed_off - u64::from(st.handoff.is_some());
        stats
    }

    /// One poll of [`SendFuture`]: `id` is the sender's place in the queue.
    fn poll_send(
        &self,
        item: T,
        id: &mut Option<u64>,
        cx: &mut Context<'_>,
    ) -> Result<YieldResult<T>, T> {
        let suspend = self.is_suspend();
        let mode = if suspend { Mode::Muting } else { Mode::Offer };
        let item = if id.is_none() {
            match self.push_lock_free(item, mode) {
                Ok(verdict) => return Ok(verdict),
                Err(item) => item,
            }
        } else {
            item
        };
        let mut st = self.state.lock();
        if suspend && st.phase == Phase::Open {
            // Queue first, then offer: the sender's half of the second
            // hand-shake (see [`Shared`]). A sender that finds room leaves
            // the queue at once below.
            match id.and_then(|id| st.senders.iter_mut().find(|(i, _)| *i == id)) {
                Some((_, w)) => {
                    if !w.will_wake(cx.waker()) {
                        *w = cx.waker().clone();
                    }
                }
                None => {
                    let new = st.next_sender;
                    st.next_sender += 1;
                    *id = Some(new);
                    st.senders.push_back((new, cx.waker().clone()));
                    self.sync_senders(&st);
                }
            }
            if self.lane.is_some() {
                fence(SeqCst);
            }
        }
        let step = self.offer(&mut st, item, mode);
        if let Step::Wait(item, wake) = step {
            drop(st);
            if let Some(w) = wake {
                w.wake();
            }
            return Err(item);
        }
        if let Some(id) = id.take() {
            let before = st.senders.len();
            st.senders.retain(|(i, _)| *i != id);
            if st.senders.len() != before {
                self.sync_senders(&st);
            }
        }
        // Room may remain for the next waiting producer.
        let next = if st.phase == Phase::Open && self.has_room(&st) {
            self.pop_sender(&mut st)
        } else {
            None
        };
        drop(st);
        let Step::Done(verdict, wake) = step else {
            unreachable!("handled above")
        };
        if let Some(w) = wake {
            w.wake();
        }
        if let Some(w) = next {
            w.wake();
        }
        Ok(verdict)
    }

    /// A [`SendFuture`] dropped while queued, or woken and not polled again.
    fn drop_send(&self, id: u64) {
        let mut st = self.state.lock();
        let before = st.senders.len();
        st.senders.retain(|(i, _)| *i != id);
        // Not in the queue: this sender was woken for room it will not use
        // now. Pass the wake-up on, or it is lost.
        let next = if st.senders.len() == before {
            if self.has_room(&st) {
                self.pop_sender(&mut st)
            } else {
                None
            }
        } else {
            self.sync_senders(&st);
            None
        };
        drop(st);
        if let Some(w) = next {
            w.wake();
        }
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
        let item = match self.shared.send_spinning(item) {
            Ok(verdict) => return verdict,
            Err(item) => item,
        };
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
        match this.shared.poll_send(item, &mut this.id, cx) {
            Ok(verdict) => Poll::Ready(verdict),
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
        unsafe { self.shared.try_next() }
            .map(|o| o.map(|r| r.unwrap_or_else(|never| match never {})))
    }

    fn poll_next_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        // SAFETY: `&mut self`: this is the one consumer.
        unsafe { self.shared.poll_next(cx) }
            .map(|o| o.map(|r| r.unwrap_or_else(|never| match never {})))
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
#[path = "buffered_tests.rs"]
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
