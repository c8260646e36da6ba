//! The rendezvous channel: capacity 0, real backpressure.
//!
//! A [`RendezvousSender::send`] completes only when a receiver has *taken*
//! the element: the producer runs at exactly the consumer's pace, and nothing
//! waits in between (no buffer, no bufferbloat). Many producers and many
//! consumers; both ends are `Clone`.
//!
//! - **Cancellation.** A send whose future is dropped before a receiver took
//!   its element delivers nothing: the element is dropped with the future.
//!   (Once taken, it is delivered; the send has then completed, whether or
//!   not anyone polls it again.) A receive whose future is dropped takes
//!   nothing, and passes any wake-up it received on to the next receiver.
//! - **Close.** [`close`](RendezvousSender::close) on either end, or dropping
//!   every receiver, closes the channel: waiting and later sends fail with
//!   [`SendError`] holding the element. Dropping every sender (or closing)
//!   ends the receivers: `recv` answers [`RecvError`], the stream ends.
//! - **Fairness.** Waiting senders are served in arrival order; waiting
//!   receivers are woken in arrival order.
//!
//! ```
//! use turno::stream::rendezvous;
//!
//! let (tx, rx) = rendezvous::<u32>();
//! let consumer = std::thread::spawn(move || rx.recv_blocking().ok());
//! tx.send_blocking(42).unwrap(); // returns once the consumer has it
//! assert_eq!(consumer.join().unwrap(), Some(42));
//! // Nobody receives any more: the channel is closed, the element comes back.
//! assert_eq!(tx.send_blocking(7).unwrap_err().into_inner(), 7);
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_core::Stream;

use super::sync::{block_on, Mutex};

/// The channel is closed: the element was not delivered and comes back.
#[derive(PartialEq, Eq, thiserror::Error)]
#[error("the rendezvous channel is closed: the element was not delivered")]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The element that was not delivered.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

/// The channel is closed (or every sender is gone) and nothing is offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the rendezvous channel is closed and no sender is waiting")]
pub struct RecvError;

struct Offered<T> {
    id: u64,
    item: T,
    waker: Waker,
}

struct State<T> {
    /// Senders waiting for a receiver, with their elements, FIFO.
    offers: VecDeque<Offered<T>>,
    /// Receivers waiting for a sender, FIFO.
    receivers: VecDeque<(u64, Waker)>,
    next_id: u64,
    closed: bool,
    senders: usize,
    receiver_count: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
}

impl<T> State<T> {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn ended(&self) -> bool {
        self.closed || self.senders == 0
    }

    /// Closes; returns every waker to call.
    fn close(&mut self) -> Vec<Waker> {
        self.closed = true;
        let mut w: Vec<Waker> = self.receivers.drain(..).map(|(_, w)| w).collect();
        w.extend(self.offers.iter().map(|o| o.waker.clone()));
        w
    }
}

impl<T> Shared<T> {
    fn close(&self) {
        let wakers = self.state.lock().close();
        for w in wakers {
            w.wake();
        }
    }

    fn poll_send(
        &self,
        item: &mut Option<T>,
        id: &mut Option<u64>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        let mut st = self.state.lock();
        match *id {
            None => {
                let Some(value) = item.take() else {
                    panic!("turno::stream::rendezvous send polled after completion");
                };
                if st.closed || st.receiver_count == 0 {
                    return Poll::Ready(Err(SendError(value)));
                }
                let new = st.id();
                *id = Some(new);
                st.offers.push_back(Offered {
                    id: new,
                    item: value,
                    waker: cx.waker().clone(),
                });
                let receiver = st.receivers.pop_front();
                drop(st);
                if let Some((_, w)) = receiver {
                    w.wake();
                }
                Poll::Pending
            }
            Some(mine) => match st.offers.iter().position(|o| o.id == mine) {
                // Taken by a receiver: delivered.
                None => {
                    *id = None;
                    Poll::Ready(Ok(()))
                }
                Some(pos) if st.closed => {
                    *id = None;
                    let offered = st.offers.remove(pos).map(|o| o.item);
                    drop(st);
                    match offered {
                        Some(value) => Poll::Ready(Err(SendError(value))),
                        None => Poll::Ready(Ok(())),
                    }
                }
                Some(pos) => {
                    let o = &mut st.offers[pos];
                    if !o.waker.will_wake(cx.waker()) {
                        o.waker = cx.waker().clone();
                    }
                    Poll::Pending
                }
            },
        }
    }

    /// A send future went away: withdraw its element if nobody took it.
    fn cancel_send(&self, id: u64) -> Option<T> {
        let mut st = self.state.lock();
        let pos = st.offers.iter().position(|o| o.id == id)?;
        st.offers.remove(pos).map(|o| o.item)
    }

    fn poll_recv(&self, id: &mut Option<u64>, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        let mut st = self.state.lock();
        if let Some(mine) = id.take() {
            st.receivers.retain(|(i, _)| *i != mine);
        }
        if !st.closed {
            if let Some(o) = st.offers.pop_front() {
                drop(st);
                o.waker.wake();
                return Poll::Ready(Ok(o.item));
            }
        }
        if st.ended() {
            return Poll::Ready(Err(RecvError));
        }
        let new = st.id();
        *id = Some(new);
        st.receivers.push_back((new, cx.waker().clone()));
        Poll::Pending
    }

