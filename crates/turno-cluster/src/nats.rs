//! The real transport: a NATS connection through the
//! [async-nats](https://docs.rs/async-nats) client (feature `nats`, on by
//! default).
//!
//! **The client runs on the node's thread.** It lives on a single-threaded
//! tokio runtime that only the transport's own calls drive: nothing else
//! runs beside the node's loop, and no message crosses a thread on its way
//! between the socket and the node. A publish goes straight into the
//! client's command queue; what arrived is read straight from the
//! subscriptions. The socket is read and written when a pump ends
//! ([`Transport::progress`]), while the node waits ([`Transport::wait`]),
//! and when a publish finds the queue full: a node that stops pumping
//! stops reading, and the server holds what arrives meanwhile (up to its
//! own limit for a slow consumer, past which it closes the connection and
//! the client connects again).
//!
//! Both directions are bounded:
//!
//! - **outgoing**: the client's command queue holds
//!   [`NatsOptions::out_capacity`] publishes. When it is full, the
//!   transport lets the client write what it holds and tries once more;
//!   still full is [`TransportError::Full`], which the node turns into
//!   [`RemoteVerdict::Unsent`](crate::node::RemoteVerdict::Unsent) or a
//!   counted tell loss, never a silent one. One queue, one connection: the
//!   order of a node's publishes is kept.
//! - **incoming**: each subscription holds [`NatsOptions::in_capacity`]
//!   messages; past it the client drops (what a tell's at-most-once
//!   allows: the receiver counts the gap; a verdict send then ends
//!   `Unknown`). Each subscription keeps its messages in the order the
//!   server sent them; between two subscriptions no order is promised,
//!   which is why a sender's tells and the marker that announces their
//!   tail travel on one subscription (see [`crate::node`]).
//!
//! "No responders": a publish with a reply subject to a subject without
//! subscribers comes back from the server as a status-503 message on the
//! reply subject; it is handed to the node as
//! [`Delivery::NoResponders`].
//!
//! ```no_run
//! use turno_cluster::nats::{NatsOptions, NatsTransport};
//!
//! let t = NatsTransport::connect(
//!     &["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"],
//!     NatsOptions::default(),
//! )
//! .unwrap();
//! # drop(t);
//! ```

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_nats::{ServerAddr, StatusCode};
use bytes::Bytes;
use futures_util::StreamExt;

use crate::transport::{Delivery, PubAck, StreamDelivery, StreamSpec, Transport, TransportError};

mod durable;

/// Blocking on the transport's own runtime from inside another runtime
/// would panic; it is refused instead.
fn inside_tokio() -> Result<(), TransportError> {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => Err(TransportError::Unsupported),
        Err(_) => Ok(()),
    }
}

/// How a [`NatsTransport`] connects and how much it buffers.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// Publishes the client holds before `publish` answers
    /// [`TransportError::Full`] (the client's command queue).
    pub out_capacity: usize,
    /// Messages each subscription holds for the node; past it the client
    /// drops what arrives.
    pub in_capacity: usize,
    /// How long the first connection may take.
    pub connect_timeout: Duration,
    /// The client's ping interval (how fast it notices a dead server).
    pub ping_interval: Duration,
    /// How long a durable publish waits for the stream's acknowledgement.
    pub ack_timeout: Duration,
    /// Connect only to the servers given, never to those the cluster
    /// advertises (default: false, the client learns the cluster's other
    /// servers and may fail over to them).
    pub only_given_servers: bool,
}

impl Default for NatsOptions {
    fn default() -> Self {
        NatsOptions {
            out_capacity: 4096,
            in_capacity: 65_536,
            connect_timeout: Duration::from_secs(5),
            ping_interval: Duration::from_secs(1),
            ack_timeout: Duration::from_secs(5),
            only_given_servers: false,
        }
    }
}

/// A node's [`Transport`] over a real NATS connection. See the
/// [module docs](self).
///
/// It owns a single-threaded tokio runtime and blocks on it: use it (and
/// drop it) outside any tokio runtime's async context, as a node's loop
/// does.
pub struct NatsTransport {
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
    subs: Vec<async_nats::Subscriber>,
    /// The subscription polled first next time: each gets its turn, so a
    /// flood on one does not hide the others.
    turn: usize,
    ready: VecDeque<Delivery>,
    origin: Instant,
    options: NatsOptions,
    /// The durable mailboxes' consumers this client took.
    streams: durable::Streams,
}

fn delivery(m: async_nats::Message) -> Delivery {
    if m.status == Some(StatusCode::NO_RESPONDERS) {
        Delivery::NoResponders {
            reply: m.subject.to_string(),
        }
    } else {
        Delivery::Message {
            subject: m.subject.to_string(),
            reply: m.reply.map(|r| r.to_string()),
            payload: m.payload.to_vec(),
        }
    }
}

