//! The turno inspector: a web page that steps through any recorded trace.
//!
//! [`Loaded::open`] indexes a trace of either family (`turno-trace`,
//! `turno-js-trace`; a cluster's merged trace included, and
//! [`Loaded::open_cluster`] merges several nodes' traces first) with [`turno_trace::Index`]; [`serve_blocking`] serves
//! the page on 127.0.0.1 with its assets compiled in (no CDN) and a small
//! JSON API (`/api/meta`, `/api/step?k=`, `/api/jump?k=&what=&dir=`,
//! `/api/events?from=&count=`, `/api/chart.svg?k=&actor=`,
//! `/api/queues?px=`, `/api/cluster`), so a trace of a million events is held on
//! disk and in checkpoints, never in the browser. Everything from a trace
//! is drawn as text, never as markup. The page is described in
//! `docs/inspector.md`.
//!
//! With the `live` feature, [`live`] follows a running system over a
//! WebSocket, its queues over time included.

use std::net::SocketAddr;
use std::path::PathBuf;

mod chart;
pub mod cpu;
#[cfg(feature = "live")]
pub mod live;
mod moved;
mod server;

pub use moved::Moved;
pub use server::{router, serve_blocking, Loaded, StepView};

/// Why the inspector could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trace file could not be opened.
    #[error("cannot open {0}: {1}")]
    Open(PathBuf, std::io::Error),
    /// The trace is not readable (a bad header or an unreadable source).
    #[error("not a readable trace: {0}")]
    Trace(#[from] turno_trace::ReadError),
    /// The address could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    /// Serving on anything but loopback needs live mode with a token.
    #[error("{0} is not a loopback address: the inspector serves traces on 127.0.0.1 only")]
    NotLoopback(SocketAddr),
    /// An address that is not loopback was asked for without a token.
    #[error("live mode on {0} (not loopback) needs a token")]
    TokenRequired(SocketAddr),
    /// Several nodes' traces could not be merged into one.
    #[error("cannot merge the nodes' traces: {0}")]
    Merge(String),
    /// The async runtime or server failed.
    #[error("server: {0}")]
    Runtime(std::io::Error),
}
