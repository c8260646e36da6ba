//! Injected faults: what can go wrong between a payment client and its
//! gateway, each with whether the money was taken.
//!
//! This is a fake: a real gateway does not take orders from its clients.
//! In-process tests give the actor a [`Faults`] plan (a script, one fault
//! per request); the HTTP service takes one per request from headers
//! (`http` module).

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One injected fault, applied to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer normally.
    None,
    /// Charge, answer after this long.
    Latency(Duration),
    /// Charge, answer only after this long: longer than the client waits,
    /// so the client sees a timeout of a charge that happened.
    TimeoutAfterExecuting(Duration),
    /// Charge, never answer (over HTTP: the connection is cut mid-reply).
    LostReply,
    /// Answer a server error without charging.
    ServerErrorBeforeExecuting,
    /// Answer an explicit refusal without charging.
    Decline,
    /// Charge, then the gateway's actor panics before answering.
    Crash,
}

/// Which fault each request gets: a script first, one fault per request in
/// order (charges and lookups alike), then [`Fault::None`]. Clones share
/// the script, so a restarted gateway actor goes on where the old one
/// stopped.
///
/// ```
/// use turno_gateway::{Fault, Faults};
///
/// let faults = Faults::script(vec![Fault::LostReply]);
/// assert_eq!(faults.next(), Fault::LostReply);
/// assert_eq!(faults.next(), Fault::None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Faults {
    script: Arc<Mutex<Vec<Fault>>>,
}

impl Faults {
    /// No faults.
    pub fn none() -> Self {
        Faults::default()
    }

    /// These faults, one per request in order, then none.
    pub fn script(faults: Vec<Fault>) -> Self {
        let mut reversed = faults;
        reversed.reverse();
        Faults {
            script: Arc::new(Mutex::new(reversed)),
        }
    }

    /// The next request's fault.
    pub fn next(&self) -> Fault {
        let mut script = self.script.lock().unwrap_or_else(|p| p.into_inner());
        script.pop().unwrap_or(Fault::None)
    }
}
