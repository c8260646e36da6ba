//! The real transport: a NATS connection through the
//! [async-nats](https://docs.rs/async-nats) client (feature `nats`, on by
//! default).
//!
//! The client runs on a tokio runtime of its own (one worker thread), so
//! the node's loop stays synchronous. Both directions are bounded:
//!
//! - **outgoing**: publishes go through a channel of
//!   [`NatsOptions::out_capacity`] to one writer task (one task: the order
//!   of a node's publishes is kept). A full channel is
//!   [`TransportError::Full`], which the node turns into
//!   [`RemoteVerdict::Unsent`](crate::node::RemoteVerdict::Unsent) or a
//!   counted tell loss, never a silent one;
//! - **incoming**: each subscription forwards into a channel of
//!   [`NatsOptions::in_capacity`]; while it is full, async-nats's own
//!   bounded subscription buffer fills, and past it the server counts the
//!   node a slow consumer and drops (what a tell's at-most-once allows; a
//!   verdict send then ends `Unknown`).
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
use std::time::{Duration, Instant};

use async_nats::{ServerAddr, StatusCode};
use futures_util::StreamExt;
use tokio::sync::mpsc;

use crate::transport::{
    Delivery, PubAck, StreamDelivery, StreamSpec, Transport, TransportError,
};

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
    /// [`TransportError::Full`].
    pub out_capacity: usize,
    /// Deliveries held for the node before the subscriptions stop reading.
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
            in_capacity: 4096,
            connect_timeout: Duration::from_secs(5),
            ping_interval: Duration::from_secs(1),
            ack_timeout: Duration::from_secs(5),
            only_given_servers: false,
        }
    }
}

struct Out {
    subject: String,
    reply: Option<String>,
    payload: Vec<u8>,
}

/// A node's [`Transport`] over a real NATS connection. See the
/// [module docs](self).
///
/// It owns a tokio runtime and blocks on it: use it (and drop it) outside
/// any tokio runtime's async context, as a node's loop does.
pub struct NatsTransport {
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
    out: mpsc::Sender<Out>,
    in_tx: mpsc::Sender<Delivery>,
    in_rx: mpsc::Receiver<Delivery>,
    ready: VecDeque<Delivery>,
    origin: Instant,
    options: NatsOptions,
    /// The durable mailboxes' consumers this client took.
    streams: durable::Streams,
}

impl NatsTransport {
    /// Connects to any of `servers` (e.g. `nats://127.0.0.1:4222`); the
    /// client reconnects to another when its server goes away.
    ///
    /// Not from inside a tokio runtime (the transport blocks on a runtime
    /// of its own): that is [`TransportError::Unsupported`].
    pub fn connect(servers: &[&str], options: NatsOptions) -> Result<Self, TransportError> {
        inside_tokio()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
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
            .reconnect_delay_callback(|n| Duration::from_millis((50 * n as u64).min(1_000)));
        if options.only_given_servers {
            opts = opts.ignore_discovered_servers();
        }
        let client = rt
            .block_on(opts.connect(addrs))
            .map_err(|e| TransportError::Broker(e.to_string()))?;
        let (out, mut out_rx) = mpsc::channel::<Out>(options.out_capacity.max(1));
        let writer = client.clone();
        rt.spawn(async move {
            while let Some(m) = out_rx.recv().await {
                let r = match m.reply {
                    Some(r) => {
                        writer
                            .publish_with_reply(m.subject, r, m.payload.into())
                            .await
                    }
                    None => writer.publish(m.subject, m.payload.into()).await,
                };
                if r.is_err() {
                    // The client is closed: what is queued cannot go.
                    break;
                }
            }
        });
        let (in_tx, in_rx) = mpsc::channel(options.in_capacity.max(1));
        Ok(NatsTransport {
            rt,
            client,
            out,
            in_tx,
            in_rx,
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
        let deadline = Instant::now() + timeout;
        while self.out.capacity() < self.out.max_capacity() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let client = self.client.clone();
        self.rt
            .block_on(async { tokio::time::timeout(timeout, client.flush()).await })
            .is_ok_and(|r| r.is_ok())
    }

    /// The async-nats client, for what the trait does not cover.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }
}

impl Transport for NatsTransport {
    fn publish(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), TransportError> {
        let m = Out {
            subject: subject.to_owned(),
            reply: reply.map(str::to_owned),
            payload,
        };
        self.out.try_send(m).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => TransportError::Full,
            mpsc::error::TrySendError::Closed(_) => TransportError::Closed,
        })
    }

    fn subscribe(&mut self, subject: &str) -> Result<(), TransportError> {
        inside_tokio()?;
        let client = self.client.clone();
        let subject = subject.to_owned();
        let mut sub = self
            .rt
            .block_on(async move { client.subscribe(subject).await })
            .map_err(|e| TransportError::Broker(e.to_string()))?;
        let tx = self.in_tx.clone();
        self.rt.spawn(async move {
            while let Some(m) = sub.next().await {
                let d = if m.status == Some(StatusCode::NO_RESPONDERS) {
                    Delivery::NoResponders {
                        reply: m.subject.to_string(),
                    }
                } else {
                    Delivery::Message {
                        subject: m.subject.to_string(),
                        reply: m.reply.map(|r| r.to_string()),
                        payload: m.payload.to_vec(),
                    }
                };
                if tx.send(d).await.is_err() {
                    break;
                }
            }
        });
        Ok(())
    }

    fn poll(&mut self) -> Option<Delivery> {
        self.ready
            .pop_front()
            .or_else(|| self.in_rx.try_recv().ok())
    }

    fn wait(&mut self, max: Duration) {
        if !self.ready.is_empty() || inside_tokio().is_err() {
            return;
        }
        let rx = &mut self.in_rx;
        if let Ok(Some(d)) = self
            .rt
            .block_on(async { tokio::time::timeout(max, rx.recv()).await })
        {
            self.ready.push_back(d);
        }
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
