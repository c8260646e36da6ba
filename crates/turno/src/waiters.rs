//! What a mailbox keeps for the outside senders waiting for room in it (a
//! full suspend mailbox: [`Addr::send`](crate::Addr::send),
//! [`Addr::send_blocking`](crate::Addr::send_blocking)), and its count of
//! stale replies: a part allocated on first use ([`LazyBox`]), so that an
//! idle actor, which is never waited for and never answered late, pays one
//! word for them (an event, a count of waiting senders and a counter were
//! two and a half).
//!
//! **The handshake.** A refused sender registers (counts itself waiting,
//! allocating the part if it is the first), then tries its send again, and
//! waits only if that try is refused too. A take that makes room below the
//! low watermark (and a close) then looks for registered senders and wakes
//! them. Neither side may miss the other: either the sender's second try
//! sees the room (or the close), or the look sees the sender registered.
//! Both sides fence (the sender's is the heavy side of `crate::asym_fence`,
//! which is at least a `SeqCst` fence; the taker's a `SeqCst` fence), and
//! the two fences are ordered one way or the other:
//!
//! - the sender's fence comes after its registration (the part's
//!   installation and the count's increment), the taker's after its take
//!   (the lane's `taken` store, or its close);
//! - if the sender's fence comes first, everything before it (the part's
//!   pointer and the count) is seen by the taker's loads after its own
//!   fence: the look finds the part and the sender in it, and notifies;
//! - if the taker's fence comes first, the take before it is seen by the
//!   sender's second try after its own fence: the try finds the room.
//!
//! The part's pointer is installed by an acquire-release compare-exchange,
//! which alone orders nothing against the taker: without the sender's
//! fence, a look could find no part although the count in it was raised
//! before the look's fence, and the sender would wait for a wake-up that
//! never comes. `tests/waiters_loom.rs` checks the handshake, and that
//! this fault (`Inject::RegisterWithoutFence`) is found.
//!
//! **Which take looks.** The look costs a fence, so a take below the low
//! watermark looks only when `Mailbox::maybe_waiting` is set, and a take
//! sets it when the depth it read is at least `cap - 1`: a refusal saw
//! `cap` queued, so the first take after it leaves at least `cap - 1`.
//! That depth comes from the take's store of `taken` and then its load of
//! `tail` (`Lane::take`), a store then a load: without a full fence
//! between them the load may read `tail` from before a claim that the
//! refused sender saw, while the store is not yet visible to the sender's
//! retry. (Suspend(2), one queued, a producer claiming the second slot, a
//! sender refused twice: the take of the first reads depth 0, the take of
//! the producer's too, no take sets the flag, and the sender waits for
//! ever.) So the two sides pair once more, asymmetrically
//! (`crate::asym_fence`): the take orders its store before its load with
//! the light side (a compiler fence), and the sender's fence above is the
//! heavy side (`membarrier`: a barrier on every running thread of the
//! process). Either the take's load comes after the barrier forced on its
//! thread, and then reads every claim the sender saw before its call (the
//! depth is `cap - 1` or more and the flag is set, and the look after
//! the take, later still, sees the registration), or its store comes
//! before that barrier, and the sender's retry after the call sees the
//! room. `tests/send_loom.rs` checks
//! this with the real mailbox, and that a take without its light fence
//! (`lane::Inject::TakeWithoutFence`) is found.

use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use event_listener::{Event, EventListener};

use crate::lazy::LazyBox;
use crate::sync::{fence, AtomicU32, AtomicU64};

/// See the [module docs](self).
pub(crate) struct Waiters {
    part: LazyBox<Part>,
    /// Test-only fault injection for the loom model.
    #[cfg(turno_loom)]
    inject: Inject,
}

#[derive(Default)]
struct Part {
    /// Woken when room appears in a suspend mailbox, or when it closes.
    space: Event,
    /// Outside senders currently registered: a look notifies only then.
    /// Four bytes: each waiting sender holds a listener of its own, so four
    /// billion of them would not fit in memory.
    waiting: AtomicU32,
    /// Replies discarded as stale (see [`crate::ask`]).
    stale_replies: AtomicU64,
}

