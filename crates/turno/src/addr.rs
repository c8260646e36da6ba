//! Addresses: typed, cheap to clone, usable from any thread.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

use event_listener::Listener;

pub use crate::ids::{ActorId, ActorPath};

use crate::buffer::{BufferStats, Policy};
use crate::engine::slot::{Slot, TypedBody};
use crate::mailbox::Mailbox;
use crate::verdict::Verdict;

/// The address of an actor whose message type is `M`.
///
/// Cloning is one atomic increment; sending never allocates (the mailbox's
/// ring buffer is reused). Every send returns a [`Verdict`].
///
/// From inside a turn, send with [`Context::send`](crate::Context::send)
/// instead: it takes part in backpressure (muting) and in the trace of the
/// turn. The methods here are for code outside the actor system.
pub struct Addr<M> {
    /// The actor's mailbox, in its slot (the one allocation): an address
    /// owns one strong reference to the slot, kept as the mailbox's own
    /// address (one word: a send reaches the mailbox with no offset to
    /// compute). The slot's wide address, which counting needs, is in its
    /// header, found from the mailbox as the actor's id is
    /// ([`Addr::slot`]).
    mailbox: NonNull<Mailbox<M>>,
    /// What an address owns.
    _slot: PhantomData<Arc<Slot<dyn TypedBody<M>>>>,
}

// SAFETY: an address is an `Arc<Slot<dyn TypedBody<M>>>` kept thin, which
// is `Send + Sync` whatever `M` (`TypedBody` is `Send + Sync`); it only
// lends the mailbox as a shared reference and counts the slot's `Arc`.
#[allow(unsafe_code)]
unsafe impl<M> Send for Addr<M> {}
// SAFETY: as for `Send`.
#[allow(unsafe_code)]
unsafe impl<M> Sync for Addr<M> {}

#[allow(unsafe_code)]
impl<M> Addr<M> {
    /// An address owning `slot`'s strong reference.
    pub(crate) fn from_slot<B: TypedBody<M>>(slot: Arc<Slot<B>>) -> Self {
        let slot = Arc::into_raw(slot);
        // SAFETY: `slot` points at a live slot (the reference just given
        // up keeps it alive); the projection reads nothing. A `TypedBody<M>`
        // is `repr(C)` with its `Mailbox<M>` first (the trait's contract),
        // so the body's address is the mailbox's.
        let mailbox = unsafe { std::ptr::addr_of!((*slot).body) }.cast::<Mailbox<M>>();
        Addr {
            mailbox: NonNull::new(mailbox.cast_mut()).expect("an Arc's address is not null"),
            _slot: PhantomData,
        }
    }

    /// The mailbox, part of the slot.
    #[inline]
    pub(crate) fn mailbox(&self) -> &Mailbox<M> {
        // SAFETY: the mailbox is part of the slot, which this address
        // keeps alive; only shared references to it are made.
        unsafe { self.mailbox.as_ref() }
    }

    /// The slot, wide, as its `Arc` gave it (from the slot's header).
    #[inline]
    fn slot(&self) -> *const Slot {
        let start = self.mailbox().slot_start();
        // SAFETY: `start` is the start of the live slot this mailbox is
        // part of, with the provenance of the `Arc`'s pointer this address
        // was made from (see `Mailbox::id`).
        unsafe { crate::engine::slot::me_at(start) }
            .get()
            .as_ptr()
            .cast_const()
    }
}

impl<M> Clone for Addr<M> {
    fn clone(&self) -> Self {
        let slot = self.slot();
        // SAFETY: `slot` is the slot's wide address as its `Arc` gave it,
        // and this address holds one of its strong references, so the
        // count is at least one while it is raised; the clone owns the
        // raised one.
        #[allow(unsafe_code)]
        unsafe {
            Arc::increment_strong_count(slot);
        }
        Addr {
            mailbox: self.mailbox,
            _slot: PhantomData,
        }
    }
}

