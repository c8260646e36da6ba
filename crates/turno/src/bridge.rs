//! Bridges to the async world (tokio), behind the `tokio` feature.
//!
//! Two directions, and neither puts an `await` inside a turn:
//!
//! - **async code asks an actor**: [`ask()`] sends a request carrying a
//!   [`ReplyTo`] and awaits the reply with a deadline. A full suspend mailbox
//!   makes the caller wait for room (backpressure reaches async code).
//! - **an actor delegates a future**: [`Context::pipe`] runs the future on
//!   tokio, off the turn; its output comes back as an ordinary message,
//!   correlated like a reply. If the actor stops, restarts or abandons the
//!   request first, the task is aborted and a late result is discarded as
//!   stale: it can never be mistaken for a fresh one.
//!
//! The runtime that runs piped futures is the one given to the system
//! builder (`tokio(handle)`), or else the one the actor's thread is in.
//!
//! ```
//! use std::time::Duration;
//! use turno::bridge;
//! use turno::ThreadedSystem;
//! use turno::{Actor, Context, Props, ReplyTo, System};
//!
//! struct Squarer;
//! impl Actor for Squarer {
//!     type Msg = (u64, ReplyTo<u64>);
//!     fn handle(&mut self, _ctx: &mut Context<'_, Self>, (n, reply): Self::Msg) {
//!         reply.reply(n * n);
//!     }
//! }
//!
//! let sys = ThreadedSystem::builder().threads(1).build();
//! let squarer = sys.spawn(Props::new(), || Squarer).unwrap();
//! let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! let nine = rt.block_on(bridge::ask(&squarer, |r| (3, r), Duration::from_secs(5)));
//! assert_eq!(nine.unwrap(), 9);
//! sys.shutdown(Duration::from_secs(5)).unwrap();
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::actor::Actor;
use crate::addr::Addr;
use crate::ask::{self, Pending, ReplyPort, ReplyTo, RequestId, Response};
use crate::context::Context;
use crate::timer::TimerKey;
use crate::trace::ActorEvent;
use crate::verdict::Verdict;

pub use crate::ask::BridgeError;

/// Delivers a reply into a oneshot channel.
struct OneshotPort<R>(Mutex<Option<oneshot::Sender<R>>>);

impl<R: Send> ReplyPort<R> for OneshotPort<R> {
    fn deliver(&self, _id: RequestId, value: R) -> bool {
        match self.0.lock().take() {
            Some(tx) => tx.send(value).is_ok(),
            None => false,
        }
    }
}

/// Asks an actor from async code and awaits its reply, at most `timeout`.
///
/// The request is sent with [`Addr::send`]: on a full suspend mailbox this
/// waits for room (the wait counts against the timeout).
pub async fn ask<N, R>(
    to: &Addr<N>,
    request: impl FnOnce(ReplyTo<R>) -> N,
    timeout: Duration,
) -> Result<R, BridgeError<N>>
where
    N: Send + 'static,
    R: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let id = to.mailbox().shared.next_request();
    let reply_to = ReplyTo::with_port(id, Arc::new(OneshotPort(Mutex::new(Some(tx)))));
    let exchange = async {
        match to.send(request(reply_to)).await {
            Verdict::Enqueued { .. } | Verdict::Evicting => {}
            Verdict::Dropped(m) => return Err(BridgeError::Dropped(m)),
            Verdict::Rejected(m) | Verdict::Full(m) => return Err(BridgeError::Rejected(m)),
            Verdict::Closed(m) => return Err(BridgeError::Closed(m)),
        }
        rx.await.map_err(|_| BridgeError::NoReply)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(BridgeError::TimedOut(timeout)),
    }
}

/// [`Context::pipe`] had no tokio runtime to run the future on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no tokio runtime: give one to the system builder with .tokio(handle), or run the system inside a runtime")]
pub struct NoRuntime;

impl<'a, A: Actor> Context<'a, A> {
    /// Runs `future` on tokio, off this turn, and delivers its output as a
    /// message built by `on_done`, correlated by the returned id. With a
    /// `timeout`, [`Response::TimedOut`] arrives instead if it takes longer,
    /// and the task is aborted.
    ///
    /// If the request stops being awaited first ([`Context::abandon`],
    /// a restart, a stop, a timeout), the task is aborted; a result that
    /// still arrives is discarded as stale.
    pub fn pipe<F, T, G>(
        &mut self,
        future: F,
        timeout: Option<Duration>,
        on_done: G,
    ) -> Result<RequestId, NoRuntime>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
        G: Fn(Response<T>) -> A::Msg + Send + Sync + 'static,
    {
        let shared = self.addr.mailbox().shared.clone();
        let handle = match shared.tokio.get() {
            Some(h) => h.clone(),
            None => tokio::runtime::Handle::try_current().map_err(|_| NoRuntime)?,
        };
        let id = shared.next_request();
        let (reply_to, timeout_port) =
            ask::new_request(id, self.addr.clone(), move |_, r| on_done(r));
        let task = handle.spawn(async move {
            let value = future.await;
            reply_to.reply(value);
        });
        let abort = task.abort_handle();
        let deadline = timeout.map(|t| self.now() + t);
        if let Some(deadline) = deadline {
            self.fx
                .edit()
                .timers_set
                .push((TimerKey::Ask(id), deadline));
        }
        self.rare.get(self.stash_capacity).asks.insert(
            id,
            Pending::new(
                timeout_port,
                deadline,
                Some(Box::new(move || abort.abort())),
            ),
        );
        if self.fx.sent.is_some() {
            self.fx.asks.push((id, self.addr.id()));
        }
        let actor = self.addr.id();
        shared.tracer.emit(&shared.clock, || ActorEvent::Ask {
            actor: actor.into(),
            request: id.into(),
            to: actor.into(),
        });
        Ok(id)
    }
}
