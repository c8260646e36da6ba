//! Pull-based unfold: a stream produced by an async closure, one element per
//! request.
//!
//! Nothing runs until the consumer asks: the closure is called from
//! `poll_next` only, once per element, with the state the previous call
//! returned. `None` ends the stream for good. This is backpressure by
//! construction: a slow consumer simply asks less often, and there is no
//! buffer to fill (the [`rendezvous`](fn@super::rendezvous) channel gives the same
//! guarantee when producer and consumer are separate tasks).
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use turno::stream::{block_on, next, unfold};
//!
//! static CALLS: AtomicU32 = AtomicU32::new(0);
//! let mut pages = Box::pin(unfold(1u32, |page| async move {
//!     CALLS.fetch_add(1, Ordering::SeqCst);
//!     (page <= 3).then(|| (format!("page {page}"), page + 1))
//! }));
//! assert_eq!(CALLS.load(Ordering::SeqCst), 0); // nothing yet: nobody asked
//! assert_eq!(block_on(next(&mut pages)).as_deref(), Some("page 1"));
//! assert_eq!(CALLS.load(Ordering::SeqCst), 1); // exactly one request, one call
//! assert_eq!(block_on(next(&mut pages)).as_deref(), Some("page 2"));
//! assert_eq!(block_on(next(&mut pages)).as_deref(), Some("page 3"));
//! assert_eq!(block_on(next(&mut pages)), None);
//! assert_eq!(block_on(next(&mut pages)), None); // ended for good: no further call
//! assert_eq!(CALLS.load(Ordering::SeqCst), 4);
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::{FusedStream, Stream};

pin_project_lite::pin_project! {
    /// The stream returned by [`unfold`].
    #[must_use = "streams do nothing unless polled"]
    pub struct Unfold<S, F, Fut> {
        state: Option<S>,
        f: F,
        #[pin]
        pending: Option<Fut>,
    }
}

/// A stream whose elements come from `f`, called with the current state each
/// time the consumer asks for the next element. `f` returns
/// `Some((element, next_state))`, or `None` to end the stream.
pub fn unfold<S, T, F, Fut>(init: S, f: F) -> Unfold<S, F, Fut>
where
    F: FnMut(S) -> Fut,
    Fut: Future<Output = Option<(T, S)>>,
{
    Unfold {
        state: Some(init),
        f,
        pending: None,
    }
}

impl<S, T, F, Fut> Stream for Unfold<S, F, Fut>
where
    F: FnMut(S) -> Fut,
    Fut: Future<Output = Option<(T, S)>>,
{
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut this = self.project();
        if this.pending.is_none() {
            // The consumer asks: only now is the producer run.
            let Some(state) = this.state.take() else {
                return Poll::Ready(None);
            };
            this.pending.set(Some((this.f)(state)));
        }
        let Some(fut) = this.pending.as_mut().as_pin_mut() else {
            return Poll::Ready(None);
        };
        match fut.poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(step) => {
                this.pending.set(None);
                Poll::Ready(step.map(|(item, next)| {
                    *this.state = Some(next);
                    item
                }))
            }
        }
    }
}

impl<S, T, F, Fut> FusedStream for Unfold<S, F, Fut>
where
    F: FnMut(S) -> Fut,
    Fut: Future<Output = Option<(T, S)>>,
{
    fn is_terminated(&self) -> bool {
        self.state.is_none() && self.pending.is_none()
    }
}

impl<S, F, Fut> fmt::Debug for Unfold<S, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unfold")
            .field("ended", &(self.state.is_none() && self.pending.is_none()))
            .finish_non_exhaustive()
    }
}
