//! Streams between independent clocks.
//!
//! A producer and a consumer that run at their own pace need an agreement
//! about what happens when the producer is faster. This module offers the
//! two honest answers:
//!
//! 1. **Buffer with a policy**, and tell the producer the verdict of every
//!    push: [`buffered()`] / [`throwing`] (Swift's `AsyncStream` and
//!    `AsyncThrowingStream`, with their exact semantics). The policy is a
//!    [`Policy`](crate::Policy) of the [buffer core](crate::buffer), the
//!    same code that implements actor mailboxes: keep-newest (the freshest
//!    data, bounded latency), keep-oldest (the earliest data, stale under
//!    overload), unbounded (nothing lost, latency and memory grow without
//!    limit: the bufferbloat hazard), and capacity 0 (only a consumer already
//!    waiting gets anything).
//! 2. **Slow the producer down**, where it can be slowed: the [`rendezvous()`]
//!    channel (send waits until received), the pull-based [`unfold()`] (nothing
//!    runs until asked), and the [`watermark()`] source (high/low watermarks
//!    with produce-more / stop signals, SwiftNIO's `NIOAsyncSequenceProducer`).
//!
//! And [bridges](bridge) to actors: [`pipe_to_actor`] turns a stream into
//! messages (a suspend mailbox becomes backpressure on the stream), and
//! [`actor_output`] makes an actor's output a stream.
//!
//! A stream made with [`buffered_traced()`] records its buffer in a
//! system's trace (each push, loss and take, with the depth), so the
//! inspector plots it over time beside the mailboxes.
//!
//! Every consumer is a [`futures_core::Stream`] and has blocking methods too
//! (`next_blocking`, `recv_blocking`), built on the same state machine through
//! [`block_on`]. A buffered stream's elements travel on the mailboxes'
//! lock-free lane (keep-newest's on the locked buffer); everything else of
//! a stream sits behind one lock, and wakers are called after it is
//! released; the no-lost-wake-up
//! and exactly-once-termination properties are checked by loom
//! (`tests/stream_loom.rs`, run with `RUSTFLAGS="--cfg turno_loom"`) and by threaded
//! stress tests in the normal test suite.
//!
//! | type | producer learns | producer is slowed | many producers | many consumers |
//! |---|---|---|---|---|
//! | [`AsyncStream`] (keep-newest/oldest, unbounded, reject) | [`YieldResult`] per push | no | yes | no |
//! | [`AsyncStream`] with [`Policy::Suspend`](crate::Policy::Suspend) | [`YieldResult`] | [`Continuation::send`] waits for room | yes | no |
//! | [`rendezvous()`] | delivery (`Ok`) or [`SendError`] | every send waits for a receiver | yes | yes |
//! | [`unfold()`] | (it is called on demand) | nothing runs until asked | one closure | one |
//! | [`watermark()`] | [`Demand`] per push | advisory: stop at high, resume below low | yes | no |

pub mod bridge;
// The consumer side of the lane (one consumer: `&mut self`).
#[allow(unsafe_code)]
pub mod buffered;
pub mod rendezvous;
mod sync;
pub mod unfold;
pub mod watermark;

pub use bridge::{actor_output, pipe_to_actor, PipeReport};
pub use buffered::{
    buffered, buffered_traced, throwing, AsyncStream, AsyncThrowingStream, BlockingIter,
    Continuation, Empty, SendFuture, Termination, YieldResult,
};
pub use rendezvous::{rendezvous, RecvError, RendezvousReceiver, RendezvousSender, SendError};
pub use sync::block_on;
pub use unfold::{unfold, Unfold};
pub use watermark::{
    watermark, Demand, HighLowWatermark, Source, WatermarkDelegate, WatermarkError, WatermarkStream,
};

/// The next element of any [`Stream`](futures_core::Stream), as a future: a
/// convenience for code that does not use `futures-util`'s `StreamExt`.
///
/// ```
/// use turno::stream::{block_on, buffered, next};
/// let (tx, mut rx) = buffered::<u8>(turno::Policy::Unbounded);
/// let _ = tx.push(1);
/// assert_eq!(block_on(next(&mut rx)), Some(1));
/// ```
pub fn next<S>(stream: &mut S) -> impl std::future::Future<Output = Option<S::Item>> + '_
where
    S: futures_core::Stream + Unpin + ?Sized,
{
    std::future::poll_fn(move |cx| std::pin::Pin::new(&mut *stream).poll_next(cx))
}
