//! # turno-wizard: the signup wizard, end to end (`turno demo`)
//!
//! A multi-step signup (personal data -> plan -> payment -> review ->
//! submit) where every session is one statechart actor on the turno runtime,
//! served by axum on 127.0.0.1 with one server-rendered page per step, and a
//! fake payment gateway as a separate service (turno-gateway: its own HTTP
//! endpoint, its own SQLite file) with idempotency keys, lookup by key and
//! injectable faults. What it shows, and where:
//!
//! - [`machine`]: the chart (`assets/signup.json`, XState v5 JSON), with
//!   history in `payment` and the idempotent submit (`sending` -> `completed`
//!   | `failed` | `uncertain` -> `unresolvable`).
//! - [`session`]: the actor per session; its snapshot is persisted after
//!   every macrostep ([`persist`]) and restored after a crash.
//! - [`client`]: the wizard's calls to the gateway, which is turno-gateway's
//!   HTTP service ([`turno_gateway::http`]).
//! - [`steps`]: the pages, named once beside the chart (step names,
//!   URLs, progress).
//! - [`web`]: routes, pages in English and Spanish, validation ([`validate`]), the forged and
//!   replayed requests it refuses, drafts, "forget me".
//!
//! ```no_run
//! # async fn run() -> Result<(), turno_wizard::Error> {
//! let dir = std::env::temp_dir().join("turno-demo");
//! let wizard = turno_wizard::Wizard::start(turno_wizard::Config::new(dir)).await?;
//! println!("open {}", wizard.url());
//! # Ok(()) }
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use turno::trace::{TraceEvent, TraceSink};

pub mod client;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod ids;
pub mod load;
pub mod machine;
mod pages;
pub mod persist;
pub mod session;
pub mod steps;
pub mod validate;
pub mod web;
mod words;

pub use web::Wizard;
pub use words::Lang;

/// What went wrong starting the wizard.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A database file could not be opened.
    #[error("cannot open the database {0}: {1}")]
    Store(String, turno_store::StoreError),
    /// An address could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(String, std::io::Error),
    /// The data directory could not be created.
    #[error("cannot create the data directory {0}: {1}")]
    DataDir(String, std::io::Error),
    /// An actor could not be spawned.
    #[error("cannot start an actor: {0}")]
    Spawn(String),
    /// The payment gateway could not be started.
    #[error(transparent)]
    Gateway(#[from] turno_gateway::http::StartError),
}

/// How to run the wizard.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where `wizard.db` and `gateway.db` live (created if missing).
    pub data_dir: PathBuf,
    /// The wizard's port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// The gateway's port on 127.0.0.1 (0: any free port).
    pub gateway_port: u16,
    /// How long sessions, drafts and draft links live.
    pub ttl: Duration,
    /// How long a crashed wizard server stays down before it restarts.
    pub restart_after: Duration,
    /// How often expired sessions, drafts and links are deleted from
    /// `wizard.db` (they read as absent from their expiry on).
    pub sweep_every: Duration,
    /// Where the wizard server's runtime trace goes (default: nowhere).
    /// Called once per start of the server's actor system, so a server
    /// restarted after a crash records into a fresh sink; `turno demo
    /// --inspect` gives it the live inspector's sink.
    pub trace: Option<TraceTo>,
}

/// Makes the trace sink of each start of the wizard server's system (see
/// [`Config::trace`]).
///
/// ```
/// use turno::trace::RingSink;
/// let ring = RingSink::new(1000);
/// let mut config = turno_wizard::Config::new(std::env::temp_dir().join("turno-demo"));
/// config.trace = Some(turno_wizard::TraceTo::new(move || ring.clone()));
/// ```
#[derive(Clone)]
pub struct TraceTo(Arc<dyn Fn() -> Box<dyn TraceSink> + Send + Sync>);

impl TraceTo {
    /// `make` is called once per start of the server's system.
    pub fn new<S: TraceSink + 'static>(make: impl Fn() -> S + Send + Sync + 'static) -> Self {
        TraceTo(Arc::new(move || Box::new(make())))
    }

    pub(crate) fn sink(&self) -> BoxedSink {
        BoxedSink((self.0)())
    }
}

impl fmt::Debug for TraceTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TraceTo(..)")
    }
}

/// The builder takes a sized sink.
pub(crate) struct BoxedSink(Box<dyn TraceSink>);

impl TraceSink for BoxedSink {
    fn record(&mut self, event: &TraceEvent) {
        self.0.record(event)
    }
    fn flush(&mut self) {
        self.0.flush()
    }
}

impl Config {
    /// Defaults: any free ports, 7 days to live, a 1.5 s restart, a sweep
    /// every minute.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Config {
            data_dir: data_dir.into(),
            port: 0,
            gateway_port: 0,
            ttl: Duration::from_secs(7 * 24 * 3600),
            restart_after: Duration::from_millis(1500),
            sweep_every: Duration::from_secs(60),
            trace: None,
        }
    }
}

/// Where the two services listen.
#[derive(Clone, Copy, Debug)]
pub struct Addrs {
    /// The wizard.
    pub wizard: SocketAddr,
    /// The gateway.
    pub gateway: SocketAddr,
}
