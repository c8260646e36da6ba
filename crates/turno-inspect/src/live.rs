//! Live mode: follow a running system in the page.
//!
//! [`start`] binds the inspector (127.0.0.1 by default) and returns a
//! [`LiveSink`] to give the system as its trace sink. The sink folds each
//! event into a [`World`] as it happens; every connected page receives a
//! snapshot over a WebSocket (`/api/live`) a few times a second: actors,
//! mailbox depths (the page plots them over time), drops by policy, stash
//! sizes, statechart configurations and the wait-for graph. The sink also
//! feeds each event into the queue series of `turno_trace::queues`, kept
//! over a window of the system's latest time ([`LiveOptions::window`]), and
//! `/api/queues` folds them into plots as for a recorded trace: the page
//! redraws its queues over time as the system runs.
//!
//! Binding any address that is not loopback requires a token; with a
//! token, the WebSocket is refused unless the page was opened with
//! `?token=...` (the URL [`Live::url`] returns carries it).
//!
//! ```no_run
//! use turno::DetSystem;
//! let (live, sink) = turno_inspect::live::start(Default::default()).unwrap();
//! println!("{}", live.url());
//! let mut sys = DetSystem::builder().trace(sink).build();
//! // ... spawn actors and run; the page follows.
//! # let _ = sys.run_until_idle();
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use tokio::sync::oneshot;
use turno::trace::{TraceEvent, TraceSink};
use turno_trace::{Event, Queues, World};

use crate::server::asset_routes;
use crate::Error;

/// Where and how live mode listens.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// The address (default 127.0.0.1, any free port).
    pub addr: SocketAddr,
    /// Required to bind anything but loopback; when set, the page must
    /// present it.
    pub token: Option<String>,
    /// How often snapshots are sent (default 200 ms).
    pub interval: Duration,
    /// How much of the system's time the queue plots keep, ending at its
    /// latest event (default 60 s): older points are forgotten, so a page
    /// left open on a long run holds a bounded series.
    pub window: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            token: None,
            interval: Duration::from_millis(200),
            window: Duration::from_secs(60),
        }
    }
}

struct Shared {
    /// Locked before `queues` where both are.
    world: Mutex<World>,
    /// Every actor's queue series over the window.
    queues: Mutex<Queues>,
    /// The window, in ns.
    window_ns: u64,
    /// Events that could not be read back (a bug in a writer).
    unreadable: Mutex<u64>,
}

/// The running live server; dropping it stops the server.
pub struct Live {
    url: String,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Live {
    /// The page's URL (with the token, when one is set).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A copy of the world as the page sees it now.
    pub fn world(&self) -> World {
        lock(&self.shared.world).clone()
    }

    /// A copy of the queue series the plots are folded from (the last
    /// [`LiveOptions::window`] of the system's time).
    pub fn queues(&self) -> Queues {
        lock(&self.shared.queues).clone()
    }

    /// Events the sink could not read back (always 0 unless a writer and
    /// the trace format disagree).
    pub fn unreadable(&self) -> u64 {
        *lock(&self.shared.unreadable)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves a usable world.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The trace sink that feeds the page: give it to the system's builder.
/// Clones feed the same page (one per system, e.g. a server's system
/// rebuilt after a crash).
#[derive(Clone)]
pub struct LiveSink {
    shared: Arc<Shared>,
}

impl TraceSink for LiveSink {
    fn record(&mut self, event: &TraceEvent) {
        // The runtime's events go through their own serialised form, the
        // one the trace format documents, so live and recorded agree.
        let parsed = serde_json::to_value(event)
            .ok()
            .and_then(|v| Event::deserialize(v).ok());
        let Some(e) = parsed else {
            *lock(&self.shared.unreadable) += 1;
            return;
        };
        let mut world = lock(&self.shared.world);
        world.apply(&e);
        let mut queues = lock(&self.shared.queues);
        queues.observe(&e, &world);
        // The window is trimmed an eighth of it at a time, not at every
        // event: forgetting moves the series' tails.
        let window = self.shared.window_ns;
        let horizon = e.t_ns.saturating_sub(window);
        if horizon > queues.since().saturating_add(window / 8) {
            queues.forget_before(horizon);
        }
    }
}

/// Starts the live server and returns it with the sink to record into.
pub fn start(opts: LiveOptions) -> Result<(Live, LiveSink), Error> {
    if !opts.addr.ip().is_loopback() && opts.token.is_none() {
        return Err(Error::TokenRequired(opts.addr));
    }
    let std_listener =
        std::net::TcpListener::bind(opts.addr).map_err(|e| Error::Bind(opts.addr, e))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| Error::Bind(opts.addr, e))?;
    let local = std_listener
        .local_addr()
        .map_err(|e| Error::Bind(opts.addr, e))?;
    let shared = Arc::new(Shared {
        world: Default::default(),
        queues: Default::default(),
        window_ns: u64::try_from(opts.window.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1),
        unreadable: Default::default(),
    });
    let url = match &opts.token {
        Some(t) => format!("http://{local}/?live&token={t}"),
        None => format!("http://{local}/?live"),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let app = Arc::new(LiveApp {
        shared: shared.clone(),
        token: opts.token.clone(),
        interval: opts.interval,
        layouts: Default::default(),
    });
    let thread = std::thread::Builder::new()
        .name("turno-inspect-live".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else {
                    return;
                };
                let router = Router::new()
                    .route("/api/live", get(ws))
                    .route("/api/chart.svg", get(chart_svg))
                    .route("/api/queues", get(queues))
                    .with_state(app)
                    .merge(asset_routes());
                let _ = axum::serve(listener, router)
                    .with_graceful_shutdown(async {
                        let _ = stop_rx.await;
                    })
                    .await;
            });
        })
        .map_err(Error::Runtime)?;
    Ok((
        Live {
            url,
            shared: shared.clone(),
            stop: Some(stop_tx),
            thread: Some(thread),
        },
        LiveSink { shared },
    ))
}