impl<M> Drop for Addr<M> {
    fn drop(&mut self) {
        let slot = self.slot();
        // SAFETY: the slot's wide address as its `Arc` gave it (the same
        // concrete body type, seen through its own vtable), and this
        // address owns one of its strong references, given back once.
        #[allow(unsafe_code)]
        unsafe {
            Arc::decrement_strong_count(slot);
        }
    }
}

impl<M: 'static> fmt::Debug for Addr<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Addr({} {})", self.mailbox().id(), self.mailbox().path())
    }
}

impl<M> PartialEq for Addr<M> {
    fn eq(&self, other: &Self) -> bool {
        // One mailbox, one slot, one actor.
        self.mailbox == other.mailbox
    }
}

impl<M> Eq for Addr<M> {}

impl<M: Send + 'static> Addr<M> {
    /// The actor's id.
    pub fn id(&self) -> ActorId {
        self.mailbox().id()
    }

    /// The actor's name (from [`Props::name`](crate::Props::name), or
    /// `$<id>`): the last segment of its [path](Addr::path).
    pub fn name(&self) -> &str {
        self.mailbox().path().name()
    }

    /// The actor's path from the root, e.g. `/orders/worker`: stable across
    /// runs where every segment was named (see [`ActorPath`]).
    pub fn path(&self) -> &ActorPath {
        self.mailbox().path()
    }

    /// The mailbox policy.
    pub fn policy(&self) -> Policy {
        self.mailbox().policy()
    }

    /// Sends without waiting. A full suspend mailbox answers
    /// [`Verdict::Full`] with the message.
    pub fn try_send(&self, msg: M) -> Verdict<M> {
        self.mailbox().push_user(msg, None, false).0
    }

    /// Offers `msg` again after a [`Verdict::Full`] (counted as an attempt,
    /// not as another message, in [`BufferStats`]).
    pub(crate) fn retry_send(&self, msg: M) -> Verdict<M> {
        self.mailbox().push_user(msg, None, true).0
    }

    /// Retries a send refused as full a few times over a few microseconds
    /// before the caller parks: a suspend mailbox has room again as soon as
    /// its actor takes one message, and a sender that sees it while
    /// spinning saves the two context switches of parking and being woken.
    /// `may_yield`: a blocking sender also yields its thread between the
    /// last tries (an async one must not block its executor).
    fn spin_retry(&self, mut msg: M, may_yield: bool) -> Result<Verdict<M>, M> {
        const SPINS: u32 = 6;
        const YIELDS: u32 = 2;
        for step in 0..SPINS + if may_yield { YIELDS } else { 0 } {
            if step < SPINS {
                crate::sync::spin_hints(step);
            } else {
                std::thread::yield_now();
            }
            match self.retry_send(msg) {
                Verdict::Full(back) => msg = back,
                verdict => return Ok(verdict),
            }
        }
        Err(msg)
    }

    /// Sends, waiting asynchronously while a suspend mailbox is full. Other
    /// policies answer at once. Never returns [`Verdict::Full`].
    ///
    /// A refused sender first retries briefly (a few microseconds of
    /// spinning), then waits; waiting senders are woken together once the
    /// mailbox has drained below its low watermark
    /// ([`Policy::low_watermark`](crate::Policy::low_watermark)), as muted
    /// actor senders are: each wake-up then finds room for a batch.
    pub async fn send(&self, msg: M) -> Verdict<M> {
        let mut msg = match self.try_send(msg) {
            Verdict::Full(back) => back,
            verdict => return verdict,
        };
        msg = match self.spin_retry(msg, false) {
            Ok(verdict) => return verdict,
            Err(back) => back,
        };
        loop {
            let (_waiting, listener) = self.mailbox().wait_for_space();
            match self.retry_send(msg) {
                Verdict::Full(back) => msg = back,
                verdict => return verdict,
            }
            listener.await;
            match self.retry_send(msg) {
                Verdict::Full(back) => msg = back,
                verdict => return verdict,
            }
        }
    }

    /// Sends, blocking the thread while a suspend mailbox is full (woken
    /// below the low watermark, like [`Addr::send`]). Never returns
    /// [`Verdict::Full`]. Do not call it from the thread that runs
    /// the receiving actor: nothing would drain the mailbox.
    pub fn send_blocking(&self, msg: M) -> Verdict<M> {
        match self.send_blocking_until(msg, None) {
            Ok(verdict) => verdict,
            Err(_) => unreachable!("no deadline"),
        }
    }

    /// [`Addr::send_blocking`] that gives up at `deadline`, handing the
    /// message back.
    pub(crate) fn send_blocking_until(
        &self,
        msg: M,
        deadline: Option<std::time::Instant>,
    ) -> Result<Verdict<M>, M> {
        let mut msg = match self.try_send(msg) {
            Verdict::Full(back) => back,
            verdict => return Ok(verdict),
        };
        msg = match self.spin_retry(msg, true) {
            Ok(verdict) => return Ok(verdict),
            Err(back) => back,
        };
        loop {
            let (_waiting, listener) = self.mailbox().wait_for_space();
            match self.retry_send(msg) {
                Verdict::Full(back) => msg = back,
                verdict => return Ok(verdict),
            }
            match deadline {
                None => listener.wait(),
                Some(d) => {
                    if listener.wait_deadline(d).is_none() {
                        return match self.retry_send(msg) {
                            Verdict::Full(back) => Err(back),
                            verdict => Ok(verdict),
                        };
                    }
                }
            }
            match self.retry_send(msg) {
                Verdict::Full(back) => msg = back,
                verdict => return Ok(verdict),
            }
        }
    }

    /// True once the actor has stopped: every later send is a dead letter.
    pub fn is_closed(&self) -> bool {
        self.mailbox().is_closed()
    }

    /// Messages waiting in the user lane now.
    pub fn depth(&self) -> usize {
        self.mailbox().user_len()
    }

    /// The mailbox's counters: messages offered (once each, however often a
    /// waiting sender retried), attempts, taken, dropped, rejected, max depth.
    pub fn stats(&self) -> BufferStats {
        self.mailbox().stats()
    }

    /// Replies that arrived for requests this actor no longer awaited, and
    /// were discarded.
    pub fn stale_replies(&self) -> u64 {
        self.mailbox().stale_replies()
    }
}

