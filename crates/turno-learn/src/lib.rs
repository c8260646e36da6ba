//! `turno learn`: the event loop as a page you press.
//!
//! The event-loop essay this project grew from hands the reader the
//! machine; this crate serves that page on 127.0.0.1, its assets compiled
//! in (no CDN, no network), in Spanish and English: the freeze button (a
//! `requestAnimationFrame` bar against a compositor animation while the
//! main thread is blocked, and the same scenario on the explorer's html
//! model), steppers over editable snippets (call stack, every queue, the
//! promise slots, the console; Node's phases as a second model), the
//! microtask loop against the `setTimeout` loop run in the page and on the
//! explorer, guess-the-order quizzes answered by the reader's own browser
//! and by the explorer, and Node's differences.
//!
//! Every example runs on [`turno_js`] through `POST /api/run`; the steps
//! are `turno_trace::World` reconstructed after every trace event, so the
//! page draws what the inspector would. Snippets are untrusted: [`run`]
//! describes the budgets (the explorer's step, virtual-time and loop
//! budgets; a wall-clock limit and a memory limit on a child process; a
//! bound on runs at a time) and every way a run can end becomes an
//! [`Answer`] with a [`Problem`] for the reader, never a stuck server.
//!
//! Architecture invariant: the server never runs a snippet in its own
//! process; [`run::run_here`] is only ever called by the child
//! ([`run::runner_main`]).

use std::net::SocketAddr;

pub mod run;
mod server;

pub use run::{Answer, Budgets, Problem, ProblemKind, RunRequest, Runner, Step};
pub use server::{router, serve_blocking, start, Config, Server};

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    /// The page is served on loopback only.
    #[error("{0} is not a loopback address: turno learn serves on 127.0.0.1 only")]
    NotLoopback(SocketAddr),
    /// The async runtime or server failed.
    #[error("server: {0}")]
    Runtime(std::io::Error),
}