impl NatsTransport {
    /// Connects to any of `servers` (e.g. `nats://127.0.0.1:4222`); the
    /// client reconnects to another when its server goes away.
    ///
    /// Not from inside a tokio runtime (the transport blocks on a runtime
    /// of its own): that is [`TransportError::Unsupported`].
    pub fn connect(servers: &[&str], options: NatsOptions) -> Result<Self, TransportError> {
        inside_tokio()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TransportError::Broker(e.to_string()))?;
        let addrs: Vec<ServerAddr> = servers
            .iter()
            .map(|s| {
                s.parse::<ServerAddr>()
                    .map_err(|e| TransportError::Broker(e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let mut opts = async_nats::ConnectOptions::new()
            .connection_timeout(options.connect_timeout)
            .ping_interval(options.ping_interval)
            .client_capacity(options.out_capacity.max(1))
            .subscription_capacity(options.in_capacity.max(1))
            .reconnect_delay_callback(|n| Duration::from_millis((50 * n as u64).min(1_000)));
        if options.only_given_servers {
            opts = opts.ignore_discovered_servers();
        }
        let client = rt
            .block_on(opts.connect(addrs))
            .map_err(|e| TransportError::Broker(e.to_string()))?;
        Ok(NatsTransport {
            rt,
            client,
            subs: Vec::new(),
            turn: 0,
            ready: VecDeque::new(),
            origin: Instant::now(),
            options,
            streams: durable::Streams::default(),
        })
    }

    /// Waits until every publish taken so far reached the server (at most
    /// `timeout`). True if it did.
    pub fn flush(&mut self, timeout: Duration) -> bool {
        if inside_tokio().is_err() {
            return false;
        }
        let client = self.client.clone();
        self.rt
            .block_on(async { tokio::time::timeout(timeout, client.flush()).await })
            .is_ok_and(|r| r.is_ok())
    }

    /// The async-nats client, for what the trait does not cover. Its
    /// futures run only while the transport drives its runtime (see the
    /// [module docs](self)).
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// Lets the client run what is ready: write the publishes queued, read
    /// what the socket holds into the subscriptions. Never blocks.
    fn drive(&mut self) {
        if inside_tokio().is_err() {
            return;
        }
        // Each yield lets the runtime run the connection's task, then poll
        // the socket once without waiting: the first run writes what is
        // queued, the second hands what was read to the subscriptions.
        // What reading made to write (a pong) leaves at the next drive.
        self.rt.block_on(async {
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
        });
    }

    /// One publish into the client's command queue, if it has room now.
    fn try_publish(&self, subject: &str, reply: Option<&str>, payload: Bytes) -> Poll<bool> {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        // The queue is a bounded channel: a send polled once either takes
        // its place at once or, dropped while pending, takes none.
        let r = match reply {
            Some(r) => {
                pin!(self
                    .client
                    .publish_with_reply(subject.to_owned(), r.to_owned(), payload))
                .poll(&mut cx)
            }
            None => pin!(self.client.publish(subject.to_owned(), payload)).poll(&mut cx),
        };
        r.map(|r| r.is_ok())
    }

    /// The next message a subscription holds, each subscription in turn.
    fn take(&mut self) -> Option<Delivery> {
        if let Some(d) = self.ready.pop_front() {
            return Some(d);
        }
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let n = self.subs.len();
        for i in 0..n {
            let k = (self.turn + i) % n;
            if let Poll::Ready(Some(m)) = self.subs[k].poll_next_unpin(&mut cx) {
                self.turn = (k + 1) % n;
                return Some(delivery(m));
            }
        }
        None
    }
}

impl Drop for NatsTransport {
    fn drop(&mut self) {
        // A subscriber unsubscribes on drop through a task of the runtime
        // it belongs to: it is dropped inside that runtime's context.
        let _in_runtime = self.rt.enter();
        self.subs.clear();
        self.streams = durable::Streams::default();
    }
}

impl Transport for NatsTransport {
    fn publish(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), TransportError> {
        let payload = Bytes::from(payload);
        let mut r = self.try_publish(subject, reply, payload.clone());
        if r.is_pending() {
            // Full: let the client write what it holds, then try again.
            self.drive();
            r = self.try_publish(subject, reply, payload);
        }
        match r {
            Poll::Ready(true) => Ok(()),
            Poll::Ready(false) => Err(TransportError::Closed),
            Poll::Pending => Err(TransportError::Full),
        }
    }

    fn subscribe(&mut self, subject: &str) -> Result<(), TransportError> {
        inside_tokio()?;
        let client = self.client.clone();
        let subject = subject.to_owned();
        let sub = self
            .rt
            .block_on(async move { client.subscribe(subject).await })
            .map_err(|e| TransportError::Broker(e.to_string()))?;
        self.subs.push(sub);
        Ok(())
    }

    fn poll(&mut self) -> Option<Delivery> {
        // What the last drive or wait read; the socket itself is read at the
        // end of each pump (`progress`) and while waiting.
        self.take()
    }

    fn wait(&mut self, max: Duration) {
        if !self.ready.is_empty() || inside_tokio().is_err() {
            return;
        }
        let subs = &mut self.subs;
        let got = self.rt.block_on(async {
            let any = std::future::poll_fn(|cx| {
                for s in subs.iter_mut() {
                    if let Poll::Ready(Some(m)) = s.poll_next_unpin(cx) {
                        return Poll::Ready(m);
                    }
                }
                Poll::Pending
            });
            tokio::time::timeout(max, any).await
        });
        if let Ok(m) = got {
            self.ready.push_back(delivery(m));
        }
    }

    fn progress(&mut self) {
        self.drive();
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn publish_durable(
        &mut self,
        subject: &str,
        msg_id: &str,
        payload: Vec<u8>,
    ) -> Result<PubAck, TransportError> {
        self.durable_publish(subject, msg_id, payload)
    }

    fn stream_create(&mut self, spec: &StreamSpec) -> Result<(), TransportError> {
        self.durable_create(spec)
    }

    fn stream_poll(&mut self, name: &str) -> Option<StreamDelivery> {
        self.durable_poll(name)
    }

    fn stream_ack(
        &mut self,
        _name: &str,
        delivery: &StreamDelivery,
        term: bool,
    ) -> Result<(), TransportError> {
        if delivery.ack.is_empty() {
            return Err(TransportError::Broker("no ack subject".into()));
        }
        let body: &[u8] = if term { b"+TERM" } else { b"+ACK" };
        self.publish(&delivery.ack, None, body.to_vec())
    }
}
