//! # turno-cluster: turno beyond one machine
//!
//! A **node** is a turno system joined to a message broker under a node
//! name and an incarnation (a new, larger number each start). Actors of
//! one node send to actors of another through subjects
//! ([`subject`]), with envelopes encoded by a compact codec ([`wire`]),
//! over a [`Transport`](transport::Transport): real NATS, or the simulated
//! broker in which a whole cluster runs deterministically under a seed.
//! Actors that need their mail to survive crashes take a durable mailbox
//! ([`durable`]): a JetStream stream, applied once per message.
//!
//! The guarantees of each kind of remote send, the failure model and what
//! is not promised are in `docs/cluster.md`.

pub mod durable;
pub mod local;
#[cfg(feature = "nats")]
pub mod nats;
pub mod node;
pub mod sim;
pub mod subject;
pub mod transport;
pub mod wire;
