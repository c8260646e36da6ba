//! # turno: a runtime for message-driven software
//!
//! turno is built around one idea: **the turn**. A turn takes one message out
//! of an actor's mailbox, runs a synchronous handler to completion, applies
//! its effects, and is ready for the next. Turns of one actor never overlap,
//! so `&mut self` is all the mutual exclusion an actor needs, and no `await`
//! can split an update in two.
//!
//! What turno makes explicit:
//!
//! - **Bounded mailboxes** with an overflow [`Policy`] whose name says what
//!   is lost: keep-newest, keep-oldest, reject, suspend (backpressure), and
//!   unbounded as the documented hazard. Every send returns a [`Verdict`].
//!   The policy logic lives in one place, [`buffer`], shared with streams.
//! - **A system lane** (stop, failures, terminations, timers) that no policy
//!   drops and that is handled first.
//! - **Request/reply** with correlation ids ([`Context::ask`]); timeouts
//!   arrive as messages; stale replies are discarded and counted ([`ask`]).
//! - **Stash** for selective receive without mailbox scans ([`stash`]).
//! - **Supervision** trees with one-for-one, one-for-all and rest-for-one,
//!   restart intensity and escalation ([`supervision`]).
//! - **A deterministic scheduler** ([`DetSystem`]): one thread, virtual
//!   time, seeded choice, a full [`trace`]. Same seed, same run. Two more
//!   behind the same [`System`] trait: [`ThreadedSystem`] (worker threads,
//!   work stealing) and [`LocalSystem`] (the caller's thread, first come
//!   first served, real time).
//! - **Streams between independent clocks** ([`stream`]): Swift
//!   `AsyncStream`'s buffering policies on the same buffer core, a verdict
//!   per push; real backpressure with a rendezvous channel, a pull-based
//!   unfold and high/low watermarks; bridges to and from actors.
//! - **Metrics** through the `metrics` facade ([`mod@metrics`]), and with
//!   the `tracing` feature, a span per turn and events for failures, drops,
//!   stale replies and restarts.
//! - **A test kit** that runs one turn of one actor ([`testkit`]).
//!
//! ```
//! use turno::{Actor, Context, DetSystem, Policy, Props, System, Verdict};
//!
//! struct Total(u64);
//! impl Actor for Total {
//!     type Msg = u64;
//!     fn handle(&mut self, _ctx: &mut Context<'_, Self>, n: u64) { self.0 += n; }
//! }
//!
//! let mut sys = DetSystem::new(1);
//! let total = sys.spawn(Props::new().mailbox(Policy::KeepOldest(2)), || Total(0)).unwrap();
//! assert_eq!(total.try_send(1), Verdict::Enqueued { remaining: Some(1) });
//! assert_eq!(total.try_send(2), Verdict::Enqueued { remaining: Some(0) });
//! assert_eq!(total.try_send(3), Verdict::Dropped(3)); // keep-oldest: the incoming one is lost
//! sys.run_until_idle().unwrap();
//! assert_eq!(total.stats().dropped, 1);
//! ```

// `unsafe` lives in the lock-free user lane, the lazily allocated parts
// (`lazy.rs`), the mailbox (its consumer side, the pointer to its own slot,
// its place in a slot body), the actor path (a thin pointer to its own
// counted text, `ids.rs`), the buffered stream (the consumer side of its
// lane), the `TypedBody` contract (slot, cell) and the threaded worker's
// address of its own run queue state (`threaded::local`), each
// block with a `// SAFETY:` comment (the workspace denies undocumented
// ones).
#![deny(unsafe_code)]

mod actor;
mod addr;
pub mod ask;
#[allow(unsafe_code)]
mod asym_fence;
#[cfg(feature = "tokio")]
pub mod bridge;
pub mod buffer;
mod cell;
mod context;
pub mod deterministic;
mod effects;
mod engine;
mod envelope;
mod hand_off;
mod idle;
#[allow(unsafe_code)]
mod ids;
#[allow(unsafe_code)]
mod lane;
#[allow(unsafe_code)]
mod lazy;
pub mod local;
#[allow(unsafe_code)]
mod mailbox;
pub mod metrics;
mod panics;
#[allow(unsafe_code)]
mod path_cell;
mod run_state;
mod scheduler;
mod shared;
pub mod stash;
pub mod stream;
pub mod supervision;
mod sync;
pub mod system;
mod system_lane;
pub mod testkit;
#[cfg(not(turno_loom))]
pub mod threaded;
pub mod time;
pub mod timer;
pub mod trace;
#[cfg(feature = "tracing")]
mod tracing_log;
mod verdict;
mod waiters;

pub use actor::{Actor, Props, SpawnError, DEFAULT_POLICY, DEFAULT_STASH_CAPACITY};
pub use addr::{ActorId, ActorPath, Addr};
pub use ask::{BridgeError, ReplyTo, RequestId, Response, StaleReason};
#[cfg(feature = "tokio")]
pub use bridge::NoRuntime;
pub use buffer::{BufferStats, Policy, PolicyError};
pub use context::{AskError, Context};
pub use deterministic::{DetOptions, DetSystem, DetSystemBuilder, StepLimit};
pub use ids::{NameError, ROOT};
pub use local::{LocalBuilder, LocalOptions, LocalSystem};
pub use stash::StashFull;
pub use supervision::{Directive, ExitReason, Failure, Strategy, Supervision};
pub use system::{ShutdownReport, ShutdownTimeout, System, SystemBuilder, SystemStats};
#[cfg(not(turno_loom))]
pub use threaded::{ThreadedBuilder, ThreadedOptions, ThreadedSystem};
pub use time::Instant;
pub use timer::TimerId;
pub use verdict::{Verdict, VerdictKind};

/// The lock-free user lane, exposed to its loom model
/// (`tests/lane_loom.rs`) only. Not part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub mod lane_model {
    pub use crate::lane::model::{Inject, ModelLane, ModelPush};
}

/// The threaded scheduler's sleep and wake-up protocol, exposed to its loom
/// model (`tests/idle_loom.rs`) only. Not part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub mod idle_model {
    pub use crate::idle::{Idle, Inject, Woke};
}

/// The mailbox's waiting senders' handshake, exposed to its loom model
/// (`tests/waiters_loom.rs`) only. Not part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub mod waiters_model {
    pub use crate::waiters::model::{Inject, ModelWaiters, Registered};
}

/// An outside sender's wait for room, step by step, exposed to the loom
/// model of the take and a waiting sender (`tests/send_loom.rs`) only. Not
/// part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub mod send_model {
    pub use crate::addr::model::{retry_send, wait_for_space, Waiting};
}

/// The buffered stream with an injected fault, exposed to its loom model
/// (`tests/stream_loom.rs`) only. Not part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub mod stream_model {
    pub use crate::stream::buffered::model::{buffered_with_fault, Inject};
}

/// The lazily allocated part, exposed to its loom model
/// (`tests/lazy_loom.rs`) only. Not part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub mod lazy_model {
    pub use crate::lazy::model::ModelLazy;
}

/// The README's example, compiled and run as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
