//! Timers: a message to oneself after a delay, cancellable until handled.
//!
//! A timer's message waits in the actor (not in the mailbox) until the
//! deadline; then a fire signal enters the system lane, which no overflow
//! policy drops. [`Context::cancel_timer`](crate::Context::cancel_timer)
//! guarantees the message is not handled afterwards, even if the fire signal
//! is already queued.

use std::fmt;

use serde::{Deserialize, Serialize};

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