struct LiveApp {
    shared: Arc<Shared>,
    token: Option<String>,
    interval: Duration,
    /// The statechart pictures laid out so far.
    layouts: crate::chart::Layouts,
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

#[derive(Deserialize)]
struct ChartQuery {
    token: Option<String>,
    actor: u64,
}

/// The statechart of `actor` as it stands now, as SVG (the page marks the
/// configuration of each snapshot on it).
async fn chart_svg(State(app): State<Arc<LiveApp>>, Query(q): Query<ChartQuery>) -> Response {
    if let Some(want) = &app.token {
        if !q.token.as_deref().is_some_and(|t| same(t, want)) {
            return (StatusCode::UNAUTHORIZED, "live mode needs ?token=").into_response();
        }
    }
    let chart = lock(&app.shared.world)
        .charts
        .get(&turno_trace::ActorId(q.actor))
        .cloned();
    let Some(chart) = chart else {
        return (
            StatusCode::NOT_FOUND,
            format!("no statechart on actor {}", q.actor),
        )
            .into_response();
    };
    let app2 = app.clone();
    match tokio::task::spawn_blocking(move || app2.layouts.svg(&chart)).await {
        Ok(Ok(svg)) => {
            let mut r = svg.into_response();
            r.headers_mut().insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("image/svg+xml"),
            );
            r
        }
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

#[derive(Deserialize)]
struct QueuesQuery {
    token: Option<String>,
    /// Buckets: the plot's width in pixels.
    px: usize,
    /// The window, in ns (default: all that is kept, to the latest event).
    t0: Option<u64>,
    t1: Option<u64>,
}

/// The queues over time as they stand now, folded as for a recorded
/// trace (see `server::queue_plots`).
async fn queues(State(app): State<Arc<LiveApp>>, Query(q): Query<QueuesQuery>) -> Response {
    if let Some(want) = &app.token {
        if !q.token.as_deref().is_some_and(|t| same(t, want)) {
            return (StatusCode::UNAUTHORIZED, "live mode needs ?token=").into_response();
        }
    }
    let app2 = app.clone();
    let folded = tokio::task::spawn_blocking(move || {
        let shared = &app2.shared;
        // The names first, then the series: the sink holds the world's
        // lock while it takes the series', so the two are never held
        // here at once and a plot never stalls the system for long.
        let (names, end) = {
            let world = lock(&shared.world);
            (crate::server::queue_names(&world), world.t_ns)
        };
        let queues = lock(&shared.queues);
        let mut v =
            crate::server::queue_plots(&queues, q.t0, q.t1, queues.since(), end, q.px, |id| {
                names.get(&id).cloned().unwrap_or_default()
            });
        v["window_ns"] = app2.shared.window_ns.into();
        v
    })
    .await;
    match folded {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

async fn ws(
    State(app): State<Arc<LiveApp>>,
    Query(q): Query<TokenQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    if let Some(want) = &app.token {
        if !q.token.as_deref().is_some_and(|t| same(t, want)) {
            return (StatusCode::UNAUTHORIZED, "live mode needs ?token=").into_response();
        }
    }
    upgrade.on_upgrade(move |socket| follow(app, socket))
}

async fn follow(app: Arc<LiveApp>, mut socket: WebSocket) {
    let mut last = u64::MAX;
    let mut ticker = tokio::time::interval(app.interval);
    loop {
        ticker.tick().await;
        let text = {
            let world = lock(&app.shared.world);
            if world.step == last {
                continue;
            }
            last = world.step;
            let snap = serde_json::json!({ "world": &*world, "wait_for": world.wait_for() });
            snap.to_string()
        };
        if socket.send(Message::Text(text.into())).await.is_err() {
            return;
        }
    }
}
