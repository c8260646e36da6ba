//! A watermark source: a buffered stream that tells its producer when to
//! produce more and when to pause. SwiftNIO's `NIOAsyncSequenceProducer`
//! with its `HighLowWatermark` back-pressure strategy.
//!
//! The producer pushes through a [`Source`]; each push answers
//! [`Demand::ProduceMore`] or [`Demand::StopProducing`] (or
//! [`Demand::Dropped`] once the stream has terminated). When the producer
//! was told to stop, the consumer's progress restarts it through
//! [`WatermarkDelegate::produce_more`]. The rules are NIO's
//! (`NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark` and the
//! `NIOThrowingAsyncSequenceProducer` state machine):
//!
//! - after a push, demand stays on while the depth is below `high`
//!   (`didYield`: `depth < high`); at `depth >= high` the push answers
//!   `StopProducing`;
//! - after the consumer takes an element (or finds the buffer empty), demand
//!   comes back when the depth is below `low` (`didConsume`: `depth < low`);
//!   if demand was off, `produce_more()` is called, once per off-to-on edge;
//! - [`WatermarkDelegate::did_terminate`] is called exactly once: when the
//!   consumer has taken everything after [`Source::finish`], or when the
//!   consumer is dropped. (NIO skips it when the consumer is dropped after
//!   `finish` but before draining; here it is never skipped.)
//!
//! The buffer is the [buffer core](crate::buffer) with
//! [`Policy::Unbounded`]: the watermarks are
//! advisory, a producer that ignores `StopProducing` is not refused.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use turno::stream::{watermark, Demand, HighLowWatermark, WatermarkDelegate};
//!
//! #[derive(Default)]
//! struct Socket { resumed: AtomicU32 }
//! impl WatermarkDelegate for Socket {
//!     fn produce_more(&self) { self.resumed.fetch_add(1, Ordering::SeqCst); }
//!     fn did_terminate(&self) {}
//! }
//!
//! let socket = Arc::new(Socket::default());
//! let marks = HighLowWatermark::new(2, 4).unwrap();
//! let (source, mut stream) = watermark::<u32, _>(marks, socket.clone());
//! assert_eq!(source.push(1), Demand::ProduceMore);
//! assert_eq!(source.push(2), Demand::ProduceMore);
//! assert_eq!(source.push(3), Demand::ProduceMore);
//! assert_eq!(source.push(4), Demand::StopProducing); // depth 4 >= high
//! assert_eq!(stream.next_blocking(), Some(1)); // depth 3: not below low
//! assert_eq!(stream.next_blocking(), Some(2)); // depth 2: not below low
//! assert_eq!(socket.resumed.load(Ordering::SeqCst), 0);
//! assert_eq!(stream.next_blocking(), Some(3)); // depth 1 < low: produce more
//! assert_eq!(socket.resumed.load(Ordering::SeqCst), 1);
//! ```

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_core::Stream;

use super::sync::{block_on, Mutex};
use crate::buffer::{Buffer, BufferStats, Policy};

/// The producer's side of the contract: told when to resume, and when the
/// stream is over.
pub trait WatermarkDelegate: Send + Sync + 'static {
    /// Demand is back (the consumer drained below the low watermark after
    /// the producer was told to stop, or asked for the first element).
    /// Called outside the stream's lock, on the consumer's thread.
    fn produce_more(&self);

    /// The stream is over: finished and fully consumed, or the consumer is
    /// gone. Called exactly once.
    fn did_terminate(&self);
}

/// The answer to a push.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "the demand says whether the producer should go on"]
pub enum Demand {
    /// Keep producing.
    ProduceMore,
    /// Pause until [`WatermarkDelegate::produce_more`].
    StopProducing,
    /// The stream has terminated: the pushed elements were dropped.
    Dropped,
}

/// The watermarks: demand stops at `high`, resumes below `low`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HighLowWatermark {
    low: usize,
    high: usize,
}

