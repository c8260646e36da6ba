//! Request/reply with correlation ids, timeouts as messages, and stale
//! replies discarded.
//!
//! An actor asks with [`Context::ask`](crate::Context::ask): the request
//! carries a [`ReplyTo`] handle with a fresh [`RequestId`], and the asker
//! says how a [`Response`] becomes one of its own messages. Exactly one
//! response per request reaches the handler: the reply, or
//! [`Response::TimedOut`] at the deadline, whichever comes first.
//!
//! **Which comes first** is decided by when the reply *entered the asker's
//! mailbox*, not by when the asker gets to it: a reply enqueued before the
//! deadline wins, even if the asker is still busy when the deadline passes
//! and the timeout signal (system lane) would otherwise be served ahead of
//! the reply (user lane). The reply's enqueue time is taken under the lock
//! of the mailbox's system lane, and the timeout is judged after the timeout
//! signal was taken under the same lock, so the rule holds exactly on every
//! scheduler. A reply enqueued at or after the deadline is stale
//! ([`StaleReason::TimedOut`]), even when taken before the timeout signal.
//! One exception, the policy's own: a reply evicted from a keep-newest
//! mailbox before it was handled is lost (counted as a drop), and the request
//! then times out.
//!
//! **Replies bypass the capacity.** A reply is queued even when the asker's
//! mailbox is full (a `KeepOldest(1)` mailbox can hold a message and a
//! reply): the asker bounds its replies itself, one per request it made, and
//! refusing a reply would only turn it into a timeout. A keep-newest mailbox
//! may still evict a queued reply like any message.
//!
//! A reply that arrives for a request the actor no longer awaits is **stale**:
//! it is discarded, counted ([`Addr::stale_replies`](crate::Addr::stale_replies),
//! the `turno_stale_replies_total` metric) and traced, never handed to the
//! handler as if it were fresh. A request stops being awaited when
//!
//! - a newer request supersedes it ([`Context::supersede`](crate::Context::supersede)),
//! - it times out,
//! - the actor leaves the state that wanted it ([`Context::abandon`](crate::Context::abandon)),
//! - the actor restarts (the new instance never asked).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

pub use crate::ids::{RequestId, StaleReason};

use std::sync::atomic::Ordering;

use crate::addr::Addr;
use crate::sync::AtomicU64;
use crate::time::Instant;
use crate::verdict::Verdict;

/// What an asker receives for one request: exactly one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response<R> {
    /// The fresh reply.
    Reply(R),
    /// No reply was enqueued before the deadline. A reply arriving later is
    /// stale.
    TimedOut,
}

/// The handle a replier uses to answer one request. Send it inside the
/// request message; call [`ReplyTo::reply`] once.
pub struct ReplyTo<R> {
    id: RequestId,
    port: Arc<dyn ReplyPort<R>>,
}

impl<R> ReplyTo<R> {
    #[cfg(feature = "tokio")]
    pub(crate) fn with_port(id: RequestId, port: Arc<dyn ReplyPort<R>>) -> Self {
        ReplyTo { id, port }
    }

    /// The request's correlation id.
    pub fn request_id(&self) -> RequestId {
        self.id
    }

    /// Answers the request. Returns false when the asker has stopped (the
    /// reply is then a dead letter). A reply the asker no longer awaits is
    /// accepted here and discarded as stale on arrival.
    pub fn reply(self, value: R) -> bool {
        self.port.deliver(self.id, value)
    }
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReplyTo({})", self.id)
    }
}

/// Why an ask from outside the actor system ([`Addr::ask_blocking`], or
/// `bridge::ask` from async code) returned no reply.
#[derive(PartialEq, Eq, thiserror::Error)]
pub enum BridgeError<N> {
    /// The actor has stopped: the request is handed back.
    #[error("ask failed: the actor has stopped")]
    Closed(N),
    /// The actor's mailbox is full and rejects (reject policy).
    #[error("ask failed: the actor's mailbox is full and rejected the request")]
    Rejected(N),
    /// The actor's keep-oldest mailbox is full and dropped the request.
    #[error("ask failed: the actor's mailbox is full and dropped the request")]
    Dropped(N),
    /// No reply within the deadline.
    #[error("ask timed out after {0:?}")]
    TimedOut(Duration),
    /// The actor dropped the reply handle without replying.
    #[error("the actor dropped the request without replying")]
    NoReply,
}