/// A deliberately broken variant, so that a test can show that the loom
/// model catches it.
#[cfg(turno_loom)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Inject {
    /// The correct handshake.
    #[default]
    None,
    /// A sender registers without its fence.
    RegisterWithoutFence,
}

/// An outside sender waiting for room; unregisters on drop (also when the
/// waiting future is cancelled).
pub(crate) struct WaitingSender<'a>(&'a AtomicU32);

impl Drop for WaitingSender<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl Waiters {
    /// Nothing allocated yet.
    pub(crate) fn new() -> Self {
        Waiters {
            part: LazyBox::new(),
            #[cfg(turno_loom)]
            inject: Inject::None,
        }
    }

    fn part(&self) -> &Part {
        (self.part.get_or_init()).expect("the waiters' part is never sealed")
    }

    /// Registers an outside sender waiting for room, until the returned
    /// guard drops, and the listener it will wait on. The sender must try
    /// again after this and before waiting (see the [module docs](self)).
    pub(crate) fn register(&self) -> (WaitingSender<'_>, EventListener) {
        let part = self.part();
        part.waiting.fetch_add(1, SeqCst);
        #[cfg(turno_loom)]
        let fenced = self.inject != Inject::RegisterWithoutFence;
        #[cfg(not(turno_loom))]
        let fenced = true;
        if fenced {
            // Orders the installation and the count before the retry, and
            // the refused try's view of the lane against the takes; see
            // the module docs. The heavy side of the asymmetric pair: the
            // take's side is a compiler fence (`crate::asym_fence`).
            crate::asym_fence::heavy();
        }
        (WaitingSender(&part.waiting), part.space.listen())
    }

    /// After a take that made room (or a close): wakes every registered
    /// sender. Called after the take, so the fence orders the take before
    /// the look.
    pub(crate) fn notify_registered(&self) {
        fence(SeqCst);
        if let Some(part) = self.part.get() {
            if part.waiting.load(SeqCst) > 0 {
                part.space.notify(usize::MAX);
            }
        }
    }

    /// True when a look notified the registered senders (loom models).
    #[cfg(turno_loom)]
    pub(crate) fn notified(&self) -> bool {
        self.part.get().is_some_and(|p| p.space.is_notified())
    }

    pub(crate) fn count_stale(&self) {
        self.part().stale_replies.fetch_add(1, Relaxed);
    }

    pub(crate) fn stale_replies(&self) -> u64 {
        self.part.get().map_or(0, |p| p.stale_replies.load(Relaxed))
    }
}

/// A thin public face of the waiters for `tests/waiters_loom.rs`.
#[cfg(turno_loom)]
pub(crate) mod model {
    pub use super::Inject;
    use super::{Waiters, WaitingSender};
    use event_listener::EventListener;

    /// [`Waiters`] with a fault injected, for the loom model.
    pub struct ModelWaiters(Waiters);

    /// A registered sender: its guard and listener.
    pub struct Registered<'a> {
        _guard: WaitingSender<'a>,
        _listener: EventListener,
    }

    impl ModelWaiters {
        /// Waiters with `inject`.
        pub fn new(inject: Inject) -> Self {
            let mut w = Waiters::new();
            w.inject = inject;
            ModelWaiters(w)
        }

        /// [`Waiters::register`].
        pub fn register(&self) -> Registered<'_> {
            let (guard, listener) = self.0.register();
            Registered {
                _guard: guard,
                _listener: listener,
            }
        }

        /// [`Waiters::notify_registered`].
        pub fn notify_registered(&self) {
            self.0.notify_registered();
        }

        /// True when a look notified the registered senders.
        pub fn notified(&self) -> bool {
            self.0.part.get().is_some_and(|p| p.space.is_notified())
        }
    }
}
