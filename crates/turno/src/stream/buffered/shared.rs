//! One buffered stream's shared half: the lock-protected state (the
//! hand-off, the wakers, the phase and the termination), the lane the
//! elements travel on, and the two hand-shakes between the lock-free push
//! and take and the parties that wait (see [`Shared`]). The public ends in
//! the [parent module](super) are thin handles on it.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::task::{Context, Poll, Waker};

use super::outcome::{Empty, Termination, YieldResult};
use crate::buffer::{Buffer, BufferStats, Policy};
use crate::lane::{Lane, Mode, OwnLines, Pushed};
use crate::stream::sync::{AtomicBool, AtomicUsize, Mutex};

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
    /// The consumer, before it waits, reads the lane's `tail` by a relaxed
    /// load instead of a read-modify-write: it may miss an element claimed
    /// by a producer that did not see its waiting flag, whose wake-up is
    /// then lost.
    LookWithoutClaimOrder,
    /// A sender of a full suspend stream registers to wait without the
    /// heavy side of the asymmetric fence (`crate::asym_fence`): the
    /// consumer's take may miss it while its new offer misses the room, and
    /// its wake-up is lost.
    RegisterWithoutFence,
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
/// **The lane's two hand-shakes**:
///
/// - *a producer and the waiting consumer*, paired on the lane's `tail`, as
///   crossbeam-channel pairs its receivers: a producer queues an element
///   by a read-modify-write of `tail` (its claim), writes it, then reads
///   `waiting` (no fence: the claim is the barrier); the consumer, before it
///   waits, sets `consumer_waiting` and `waiting` under the lock and reads
///   `tail` by a read-modify-write too ([`Lane::admitted_ordered`]). The two
///   read-modify-writes are ordered: either the producer's claim reads the
///   consumer's (and so sees `waiting`, and wakes the consumer under the
///   lock), or the consumer's sees the claim. Then the consumer does not
///   sleep while a claimed element is not taken: if its producer is still
///   writing it, the consumer wakes itself and polls again (the window is a
///   few instructions, between the claim and the publication).
/// - *the consumer and a waiting sender* (suspend policy), a Dekker pair (a
///   store, a fence, a load of the other side's store), as in `idle.rs`,
///   with the fences asymmetric (`crate::asym_fence`): a sender that meets
///   a full lane queues itself under the lock, stores the queue's length in
///   `senders_waiting`, pays the heavy fence (`membarrier`, which makes the
///   consumer's thread execute a barrier too) and offers again; the
///   consumer, after a take (which publishes the lane's `taken`), passes
///   the light one (a compiler fence) and reads `senders_waiting`. Either
///   the sender's new offer sees the room, or the consumer sees the sender
///   and wakes the first one. A take is frequent and a sender waits only
///   when the lane is full after its short spin, so the barrier moved to
///   the rare side (a `SeqCst` fence on every take was a sixth of the
///   consumer's throughput); where `membarrier` is missing both sides fence.
///
/// A producer that sees `waiting` takes the lock path, where the hand-off
/// of Swift's table is decided exactly as with the locked store: the
/// element goes straight to the consumer when it waits on an empty lane.
/// The consumer reads the lane without the lock until it has waited
/// (`registered`); the poll after a wait takes the lock, so that a
/// hand-off (older than anything on the lane) comes first.
pub(super) struct Shared<T, E> {
    state: Mutex<State<T, E>>,
    pub(super) policy: Policy,
    /// Where a traced stream records its pushes and takes
    /// ([`buffered_traced`](super::buffered_traced)); `None` for most.
    pub(super) trace: Option<Box<super::trace::StreamTracer>>,
    /// The elements' lane, used when `lock_free` (see [`Shared::lane`]).
    /// The consumer's words on lines of their own ([`OwnLines`]): a
    /// stream's two sides run at once. Not an `Option`: its tag would be a
    /// niche in the lane's policy, beside the producers' `tail`, and every
    /// take would read that line as the producers' claims write it (a
    /// third of the take's samples in an spsc profile).
    lane: Lane<T, OwnLines<T>>,
    /// False: the locked store (`State::buffer`), and `lane` stays unused.
    lock_free: bool,
    /// `State::consumer_waiting`, readable without the lock.
    waiting: AtomicBool,
    /// `State::senders.len()`, readable without the lock.
    senders_waiting: AtomicUsize,
    /// The consumer's own flag (only it reads or writes it): it waited, so
    /// its next poll takes the lock (a hand-off may be there).
    registered: AtomicBool,
    #[cfg(turno_loom)]
    pub(super) inject: Inject,
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
    pub(super) fn new(policy: Policy) -> Self {
        // Keep-newest answers `Evicted(oldest)` at the push: the lane
        // evicts at the consumer, so it stays on the locked store.
        Self::with_store(policy, !matches!(policy, Policy::KeepNewest(_)))
    }

