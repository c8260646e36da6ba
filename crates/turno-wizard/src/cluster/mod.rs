//! The signup wizard on three nodes (`turno demo cluster`, feature
//! `cluster`): the same pages and chart as the single-node wizard, with
//! each signup session a sharded durable entity instead of an actor of one
//! server.
//!
//! - [`demo`]: the process supervisor. It starts a three-server NATS
//!   cluster, a private PostgreSQL server on loopback (turno-store's
//!   [`TempCluster`](turno_store::postgres::TempCluster)), the payment
//!   gateway as its own service (turno-gateway's
//!   [`HttpGateway`](turno_gateway::http::HttpGateway)), three wizard node
//!   processes, and a front door on loopback that hands each request to a
//!   live node in turn. It carries out the fault panel's "kill", "pause"
//!   and "partition the owner node", and on Ctrl-C stops everything it
//!   started (the nodes first: each hands its shards over).
//! - A **node** ([`run_node`]) is a process: an
//!   [`EntityHost`](turno_entity::EntityHost) of the signup chart on
//!   PostgreSQL (shards held through lease rows; every macrostep of a
//!   session committed with its owner's epoch before its effects), joined
//!   to the others over NATS (turno-entity's `EntityNode`), and the
//!   wizard's pages over HTTP. A page's event for a session whose shard
//!   another node owns goes to that node over NATS; a page's view is the
//!   session's committed snapshot, read from the store by whichever node
//!   serves the page, which says on the page which node served it and which
//!   owns the session.
//!
//! What a fault does to a signup mid-submit: the owner is gone (killed),
//! frozen (paused) or cut off from PostgreSQL (partitioned). Its lease runs
//! out ([`LEASE_TTL`]), a live node takes the shard over under a newer
//! epoch, and the next request for the session (the page's poll) wakes it
//! there from its snapshot: a charge that was in flight resumes in
//! `uncertain` and is looked up by its idempotency key, never sent again.
//! A paused owner that wakes up cannot commit what it held: its write
//! carries the old epoch and is refused (fenced).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod demo;
mod home;
mod node;
mod web;

pub use demo::{ClusterConfig, ClusterDemo, ClusterError};
pub use node::run_node;

/// The number of shards the sessions are spread over (the same on every
/// node).
pub const SHARDS: u32 = 12;

/// How long a node's shard lease holds unless renewed: a node that stops
/// renewing (dead, paused, cut off) loses its shards this long after its
/// last renewal.
pub const LEASE_TTL: Duration = Duration::from_secs(2);

/// What a node process is started with (the supervisor passes it as JSON
/// in `TURNO_NODE_CONFIG`; see [`run_node`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeConfig {
    /// The node's name (`n1`, `n2`, `n3`).
    pub name: String,
    /// Where its pages listen (127.0.0.1).
    pub addr: SocketAddr,
    /// The PostgreSQL database (sessions and shard leases).
    pub postgres: String,
    /// The payment gateway.
    pub gateway: SocketAddr,
    /// Every node's page address, by name (this one's too).
    pub peers: BTreeMap<String, SocketAddr>,
    /// The NATS server (or servers) this node connects to, and only to
    /// them.
    pub nats: Vec<String>,
    /// The supervisor's control address (the fault panel's node faults).
    pub control: SocketAddr,
}

/// The name of the node a lease owner (`<node>/<incarnation>`) belongs to.
pub(crate) fn node_of(owner: &str) -> &str {
    owner.split('/').next().unwrap_or(owner)
}