// Messages need not be `Debug`.
impl<N> fmt::Debug for BridgeError<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BridgeError::Closed(_) => f.write_str("Closed(..)"),
            BridgeError::Rejected(_) => f.write_str("Rejected(..)"),
            BridgeError::Dropped(_) => f.write_str("Dropped(..)"),
            BridgeError::TimedOut(d) => write!(f, "TimedOut({d:?})"),
            BridgeError::NoReply => f.write_str("NoReply"),
        }
    }
}

/// Delivers a reply into a channel a plain thread waits on.
struct ChannelPort<R>(parking_lot::Mutex<Option<std::sync::mpsc::SyncSender<R>>>);

impl<R: Send> ReplyPort<R> for ChannelPort<R> {
    fn deliver(&self, _id: RequestId, value: R) -> bool {
        match self.0.lock().take() {
            Some(tx) => tx.send(value).is_ok(),
            None => false,
        }
    }
}

impl<M: Send + 'static> Addr<M> {
    /// Asks the actor from a plain thread and blocks until its reply, at
    /// most `timeout` (no tokio needed; from async code use `bridge::ask`).
    ///
    /// A full suspend mailbox makes the caller wait for room; the wait counts
    /// against the timeout. Do not call it from a turn or from the thread of
    /// a single-worker system: nothing would run the actor.
    ///
    /// ```
    /// use std::time::Duration;
    /// use turno::{Actor, Context, Props, ReplyTo, System, ThreadedSystem};
    ///
    /// struct Squarer;
    /// impl Actor for Squarer {
    ///     type Msg = (u64, ReplyTo<u64>);
    ///     fn handle(&mut self, _ctx: &mut Context<'_, Self>, (n, reply): Self::Msg) {
    ///         reply.reply(n * n);
    ///     }
    /// }
    ///
    /// let sys = ThreadedSystem::builder().threads(1).build();
    /// let squarer = sys.spawn(Props::new(), || Squarer).unwrap();
    /// assert_eq!(squarer.ask_blocking(|r| (7, r), Duration::from_secs(5)).unwrap(), 49);
    /// sys.shutdown(Duration::from_secs(5)).unwrap();
    /// ```
    pub fn ask_blocking<R: Send + 'static>(
        &self,
        request: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, BridgeError<M>> {
        let deadline = std::time::Instant::now() + timeout;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let id = self.mailbox().shared.next_request();
        let port = Arc::new(ChannelPort(parking_lot::Mutex::new(Some(tx))));
        let reply_to = ReplyTo { id, port };
        match self.send_blocking_until(request(reply_to), Some(deadline)) {
            Ok(Verdict::Enqueued { .. } | Verdict::Evicting) => {}
            Ok(Verdict::Dropped(m)) => return Err(BridgeError::Dropped(m)),
            Ok(Verdict::Rejected(m) | Verdict::Full(m)) => return Err(BridgeError::Rejected(m)),
            Ok(Verdict::Closed(m)) => return Err(BridgeError::Closed(m)),
            Err(_) => return Err(BridgeError::TimedOut(timeout)),
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(r) => Ok(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(BridgeError::TimedOut(timeout)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(BridgeError::NoReply),
        }
    }
}

/// Turns a reply into the asker's message and queues it.
pub(crate) trait ReplyPort<R>: Send + Sync {
    fn deliver(&self, id: RequestId, value: R) -> bool;
}

/// Builds the asker's timeout message, and knows when the first reply was
/// enqueued.
pub(crate) trait TimeoutPort<M>: Send + Sync {
    fn timed_out(&self) -> M;
    /// When the first reply entered the asker's mailbox, if one did.
    fn replied_at(&self) -> Option<Instant>;
}

struct AskPort<M, R, F> {
    id: RequestId,
    /// The asker.
    addr: Addr<M>,
    on_response: F,
    /// Nanoseconds + 1 of the first reply's enqueue (0: none yet); written
    /// under the lock of the asker's system lane, so whoever takes the
    /// timeout signal from that mailbox afterwards sees it.
    replied_at: AtomicU64,
    _reply: PhantomData<fn(R)>,
}

impl<M, R, F> ReplyPort<R> for AskPort<M, R, F>
where
    M: Send + 'static,
    F: Fn(RequestId, Response<R>) -> M + Send + Sync,
{
    fn deliver(&self, id: RequestId, value: R) -> bool {
        let msg = (self.on_response)(self.id, Response::Reply(value));
        self.addr.mailbox().push_reply(id, msg, |at| {
            let _ = self.replied_at.compare_exchange(
                0,
                at.as_nanos().saturating_add(1),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        })
    }
}

impl<M, R, F> TimeoutPort<M> for AskPort<M, R, F>
where
    M: Send + 'static,
    F: Fn(RequestId, Response<R>) -> M + Send + Sync,
{
    fn timed_out(&self) -> M {
        (self.on_response)(self.id, Response::TimedOut)
    }

    fn replied_at(&self) -> Option<Instant> {
        match self.replied_at.load(Ordering::SeqCst) {
            0 => None,
            n => Some(Instant::from_nanos(n - 1)),
        }
    }
}

/// One allocation per request: the port shared by the reply handle and the
/// pending entry.
pub(crate) fn new_request<M, R, F>(
    id: RequestId,
    addr: Addr<M>,
    on_response: F,
) -> (ReplyTo<R>, Arc<dyn TimeoutPort<M>>)
where
    M: Send + 'static,
    R: Send + 'static,
    F: Fn(RequestId, Response<R>) -> M + Send + Sync + 'static,
{
    let port = Arc::new(AskPort {
        id,
        addr,
        on_response,
        replied_at: AtomicU64::new(0),
        _reply: PhantomData,
    });
    let reply_to = ReplyTo {
        id,
        port: port.clone() as Arc<dyn ReplyPort<R>>,
    };
    (reply_to, port)
}

pub(crate) struct Pending<M> {
    pub(crate) timeout: Arc<dyn TimeoutPort<M>>,
    /// The deadline, when the request has one.
    pub(crate) deadline: Option<Instant>,
    /// The deadline passed while a reply enqueued before it was still
    /// queued: that reply is the response.
    pub(crate) timeout_due: bool,
    /// A reply was evicted by a keep-newest mailbox: it no longer wins over
    /// the deadline.
    pub(crate) reply_lost: bool,
    /// Cancels the work behind the request (a piped future) when it is no
    /// longer awaited.
    pub(crate) cancel: Option<Box<dyn FnOnce() + Send>>,
}

impl<M> Pending<M> {
    pub(crate) fn new(
        timeout: Arc<dyn TimeoutPort<M>>,
        deadline: Option<Instant>,
        cancel: Option<Box<dyn FnOnce() + Send>>,
    ) -> Self {
        Pending {
            timeout,
            deadline,
            timeout_due: false,
            reply_lost: false,
            cancel,
        }
    }

    fn cancel(&mut self) {
        if let Some(c) = self.cancel.take() {
            c();
        }
    }
}

/// What becomes of a reply taken from the asker's mailbox.
pub(crate) enum ReplyFate<M> {
    /// It answers a pending request: deliver it.
    Fresh,
    /// Its request was settled already (answered, timed out, cancelled...).
    Stale(StaleReason),
    /// It was enqueued at or after its request's deadline, which had not yet
    /// been acted on: the reply is stale and this timeout message is the
    /// response.
    Late(M),
}

/// How many settled requests an actor remembers to explain a late reply.
const REMEMBERED: usize = 256;

/// An actor's requests in flight, and the recently settled ones.
pub(crate) struct Asks<M> {
    pending: HashMap<RequestId, Pending<M>>,
    settled: VecDeque<(RequestId, StaleReason)>,
}

impl<M> Default for Asks<M> {
    fn default() -> Self {
        Asks {
            pending: HashMap::new(),
            settled: VecDeque::new(),
        }
    }
}

impl<M> Asks<M> {
    pub(crate) fn insert(&mut self, id: RequestId, p: Pending<M>) {
        self.pending.insert(id, p);
    }

    pub(crate) fn is_pending(&self, id: RequestId) -> bool {
        self.pending.contains_key(&id)
    }

    /// The deadline of `id` passed. `Some(msg)`: deliver the timeout
    /// (settled); `None`: not pending, or a reply enqueued before the
    /// deadline is queued and will be the response.
    pub(crate) fn deadline_passed(&mut self, id: RequestId) -> Option<M> {
        let p = self.pending.get_mut(&id)?;
        let reply_first = match (p.timeout.replied_at(), p.deadline) {
            (Some(at), Some(deadline)) => at < deadline,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if reply_first && !p.reply_lost {
            p.timeout_due = true;
            return None;
        }
        self.settle(id, StaleReason::TimedOut)
            .map(|p| p.timeout.timed_out())
    }

    /// A queued reply to `id` was evicted by the mailbox policy. `Some(msg)`:
    /// its deadline has passed already, deliver the timeout now.
    pub(crate) fn reply_evicted(&mut self, id: RequestId) -> Option<M> {
        let p = self.pending.get_mut(&id)?;
        p.reply_lost = true;
        if !p.timeout_due {
            return None;
        }
        self.settle(id, StaleReason::TimedOut)
            .map(|p| p.timeout.timed_out())
    }

    /// The reply for `id` is taken from the mailbox: what becomes of it.
    ///
    /// A reply enqueued at or after its request's deadline is stale even
    /// when it is taken before the timeout signal (the timer may fire late
    /// on a loaded machine, and the asker may take the reply first): the
    /// request is settled as timed out and the timeout is the response.
    /// Otherwise a pending request is settled by this reply (a second reply
    /// would be stale).
    pub(crate) fn take_reply(&mut self, id: RequestId) -> ReplyFate<M> {
        let Some(p) = self.pending.get(&id) else {
            return ReplyFate::Stale(
                self.settled
                    .iter()
                    .find(|(r, _)| *r == id)
                    .map(|(_, why)| *why)
                    .unwrap_or(StaleReason::Unknown),
            );
        };
        let late = matches!(
            (p.timeout.replied_at(), p.deadline),
            (Some(at), Some(deadline)) if at >= deadline
        );
        if late {
            return match self.settle(id, StaleReason::TimedOut) {
                Some(p) => ReplyFate::Late(p.timeout.timed_out()),
                None => ReplyFate::Stale(StaleReason::TimedOut),
            };
        }
        self.pending.remove(&id);
        self.remember(id, StaleReason::AlreadyAnswered);
        ReplyFate::Fresh
    }

    /// Stops awaiting `id`; later replies will be stale for `why`; the work
    /// behind it, if cancellable, is cancelled.
    pub(crate) fn settle(&mut self, id: RequestId, why: StaleReason) -> Option<Pending<M>> {
        let mut p = self.pending.remove(&id)?;
        p.cancel();
        self.remember(id, why);
        Some(p)
    }

    pub(crate) fn settle_all(&mut self, why: StaleReason) -> usize {
        let all: Vec<_> = self.pending.drain().collect();
        let n = all.len();
        for (id, mut p) in all {
            p.cancel();
            self.remember(id, why);
        }
        n
    }

    fn remember(&mut self, id: RequestId, why: StaleReason) {
        if self.settled.len() == REMEMBERED {
            self.settled.pop_front();
        }
        self.settled.push_back((id, why));
    }

    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request whose first reply entered the mailbox at `replied_at`.
    struct Port(Option<Instant>);

    impl TimeoutPort<&'static str> for Port {
        fn timed_out(&self) -> &'static str {
            "timed out"
        }
        fn replied_at(&self) -> Option<Instant> {
            self.0
        }
    }

    fn asks_with(replied_at: Option<Instant>, deadline: Instant) -> Asks<&'static str> {
        let mut asks = Asks::default();
        let port = Arc::new(Port(replied_at));
        asks.insert(RequestId(7), Pending::new(port, Some(deadline), None));
        asks
    }

    #[test]
    fn a_reply_enqueued_before_the_deadline_is_fresh_once() {
        let deadline = Instant::from_nanos(1_000);
        let mut asks = asks_with(Some(Instant::from_nanos(999)), deadline);
        assert!(matches!(asks.take_reply(RequestId(7)), ReplyFate::Fresh));
        assert!(matches!(
            asks.take_reply(RequestId(7)),
            ReplyFate::Stale(StaleReason::AlreadyAnswered)
        ));
    }

    #[test]
    fn a_reply_enqueued_at_the_deadline_is_late_though_taken_before_the_timeout() {
        // The timer has not fired yet (no `deadline_passed`): the reply is
        // taken first, but it entered the mailbox at the deadline.
        let deadline = Instant::from_nanos(1_000);
        let mut asks = asks_with(Some(deadline), deadline);
        assert!(matches!(
            asks.take_reply(RequestId(7)),
            ReplyFate::Late("timed out")
        ));
        assert!(!asks.is_pending(RequestId(7)));
        // The timer firing afterwards delivers nothing more.
        assert!(asks.deadline_passed(RequestId(7)).is_none());
    }
}