/// An outside sender's wait for room, step by step, for the loom model of
/// the take and a waiting sender (`tests/send_loom.rs`): loom cannot run
/// the `event_listener` wait of [`Addr::send_blocking`], so the model
/// registers, retries and then checks the notification by hand.
#[cfg(turno_loom)]
pub(crate) mod model {
    use super::Addr;
    use crate::verdict::Verdict;
    use crate::waiters::{Waiters, WaitingSender};
    use event_listener::EventListener;

    /// A registered sender, as [`Addr::send_blocking`] holds it while it
    /// waits: its guard and listener.
    pub struct Waiting<'a> {
        _guard: WaitingSender<'a>,
        _listener: EventListener,
        waiters: &'a Waiters,
    }

    impl Waiting<'_> {
        /// True when a take (or the close) notified the waiting senders.
        pub fn notified(&self) -> bool {
            self.waiters.notified()
        }
    }

    /// Registers the caller as waiting for room in `addr`'s mailbox, as
    /// [`Addr::send_blocking`] does after a refusal.
    pub fn wait_for_space<M: Send + 'static>(addr: &Addr<M>) -> Waiting<'_> {
        let mailbox = addr.mailbox();
        let (guard, listener) = mailbox.wait_for_space();
        Waiting {
            _guard: guard,
            _listener: listener,
            waiters: mailbox.waiters(),
        }
    }

    /// The retry after the registration (an attempt, not a new message).
    pub fn retry_send<M: Send + 'static>(addr: &Addr<M>, msg: M) -> Verdict<M> {
        addr.retry_send(msg)
    }
}