/// Watermarks that cannot work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WatermarkError {
    /// `low` must not exceed `high`.
    #[error("low watermark {low} is above high watermark {high}")]
    LowAboveHigh {
        /// The low watermark given.
        low: usize,
        /// The high watermark given.
        high: usize,
    },
    /// A high watermark of 0 would stop the producer before its first element.
    #[error("a high watermark of 0 never lets the producer start")]
    ZeroHigh,
}

/// Share a delegate with the producer: `watermark(marks, Arc::clone(&d))`.
impl<D: WatermarkDelegate> WatermarkDelegate for Arc<D> {
    fn produce_more(&self) {
        (**self).produce_more();
    }

    fn did_terminate(&self) {
        (**self).did_terminate();
    }
}

impl HighLowWatermark {
    /// Checks `low <= high` and `high >= 1`.
    pub fn new(low: usize, high: usize) -> Result<Self, WatermarkError> {
        if high == 0 {
            return Err(WatermarkError::ZeroHigh);
        }
        if low > high {
            return Err(WatermarkError::LowAboveHigh { low, high });
        }
        Ok(HighLowWatermark { low, high })
    }

    /// The low watermark.
    pub fn low(&self) -> usize {
        self.low
    }

    /// The high watermark.
    pub fn high(&self) -> usize {
        self.high
    }

    fn did_yield(&self, depth: usize) -> bool {
        depth < self.high
    }

    fn did_consume(&self, depth: usize) -> bool {
        depth < self.low
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Streaming,
    SourceFinished,
    Finished,
}

struct State<T> {
    buffer: Buffer<T>,
    handoff: Option<T>,
    consumer: Option<Waker>,
    consumer_waiting: bool,
    outstanding_demand: bool,
    phase: Phase,
    terminated: bool,
    sources: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    marks: HighLowWatermark,
    delegate: Box<dyn WatermarkDelegate>,
}

/// The producing end of a [watermark stream](self). Cloneable; the stream
/// finishes when [`finish`](Source::finish) is called or the last clone is
/// dropped.
pub struct Source<T> {
    shared: Arc<Shared<T>>,
}

/// The consumer of a [watermark stream](self): a [`Stream`], with a blocking
/// [`next_blocking`](WatermarkStream::next_blocking).
pub struct WatermarkStream<T> {
    shared: Arc<Shared<T>>,
}

/// A watermark stream with the given marks and delegate.
pub fn watermark<T, D: WatermarkDelegate>(
    marks: HighLowWatermark,
    delegate: D,
) -> (Source<T>, WatermarkStream<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            buffer: Buffer::new(Policy::Unbounded),
            handoff: None,
            consumer: None,
            consumer_waiting: false,
            outstanding_demand: false,
            phase: Phase::Streaming,
            terminated: false,
            sources: 1,
        }),
        marks,
        delegate: Box::new(delegate),
    });
    (
        Source {
            shared: shared.clone(),
        },
        WatermarkStream { shared },
    )
}

impl<T> Shared<T> {
    fn terminate(&self, st: &mut State<T>) -> bool {
        st.phase = Phase::Finished;
        !std::mem::replace(&mut st.terminated, true)
    }
}

impl<T> Source<T> {
    /// Pushes one element (NIO's `yield`).
    #[doc(alias = "yield")]
    pub fn push(&self, item: T) -> Demand {
        self.push_all(std::iter::once(item))
    }

    /// Pushes several elements at once (NIO's `yield(contentsOf:)`).
    pub fn push_all(&self, items: impl IntoIterator<Item = T>) -> Demand {
        let shared = &*self.shared;
        let mut st = shared.state.lock();
        if st.phase != Phase::Streaming {
            drop(st);
            return Demand::Dropped;
        }
        for item in items {
            let _ = st.buffer.offer(item);
        }
        let mut wake = None;
        if st.consumer_waiting && st.handoff.is_none() {
            if let Some(first) = st.buffer.take() {
                st.handoff = Some(first);
                st.consumer_waiting = false;
                wake = st.consumer.take();
            }
        }
        let more = shared.marks.did_yield(st.buffer.len());
        st.outstanding_demand = more;
        drop(st);
        if let Some(w) = wake {
            w.wake();
        }
        if more {
            Demand::ProduceMore
        } else {
            Demand::StopProducing
        }
    }

