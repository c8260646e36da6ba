//! The one interface between a node and the message broker: [`Transport`].
//!
//! A node never talks to NATS directly. It publishes, subscribes, sends
//! requests with a reply subject, and polls what arrived, through this
//! trait; [`NatsTransport`](crate::nats::NatsTransport) implements it over
//! a real NATS connection and [`SimTransport`](crate::sim::SimTransport)
//! over the simulated broker with virtual time and seeded faults. One node
//! implementation, two transports.
//!
//! The trait is synchronous and never blocks (but in [`Transport::wait`]):
//! the node is a loop that polls deliveries, runs its turno system, and
//! publishes. Deadlines are kept by the node on its own clock
//! ([`Transport::now`]), not by the transport.
//!
//! **No responders is an answer.** A request (a publish with a reply
//! subject) to a subject nobody subscribes to comes back at once as
//! [`Delivery::NoResponders`] on the reply subject, as NATS does for a
//! client that announces headers support.

use std::time::Duration;

/// Something that arrived on a subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A message.
    Message {
        /// Its subject.
        subject: String,
        /// Its reply subject, for a request.
        reply: Option<String>,
        /// Its bytes.
        payload: Vec<u8>,
    },
    /// The broker's answer to a request that reached no subscriber: the
    /// request's reply subject.
    NoResponders {
        /// The reply subject of the request.
        reply: String,
    },
}

/// Why the transport did not take a publish or subscription.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The client's outgoing buffer is full: the publish was not taken.
    /// Bounded by design; the node turns it into a verdict or a counted
    /// loss, never a silent one.
    #[error("the outgoing buffer is full")]
    Full,
    /// The connection is closed.
    #[error("the connection is closed")]
    Closed,
    /// The transport does not offer this.
    #[error("not supported by this transport")]
    Unsupported,
    /// The broker refused it.
    #[error("broker error: {0}")]
    Broker(String),
    /// A durable publish refused by the stream's per-subject limit (discard
    /// new per subject): nothing was stored.
    #[error("maximum messages per subject exceeded")]
    SubjectFull,
    /// A durable publish got no acknowledgement in time: it may or may not
    /// be stored (publishing again with the same message id is safe).
    #[error("no acknowledgement in time")]
    NoAck,
}

/// A durable mailbox's stream and its one consumer, as the broker is asked
/// to keep them (see [`crate::durable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    /// The stream's name (also the consumer's durable name).
    pub name: String,
    /// The one subject the stream stores.
    pub subject: String,
    /// Messages kept per subject (`None`: no limit).
    pub max_per_subject: Option<u64>,
    /// At the limit, refuse the new message (discard new per subject)
    /// instead of discarding the oldest.
    pub discard_new: bool,
    /// Copies of each message on distinct servers (JetStream replicas).
    pub replicas: usize,
    /// How long a delivered message may stay unacknowledged before it is
    /// delivered again.
    pub ack_wait: Duration,
    /// How long message ids are remembered for deduplication.
    pub duplicate_window: Duration,
    /// Whether the stream has a consumer (a dead-letter stream has none:
    /// it is only read when inspected).
    pub consumer: bool,
}

/// A message of a durable stream delivered to its consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDelivery {
    /// The stream sequence.
    pub seq: u64,
    /// Which delivery of it this is (from 1).
    pub delivery: u64,
    /// Its bytes.
    pub payload: Vec<u8>,
    /// What acknowledging it names (the reply subject on NATS).
    pub ack: String,
}

/// What a durable publish answers: the stream's sequence number, or that it
/// was a duplicate of a message id already stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PubAck {
    /// The stream's sequence of the stored message.
    pub seq: u64,
    /// True when the message id was already stored (nothing new stored).
    pub duplicate: bool,
}

/// The broker as a node sees it. See the [module docs](self).
pub trait Transport {
    /// Publishes `payload` on `subject`, with `reply` as the reply subject
    /// for a request. At most once: taken for sending, not delivered.
    fn publish(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), TransportError>;

    /// Sends a request: a publish with a reply subject, whose answer (or
    /// [`Delivery::NoResponders`]) arrives on `reply` (to which the node
    /// is subscribed). The deadline is the node's business: a request is
    /// never answered "timed out" by the transport.
    fn request(
        &mut self,
        subject: &str,
        reply: &str,
        payload: Vec<u8>,
    ) -> Result<(), TransportError> {
        self.publish(subject, Some(reply), payload)
    }

    /// Subscribes to `subject` (wildcards allowed).
    fn subscribe(&mut self, subject: &str) -> Result<(), TransportError>;

    /// The next delivery, if any arrived; never blocks.
    fn poll(&mut self) -> Option<Delivery>;

    /// Blocks at most `max` until a delivery may be ready (a real transport
    /// sleeps on its channel; the simulated one returns at once: its time
    /// is moved by the simulator).
    fn wait(&mut self, max: Duration) {
        let _ = max;
    }

    /// Lets the client move what it holds, without blocking: a real
    /// transport writes the publishes it queued and reads what arrived
    /// (see [`crate::nats`]); the simulated one has nothing to do. A node
    /// calls it at the end of each pump, so what the pump published leaves
    /// before the node's caller runs its actors.
    fn progress(&mut self) {}

    /// The node's clock: time since an origin of the transport's choosing,
    /// monotonic. Deadlines and heartbeats are measured on it.
    fn now(&self) -> Duration;

    /// A durable publish (JetStream): stored in the stream that holds
    /// `subject`, deduplicated by `msg_id`, acknowledged with its sequence.
    /// Transports without durable streams answer
    /// [`TransportError::Unsupported`].
    fn publish_durable(
        &mut self,
        subject: &str,
        msg_id: &str,
        payload: Vec<u8>,
    ) -> Result<PubAck, TransportError> {
        let _ = (subject, msg_id, payload);
        Err(TransportError::Unsupported)
    }

    /// Creates (or updates) a durable stream and binds its consumer to this
    /// client: explicit acks, one unacknowledged message at a time (so
    /// messages are applied in stream order), no limit on deliveries (the
    /// durable mailbox dead-letters past its own maximum). A consumer left
    /// by an earlier process is taken over with what it had pending.
    fn stream_create(&mut self, spec: &StreamSpec) -> Result<(), TransportError> {
        let _ = spec;
        Err(TransportError::Unsupported)
    }

    /// The next message the consumer of stream `name` delivered, if any;
    /// never blocks.
    fn stream_poll(&mut self, name: &str) -> Option<StreamDelivery> {
        let _ = name;
        None
    }

    /// Acknowledges a delivery of stream `name`: done (`term`: done
    /// without being applied, a dead letter). A lost acknowledgement means
    /// the message is delivered again after the ack wait.
    fn stream_ack(
        &mut self,
        name: &str,
        delivery: &StreamDelivery,
        term: bool,
    ) -> Result<(), TransportError> {
        let _ = (name, delivery, term);
        Err(TransportError::Unsupported)
    }
}
