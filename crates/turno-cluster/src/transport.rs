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
}
