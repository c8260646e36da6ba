//! Bridges between streams and actors.
//!
//! - [`pipe_to_actor`]: each element of a stream becomes one message to an
//!   actor. The pipe awaits [`Addr::send`], so when the actor's mailbox
//!   policy is [`Policy::Suspend`] a full mailbox
//!   stops the pipe, the pipe stops pulling, and the stream's own policy
//!   takes over upstream: a [`rendezvous`](fn@super::rendezvous) or
//!   [`unfold`](fn@super::unfold) source is slowed down for real, a
//!   [`buffered`](fn@super::buffered) one fills and applies its policy. Other
//!   mailbox policies answer at once and the pipe tallies their verdicts.
//! - [`actor_output`]: an actor's output as a stream. The actor keeps the
//!   [`Continuation`] in its state and pushes from its turns: a push never
//!   blocks, so it fits in a turn, and its [`YieldResult`](super::YieldResult)
//!   tells the actor at once whether the element was kept.
//!
//! ```
//! use std::future::Future;
//! use std::sync::{Arc, Mutex};
//! use std::task::{Context, Poll, Waker};
//! use turno::stream::{actor_output, buffered, pipe_to_actor};
//! use turno::{Actor, Context as Turn, DetSystem, Policy, Props, System};
//!
//! /// Doubles each number it gets and emits it on its output stream.
//! struct Doubler { out: turno::stream::Continuation<u64> }
//! impl Actor for Doubler {
//!     type Msg = u64;
//!     fn handle(&mut self, _ctx: &mut Turn<'_, Self>, n: u64) {
//!         let _ = self.out.push(2 * n);
//!     }
//! }
//!
//! let mut sys = DetSystem::new(1);
//! let (out, mut doubled) = actor_output::<u64>(Policy::Unbounded);
//! let mut out = Some(out);
//! let doubler = sys
//!     .spawn(Props::new().mailbox(Policy::Suspend(2)), move || Doubler { out: out.take().unwrap() })
//!     .unwrap();
//!
//! let (tx, input) = buffered::<u64>(Policy::Unbounded);
//! for n in 1..=5 { let _ = tx.push(n); }
//! drop(tx); // finishes the input
//! let mut pipe = Box::pin(pipe_to_actor(input, &doubler, |n| n));
//! let mut cx = Context::from_waker(Waker::noop());
//! // The mailbox holds 2: the pipe stops there and waits.
//! assert!(pipe.as_mut().poll(&mut cx).is_pending());
//! assert_eq!(doubler.depth(), 2);
//! // The actor drains its mailbox, room appears, the pipe goes on.
//! let report = loop {
//!     sys.run_until_idle().unwrap();
//!     if let Poll::Ready(r) = pipe.as_mut().poll(&mut cx) { break r; }
//! };
//! sys.run_until_idle().unwrap();
//! assert_eq!(report.enqueued, 5);
//! assert_eq!(doubled.blocking_iter().take(5).collect::<Vec<_>>(), [2, 4, 6, 8, 10]);
//! ```

use std::future::poll_fn;
use std::pin::pin;

use futures_core::Stream;

use super::buffered::{buffered, AsyncStream, Continuation};
use crate::addr::Addr;
use crate::buffer::Policy;
use crate::verdict::Verdict;

/// What a [`pipe_to_actor`] did, verdict by verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeReport {
    /// Messages queued without loss.
    pub enqueued: u64,
    /// Sends that cost a message: the piped one (keep-oldest) or an older
    /// queued one evicted for it (keep-newest).
    pub dropped: u64,
    /// Messages a reject mailbox handed back (lost to the pipe).
    pub rejected: u64,
    /// The actor stopped: the pipe ended early, dropping the stream (which
    /// cancels a turno stream upstream). The message that met the closed
    /// mailbox is counted as a dead letter by the actor system.
    pub closed: bool,
}

/// Sends each element of `stream`, mapped by `map`, to the actor at `to`,
/// awaiting room in a suspend mailbox (real backpressure), until the stream
/// ends or the actor stops. See the [module docs](self).
///
/// The future needs no particular executor: it only awaits the stream and
/// the mailbox.
pub async fn pipe_to_actor<S, M, F>(stream: S, to: &Addr<M>, mut map: F) -> PipeReport
where
    S: Stream,
    F: FnMut(S::Item) -> M,
    M: Send + 'static,
{
    let mut stream = pin!(stream);
    let mut report = PipeReport::default();
    while let Some(item) = poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
        match to.send(map(item)).await {
            Verdict::Enqueued { .. } => report.enqueued += 1,
            // The incoming message is queued but an older one is lost.
            Verdict::Evicting | Verdict::Dropped(_) => report.dropped += 1,
            Verdict::Rejected(_) => report.rejected += 1,
            // `send` waits instead of answering Full; treat it as closed if
            // it ever did, rather than spin.
            Verdict::Full(_) | Verdict::Closed(_) => {
                report.closed = true;
                break;
            }
        }
    }
    report
}

/// An actor's output as a stream: a [`buffered`] stream whose
/// [`Continuation`] the actor keeps and pushes to from its turns. See the
/// [module docs](self) for an example.
///
/// Pick the policy for the consumer you have: a slow consumer of an
/// [`Policy::Unbounded`] output is the bufferbloat hazard; a
/// [`Policy::Suspend`] output answers [`Full`](super::YieldResult::Full) to a
/// turn's push (a turn never waits), and the actor decides what to do with
/// the element (keep it, retry on a timer, drop it).
pub fn actor_output<T>(policy: Policy) -> (Continuation<T>, AsyncStream<T>) {
    buffered(policy)
}