    /// A receive future went away. If it had been woken (it is no longer
    /// queued) and a sender still waits, wake the next receiver instead.
    fn cancel_recv(&self, id: u64) {
        let mut st = self.state.lock();
        let before = st.receivers.len();
        st.receivers.retain(|(i, _)| *i != id);
        let next = if st.receivers.len() == before && !st.offers.is_empty() {
            st.receivers.pop_front()
        } else {
            None
        };
        drop(st);
        if let Some((_, w)) = next {
            w.wake();
        }
    }
}

/// The sending end of a [rendezvous channel](self). Clone it for more
/// producers.
pub struct RendezvousSender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving end of a [rendezvous channel](self). Clone it for more
/// consumers; it is also a [`Stream`] (ending when the channel closes).
pub struct RendezvousReceiver<T> {
    shared: Arc<Shared<T>>,
    /// The registration of this receiver's own `poll_next`.
    id: Option<u64>,
}

/// A rendezvous channel (capacity 0). See the [module docs](self).
pub fn rendezvous<T>() -> (RendezvousSender<T>, RendezvousReceiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            offers: VecDeque::new(),
            receivers: VecDeque::new(),
            next_id: 0,
            closed: false,
            senders: 1,
            receiver_count: 1,
        }),
    });
    (
        RendezvousSender {
            shared: shared.clone(),
        },
        RendezvousReceiver { shared, id: None },
    )
}

impl<T> RendezvousSender<T> {
    /// Offers `item` and waits until a receiver takes it. Fails with the
    /// element when the channel is (or becomes) closed before that.
    /// Cancel-safe: dropping the future before a receiver took the element
    /// delivers nothing.
    pub fn send(&self, item: T) -> SendFuture<'_, T> {
        SendFuture {
            shared: &self.shared,
            item: Some(item),
            id: None,
        }
    }

    /// [`send`](Self::send), blocking the thread.
    pub fn send_blocking(&self, item: T) -> Result<(), SendError<T>> {
        block_on(self.send(item))
    }

    /// Closes the channel for everyone (see the [module docs](self)).
    pub fn close(&self) {
        self.shared.close();
    }

    /// True once the channel is closed or every receiver is gone.
    pub fn is_closed(&self) -> bool {
        let st = self.shared.state.lock();
        st.closed || st.receiver_count == 0
    }
}

impl<T> RendezvousReceiver<T> {
    /// Waits for a sender and takes its element.
    pub fn recv(&self) -> RecvFuture<'_, T> {
        RecvFuture {
            shared: &self.shared,
            id: None,
        }
    }

    /// [`recv`](Self::recv), blocking the thread.
    pub fn recv_blocking(&self) -> Result<T, RecvError> {
        block_on(self.recv())
    }

    /// Takes an element only if a sender is waiting now.
    pub fn try_recv(&self) -> Option<T> {
        let mut st = self.shared.state.lock();
        if st.closed {
            return None;
        }
        let o = st.offers.pop_front()?;
        drop(st);
        o.waker.wake();
        Some(o.item)
    }

    /// Closes the channel for everyone (see the [module docs](self)).
    pub fn close(&self) {
        self.shared.close();
    }
}

impl<T> Clone for RendezvousSender<T> {
    fn clone(&self) -> Self {
        self.shared.state.lock().senders += 1;
        RendezvousSender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Clone for RendezvousReceiver<T> {
    fn clone(&self) -> Self {
        self.shared.state.lock().receiver_count += 1;
        RendezvousReceiver {
            shared: self.shared.clone(),
            id: None,
        }
    }
}

impl<T> Drop for RendezvousSender<T> {
    fn drop(&mut self) {
        let mut st = self.shared.state.lock();
        st.senders -= 1;
        if st.senders == 0 {
            let wakers: Vec<Waker> = st.receivers.drain(..).map(|(_, w)| w).collect();
            drop(st);
            for w in wakers {
                w.wake();
            }
        }
    }
}

impl<T> Drop for RendezvousReceiver<T> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.shared.cancel_recv(id);
        }
        let mut st = self.shared.state.lock();
        st.receiver_count -= 1;
        if st.receiver_count == 0 {
            let wakers = st.close();
            drop(st);
            for w in wakers {
                w.wake();
            }
        }
    }
}

impl<T> Stream for RendezvousReceiver<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        this.shared.poll_recv(&mut this.id, cx).map(Result::ok)
    }
}

impl<T> fmt::Debug for RendezvousSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RendezvousSender").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for RendezvousReceiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RendezvousReceiver").finish_non_exhaustive()
    }
}

/// The future of [`RendezvousSender::send`].
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T> {
    shared: &'a Shared<T>,
    item: Option<T>,
    id: Option<u64>,
}

// Nothing is pinned structurally: the element is moved in and out freely.
impl<T> Unpin for SendFuture<'_, T> {}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.shared.poll_send(&mut this.item, &mut this.id, cx)
    }
}

impl<T> Drop for SendFuture<'_, T> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            // Dropped outside the lock.
            drop(self.shared.cancel_send(id));
        }
    }
}

/// The future of [`RendezvousReceiver::recv`].
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T> {
    shared: &'a Shared<T>,
    id: Option<u64>,
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.shared.poll_recv(&mut this.id, cx)
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.shared.cancel_recv(id);
        }
    }
}