    /// `lock_free`: the elements on a lane (not for keep-newest); false:
    /// on the locked `Buffer`, the reference the lane store is tested
    /// against.
    pub(super) fn with_store(policy: Policy, lock_free: bool) -> Self {
        assert!(
            !(lock_free && matches!(policy, Policy::KeepNewest(_))),
            "keep-newest streams use the locked store"
        );
        if lock_free && matches!(policy, Policy::Suspend(_)) {
            // Before the consumer's first take: it uses the light side
            // only once the process is registered for the heavy one.
            crate::asym_fence::init();
        }
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
            trace: None,
            lane: Lane::new(policy),
            lock_free,
            waiting: AtomicBool::new(false),
            senders_waiting: AtomicUsize::new(0),
            registered: AtomicBool::new(false),
            #[cfg(turno_loom)]
            inject: Inject::None,
        }
    }

    /// The lane, or `None` with the locked store.
    #[inline]
    pub(super) fn lane(&self) -> Option<&Lane<T, OwnLines<T>>> {
        self.lock_free.then_some(&self.lane)
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
        match self.lane() {
            Some(lane) => self.policy.capacity().is_none_or(|c| lane.len() < c),
            None => !st.buffer.is_full(),
        }
    }

    /// [`Lane::admitted_ordered`] (with the injected fault, a relaxed look).
    fn admitted_ordered(&self, lane: &Lane<T, OwnLines<T>>) -> usize {
        #[cfg(turno_loom)]
        if self.inject == Inject::LookWithoutClaimOrder {
            return lane.admitted_relaxed();
        }
        lane.admitted_ordered()
    }

    /// Nothing on the lane, not even a claimed element still being written.
    fn lane_empty(&self) -> bool {
        self.lane().is_none_or(|l| l.admitted() == 0)
    }

    /// After a lock-free push queued an element: the producer's half of the
    /// first hand-shake (see [`Shared`]). No fence: the push's claim, a
    /// read-modify-write of the lane's `tail`, came before this load, and
    /// the consumer reads `tail` by one too before it waits.
    fn notify_consumer(&self) {
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
        // The light side of the asymmetric pair: a registering sender
        // pays the barrier (`crate::asym_fence`).
        crate::asym_fence::light();
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
        let Some(lane) = self.lane() else {
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
        let Some(lane) = self.lane() else {
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

    pub(super) fn push(&self, item: T) -> YieldResult<T> {
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

    pub(super) fn finish(&self, failure: Option<E>) -> bool {
        let mut st = self.state.lock();
        if st.phase != Phase::Open {
            return false;
        }
        st.phase = Phase::Finished;
        if let Some(lane) = self.lane() {
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
    pub(super) unsafe fn cancel(&self) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        st.phase = Phase::Cancelled;
        let mut leftovers: Vec<T> = st.buffer.drain().collect();
        if let Some(lane) = self.lane() {
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
        let item = match self.lane() {
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
    pub(super) unsafe fn take_lock_free(&self) -> Option<T> {
        let lane = self.lane()?;
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
    pub(super) unsafe fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Result<T, E>>> {
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
        if let Some(lane) = self.lane() {
            self.registered.store(true, Relaxed);
            // The consumer's half of the first hand-shake: an element
            // claimed by a producer that did not see `waiting`.
            let claimed = self.admitted_ordered(lane);
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
            if claimed > 0 {
                // Claimed, not yet written: its producer may not have seen
                // `waiting`, so it may not wake this consumer. Poll again
                // (still waiting: a producer that sees the flag takes the
                // lock path, as for any waiting consumer).
                drop(st);
                #[cfg(turno_loom)]
                loom::thread::yield_now();
                #[cfg(not(turno_loom))]
                std::hint::spin_loop();
                cx.waker().wake_by_ref();
                return Poll::Pending;
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
    pub(super) unsafe fn try_next(&self) -> Result<Option<Result<T, E>>, Empty> {
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
    pub(super) unsafe fn spin_for_element(&self) {
        #[cfg(not(turno_loom))]
        {
            let Some(lane) = self.lane() else { return };
            if self.registered.load(Relaxed) {
                return;
            }
            let mut step = 0;
            for _ in 0..SPIN_STEPS {
                // Only the next slot: not `tail` (whether the lane was
                // sealed), the producers' word, whose line each look would
                // take from their claims (a large share of an spsc
                // consumer's profile). A seal ends the wait in the poll after
                // the spin, a few steps later.
                // SAFETY: forwarded from the caller.
                if unsafe { lane.ready() } {
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
    pub(super) fn send_spinning(&self, item: T) -> Result<YieldResult<T>, T> {
        let suspend = self.is_suspend();
        let mode = if suspend { Mode::Muting } else { Mode::Offer };
        #[allow(unused_mut)]
        let mut item = match self.push_lock_free(item, mode) {
            Ok(verdict) => return Ok(verdict),
            Err(item) => item,
        };
        #[cfg(not(turno_loom))]
        if let (true, Some(lane), Some(cap)) = (suspend, self.lane(), self.policy.capacity()) {
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
    pub(super) fn len(&self) -> usize {
        match self.lane() {
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

    pub(super) fn stats(&self) -> BufferStats {
        let st = self.state.lock();
        let mut stats = match self.lane() {
            Some(lane) => lane.stats(),
            None => st.buffer.stats(),
        };
        stats.offered += st.handed_off;
        stats.taken += st.handed_off - u64::from(st.handoff.is_some());
        stats
    }

    /// One poll of [`SendFuture`](super::SendFuture): `id` is the sender's
    /// place in the queue.
    pub(super) fn poll_send(
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
            #[cfg(turno_loom)]
            let fenced = self.inject != Inject::RegisterWithoutFence;
            #[cfg(not(turno_loom))]
            let fenced = true;
            if self.lock_free && fenced {
                // The heavy side: it stands for the consumer's fence too.
                crate::asym_fence::heavy();
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

    /// A [`SendFuture`](super::SendFuture) dropped while queued, or woken
    /// and not polled again.
    pub(super) fn drop_send(&self, id: u64) {
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

    /// [`Continuation::on_termination`](super::Continuation::on_termination):
    /// runs `handler` at once if the stream has terminated, else installs it
    /// (outside the lock either way: the replaced handler is dropped after
    /// it).
    pub(super) fn on_termination(&self, handler: Handler) {
        let mut st = self.state.lock();
        match st.termination {
            Some(t) => {
                drop(st);
                handler(t);
            }
            None => {
                let old = st.handler.replace(handler);
                drop(st);
                drop(old);
            }
        }
    }

    /// Finished, failed or cancelled.
    pub(super) fn is_terminated(&self) -> bool {
        self.state.lock().phase != Phase::Open
    }

    /// A producing end was cloned.
    pub(super) fn add_producer(&self) {
        self.state.lock().producers += 1;
    }

    /// A producing end was dropped; true if it was the last one.
    pub(super) fn remove_producer(&self) -> bool {
        let mut st = self.state.lock();
        st.producers -= 1;
        st.producers == 0
    }
}