    /// Finishes the stream: the consumer takes what is buffered, then the
    /// end. Later pushes answer [`Demand::Dropped`].
    pub fn finish(&self) {
        let shared = &*self.shared;
        let mut st = shared.state.lock();
        if st.phase != Phase::Streaming {
            return;
        }
        st.phase = Phase::SourceFinished;
        let mut wake = None;
        let mut terminate = false;
        if st.consumer_waiting {
            // A waiting consumer means an empty buffer: it is over now.
            st.consumer_waiting = false;
            wake = st.consumer.take();
            terminate = shared.terminate(&mut st);
        }
        drop(st);
        if let Some(w) = wake {
            w.wake();
        }
        if terminate {
            shared.delegate.did_terminate();
        }
    }

    /// Elements buffered now.
    pub fn len(&self) -> usize {
        self.shared.state.lock().buffer.len()
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Clone for Source<T> {
    fn clone(&self) -> Self {
        self.shared.state.lock().sources += 1;
        Source {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Source<T> {
    fn drop(&mut self) {
        let last = {
            let mut st = self.shared.state.lock();
            st.sources -= 1;
            st.sources == 0
        };
        if last {
            self.finish();
        }
    }
}

impl<T> WatermarkStream<T> {
    fn poll_next_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let shared = &*self.shared;
        let mut st = shared.state.lock();
        if let Some(item) = st.handoff.take() {
            return Poll::Ready(Some(item));
        }
        match st.phase {
            Phase::Finished => Poll::Ready(None),
            Phase::SourceFinished => match st.buffer.take() {
                Some(item) => Poll::Ready(Some(item)),
                None => {
                    let terminate = shared.terminate(&mut st);
                    drop(st);
                    if terminate {
                        shared.delegate.did_terminate();
                    }
                    Poll::Ready(None)
                }
            },
            Phase::Streaming => {
                let item = st.buffer.take();
                let more = shared.marks.did_consume(st.buffer.len());
                let call = more && !st.outstanding_demand;
                st.outstanding_demand = more;
                let out = match item {
                    Some(item) => Poll::Ready(Some(item)),
                    None => {
                        st.consumer_waiting = true;
                        match &st.consumer {
                            Some(w) if w.will_wake(cx.waker()) => {}
                            _ => st.consumer = Some(cx.waker().clone()),
                        }
                        Poll::Pending
                    }
                };
                drop(st);
                if call {
                    shared.delegate.produce_more();
                }
                out
            }
        }
    }

    /// Waits for the next element, blocking the thread.
    pub fn next_blocking(&mut self) -> Option<T> {
        block_on(std::future::poll_fn(|cx| self.poll_next_inner(cx)))
    }

    /// Elements buffered now.
    pub fn len(&self) -> usize {
        self.shared.state.lock().buffer.len()
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer's counters.
    pub fn stats(&self) -> BufferStats {
        self.shared.state.lock().buffer.stats()
    }
}

impl<T> Stream for WatermarkStream<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().poll_next_inner(cx)
    }
}

impl<T> Drop for WatermarkStream<T> {
    fn drop(&mut self) {
        let shared = &*self.shared;
        let mut guard = shared.state.lock();
        let st = &mut *guard;
        let leftovers: Vec<T> = st.buffer.drain().chain(st.handoff.take()).collect();
        let terminate = shared.terminate(st);
        drop(guard);
        drop(leftovers);
        if terminate {
            shared.delegate.did_terminate();
        }
    }
}

impl<T> fmt::Debug for Source<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("marks", &self.shared.marks)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for WatermarkStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatermarkStream")
            .field("marks", &self.shared.marks)
            .finish_non_exhaustive()
    }
}
