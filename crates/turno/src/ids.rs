//! The identities of the runtime, in one leaf module that depends on
//! nothing else in the crate: actors, requests, timers, the root of the
//! supervision tree, and why a reply is stale.
//!
//! Each kind has its own sequence within a system (actors from 1, the root
//! being 0; requests from 1; timers from 1), so spawning an actor does not
//! shift request ids and a trace reads the same kind of number for the same
//! kind of thing.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An actor's identity, unique within its system. Never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActorId(pub(crate) u64);

impl ActorId {
    /// The number behind the id, as it appears in traces.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Correlates a reply with its request. Unique within the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The number behind the id, as it appears in traces.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "req-{}", self.0)
    }
}

/// Why a reply (or a timeout) was discarded: the trace's type, so the
/// runtime and the trace reader name the reasons once.
pub use turno_trace::actor::StaleReason;

/// Identifies one timer within its system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TimerId(pub(crate) u64);

impl TimerId {
    /// The number behind the id, as it appears in traces.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timer-{}", self.0)
    }
}

/// The root of the supervision tree: the parent of top-level actors, on
/// either scheduler, as it appears in traces.
pub const ROOT: ActorId = ActorId(0);
