//! Addresses: typed, cheap to clone, usable from any thread.

use std::fmt;
use std::sync::Arc;

use event_listener::Listener;

pub use crate::ids::{ActorId, ActorPath};

use crate::buffer::{BufferStats, Policy};
use crate::engine::{Slot, TypedBody};
use crate::mailbox::{Mailbox, Verdict};

/// The address of an actor whose message type is `M`.
///
/// Cloning is one atomic increment; sending never allocates (the mailbox's
/// ring buffer is reused). Every send returns a [`Verdict`].
///
/// From inside a turn, send with [`Context::send`](crate::Context::send)
/// instead: it takes part in backpressure (muting) and in the trace of the
/// turn. The methods here are for code outside the actor system.
pub struct Addr<M> {
    /// The actor's slot (its one allocation), seen as its typed mailbox.
    pub(crate) slot: Arc<Slot<dyn TypedBody<M>>>,
}

impl<M: 'static> Addr<M> {
    /// The mailbox, part of the slot.
    #[inline]
    pub(crate) fn mailbox(&self) -> &Mailbox<M> {
        Mailbox::of_body(&self.slot.body)
    }
}

impl<M> Clone for Addr<M> {
    fn clone(&self) -> Self {
        Addr {
            slot: self.slot.clone(),
        }
    }
}

impl<M: 'static> fmt::Debug for Addr<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Addr({} {})", self.slot.id, self.mailbox().path())
    }
}

impl<M> PartialEq for Addr<M> {
    fn eq(&self, other: &Self) -> bool {
        // The allocation, not the vtable (one slot, one actor).
        std::ptr::addr_eq(Arc::as_ptr(&self.slot), Arc::as_ptr(&other.slot))
    }
}

impl<M> Eq for Addr<M> {}

impl<M: Send + 'static> Addr<M> {
    /// The actor's id.
    pub fn id(&self) -> ActorId {
        self.slot.id
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
                for _ in 0..(1u32 << step) {
                    std::hint::spin_loop();
                }
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
