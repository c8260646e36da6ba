//! Timers: a message to oneself after a delay, cancellable until handled.
//!
//! A timer's message waits in the actor (not in the mailbox) until the
//! deadline; then a fire signal enters the system lane, which no overflow
//! policy drops. [`Context::cancel_timer`](crate::Context::cancel_timer)
//! guarantees the message is not handled afterwards, even if the fire signal
//! is already queued.

pub use crate::ids::TimerId;
