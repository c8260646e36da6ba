//! The HTTP side: the embedded page and a small JSON API over an
//! [`Index`], so the page never holds the trace, only the step it shows.

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use turno_trace::{Event, Format, Header, Index, WaitFor, World};

use crate::cpu::ThreadTimes;
use crate::moved::{moved, Moved};
use crate::Error;

/// The page, its script and its style, compiled into the binary.
pub(crate) const PAGE: &str = include_str!("../assets/index.html");
pub(crate) const SCRIPT: &str = include_str!("../assets/app.js");
pub(crate) const STYLE: &str = include_str!("../assets/app.css");

/// The longest source file shown (bigger ones are left out, not cut).
const MAX_SOURCE: u64 = 4 << 20;
/// Render steps listed in the metadata (the timeline's marks).
const MAX_RENDER_MARKS: usize = 5000;

/// A trace opened for the inspector: its index and, for JavaScript, the
/// program's source.
pub struct Loaded {
    path: PathBuf,
    index: Index,
    source: Option<Source>,
    /// Each dedicated worker's script, by loop id (those found).
    worker_sources: Vec<(u32, Source)>,
    index_ms: f64,
    index_times: Option<ThreadTimes>,
    /// The statechart pictures laid out so far.
    layouts: crate::chart::Layouts,
    /// Actors' names and policies at the end, for the queue plots.
    names: std::sync::OnceLock<QueueNames>,
    /// A cluster trace's remote messages and their marks (read once).
    cluster: std::sync::OnceLock<turno_trace::cluster::Messages>,
    /// The merged trace of several nodes' traces, deleted with it.
    _merged: Option<tempfile::NamedTempFile>,
    /// Where that merged trace is (`path` names the first node's trace).
    merged_path: Option<PathBuf>,
}

#[derive(Clone, Debug, Serialize)]
struct Source {
    file: String,
    lines: Vec<String>,
}

impl Loaded {
    /// Reads and indexes the trace at `path`. `source` is the JavaScript
    /// program to show; without it, the header's `file` is looked for as
    /// given and next to the trace.
    pub fn open(path: &Path, source: Option<&Path>) -> Result<Loaded, Error> {
        let t0 = Instant::now();
        let times0 = ThreadTimes::now();
        let file = File::open(path).map_err(|e| Error::Open(path.to_owned(), e))?;
        let index = Index::build(file)?;
        let index_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let index_times = ThreadTimes::now().zip(times0).map(|(t1, t0)| t1.since(t0));
        let source = find_source(path, index.header(), source);
        let worker_sources = worker_sources(path, &index, source.as_ref());
        Ok(Loaded {
            path: path.to_owned(),
            index,
            source,
            worker_sources,
            index_ms,
            index_times,
            layouts: Default::default(),
            names: Default::default(),
            cluster: Default::default(),
            _merged: None,
            merged_path: None,
        })
    }

    /// Merges several cluster nodes' traces (each naming its node in its
    /// header; see `turno_trace::cluster::merge`) into one temporary
    /// trace, deleted when this is dropped, and opens it.
    pub fn open_cluster(paths: &[PathBuf]) -> Result<Loaded, Error> {
        let mut inputs = Vec::new();
        for p in paths {
            let f = File::open(p).map_err(|e| Error::Open(p.clone(), e))?;
            inputs.push(std::io::BufReader::new(f));
        }
        let merged = tempfile::Builder::new()
            .prefix("turno-cluster-")
            .suffix(".jsonl")
            .tempfile()
            .map_err(|e| Error::Open(std::env::temp_dir(), e))?;
        let out = std::io::BufWriter::new(merged.as_file());
        turno_trace::cluster::merge(inputs, out).map_err(|e| Error::Merge(e.to_string()))?;
        let mut loaded = Loaded::open(merged.path(), None)?;
        loaded.path = paths.first().cloned().unwrap_or_default();
        loaded.merged_path = Some(merged.path().to_owned());
        loaded._merged = Some(merged);
        Ok(loaded)
    }

    fn cluster(&self) -> Result<&turno_trace::cluster::Messages, ApiError> {
        if let Some(m) = self.cluster.get() {
            return Ok(m);
        }
        let m = turno_trace::cluster::Messages::build(std::io::BufReader::new(self.file()?))?;
        Ok(self.cluster.get_or_init(|| m))
    }

    /// The index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// How long indexing took, in milliseconds.
    pub fn index_ms(&self) -> f64 {
        self.index_ms
    }

    /// How the indexing thread spent that time: on a CPU, and waiting for
    /// one (`None` where the kernel does not say). On a loaded machine the
    /// wait is what separates the wall time from the work.
    pub fn index_times(&self) -> Option<ThreadTimes> {
        self.index_times
    }

    /// Every actor's name and policy as the trace ends (read once).
    fn names(&self) -> Result<&QueueNames, ApiError> {
        if let Some(n) = self.names.get() {
            return Ok(n);
        }
        let world = self.index.world_at(self.file()?, self.index.len())?;
        let names = queue_names(&world);
        Ok(self.names.get_or_init(|| names))
    }

    fn file(&self) -> Result<File, ApiError> {
        File::open(self.merged_path.as_ref().unwrap_or(&self.path))
            .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    }

    /// The view of step `k`: the world after `k` events, the event that
    /// led to it and what it moved.
    pub fn step(&self, k: u64) -> Result<StepView, Error> {
        self.step_in_loop(k, 0)
    }

    /// [`Loaded::step`] seen from one JavaScript event loop (0: the page
    /// or main thread, 1..: a dedicated worker): the view's `world.js` is
    /// that loop's (each loop has its own queues, stack and promises), and
    /// `moved` lists only what the event moved there (the console is
    /// shared). A loop not yet started shows empty.
    pub fn step_in_loop(&self, k: u64, loop_id: u32) -> Result<StepView, Error> {
        let mut view = self.step_all(k)?;
        view.loop_id = loop_id;
        if loop_id != 0 {
            let w = &mut view.world;
            w.js = w.workers.remove(&loop_id).unwrap_or_default();
        }
        let event_loop = view.event.as_ref().map(|e| e.loop_id.unwrap_or(0));
        if event_loop.is_some_and(|l| l != loop_id) {
            view.moved.retain(|m| m.lane == "console");
        }
        view.world.workers.clear();
        Ok(view)
    }

    fn step_all(&self, k: u64) -> Result<StepView, Error> {
        let k = k.min(self.index.len());
        let open = || File::open(&self.path).map_err(|e| Error::Open(self.path.clone(), e));
        if k == 0 {
            let world = self.index.world_at(open()?, 0)?;
            return Ok(StepView::new(0, self.index.len(), None, Vec::new(), world));
        }
        let (mut world, event) = self.index.world_and_next(open()?, k - 1)?;
        let mut mv = Vec::new();
        if let Some(e) = &event {
            mv = moved(&world, e);
            world.apply(e);
        }
        Ok(StepView::new(k, self.index.len(), event, mv, world))
    }
}

fn read_source(p: &Path) -> Option<Source> {
    let meta = std::fs::metadata(p).ok()?;
    if !meta.is_file() || meta.len() > MAX_SOURCE {
        return None;
    }
    let text = std::fs::read_to_string(p).ok()?;
    Some(Source {
        file: p.display().to_string(),
        lines: text.lines().map(str::to_owned).collect(),
    })
}

/// A worker's script is named relative to the program that started it:
/// looked for next to the main program's source, then next to the trace,
/// then as given.
fn worker_sources(trace: &Path, index: &Index, main: Option<&Source>) -> Vec<(u32, Source)> {
    let dirs: Vec<PathBuf> = [
        main.and_then(|s| Path::new(&s.file).parent().map(Path::to_owned)),
        trace.parent().map(Path::to_owned),
    ]
    .into_iter()
    .flatten()
    .collect();
    index
        .marks()
        .workers
        .iter()
        .filter_map(|w| {
            let name = Path::new(&w.file);
            dirs.iter()
                .find_map(|d| read_source(&d.join(name)))
                .or_else(|| read_source(name))
                .map(|s| (w.id, s))
        })
        .collect()
}

fn find_source(trace: &Path, header: &Header, given: Option<&Path>) -> Option<Source> {
    let read = read_source;
    if let Some(p) = given {
        return read(p);
    }
    if header.format != Format::TurnoJs {
        return None;
    }
    let name = Path::new(header.file.as_deref()?);
    read(name).or_else(|| {
        let dir = trace.parent()?;
        read(&dir.join(name)).or_else(|| read(&dir.join(name.file_name()?)))
    })
}

/// Everything the page needs to draw one step.
#[derive(Debug, Serialize)]
pub struct StepView {
    /// The step (events applied).
    pub step: u64,
    /// The JavaScript event loop `world.js` shows (0: the page or main
    /// thread).
    #[serde(rename = "loop")]
    pub loop_id: u32,
    /// Steps in the trace.
    pub len: u64,
    /// The event that led to this step (`None` at step 0).
    pub event: Option<Event>,
    /// What it moved.
    pub moved: Vec<Moved>,
    /// The wait-for graph.
    pub wait_for: WaitFor,
    /// The world.
    pub world: World,
}

impl StepView {
    fn new(step: u64, len: u64, event: Option<Event>, moved: Vec<Moved>, world: World) -> Self {
        StepView {
            step,
            loop_id: 0,
            len,
            event,
            moved,
            wait_for: world.wait_for(),
            world,
        }
    }
}

#[derive(Serialize)]
struct Meta<'a> {
    header: &'a Header,
    path: String,
    len: u64,
    end_t_ns: u64,
    error: Option<String>,
    unknown_kinds: u64,
    times: &'a [(u64, u64)],
    renders: &'a [(u64, u64)],
    turns: usize,
    tasks: usize,
    chart_events: usize,
    source: Option<&'a Source>,
    workers: Vec<WorkerMeta<'a>>,
    index_ms: f64,
}

/// A dedicated worker's loop as the page's selector lists it.
#[derive(Serialize)]
struct WorkerMeta<'a> {
    id: u32,
    name: &'a str,
    file: &'a str,
    parent: u32,
    source: Option<&'a Source>,
}

pub(crate) struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, self.1).into_response()
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

impl From<turno_trace::ReadError> for ApiError {
    fn from(e: turno_trace::ReadError) -> Self {
        ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

type App = Arc<Loaded>;

async fn meta(State(app): State<App>) -> Json<serde_json::Value> {
    let ix = &app.index;
    let marks = ix.marks();
    let renders = &marks.renders[..marks.renders.len().min(MAX_RENDER_MARKS)];
    let m = Meta {
        header: ix.header(),
        path: app.path.display().to_string(),
        len: ix.len(),
        end_t_ns: ix.end_t_ns(),
        error: ix.error().map(ToString::to_string),
        unknown_kinds: ix.unknown_kinds(),
        times: ix.times(),
        renders,
        turns: marks.turns.len(),
        tasks: marks.tasks.len(),
        chart_events: marks.chart_events.len(),
        source: app.source.as_ref(),
        workers: marks
            .workers
            .iter()
            .map(|w| WorkerMeta {
                id: w.id,
                name: &w.name,
                file: &w.file,
                parent: w.parent,
                source: app
                    .worker_sources
                    .iter()
                    .find(|(id, _)| *id == w.id)
                    .map(|(_, s)| s),
            })
            .collect(),
        index_ms: app.index_ms,
    };
    Json(serde_json::to_value(m).unwrap_or_default())
}

#[derive(Deserialize)]
struct StepQuery {
    k: u64,
    #[serde(default, rename = "loop")]
    loop_id: u32,
}

async fn step(State(app): State<App>, Query(q): Query<StepQuery>) -> Result<Response, ApiError> {
    let view = tokio::task::spawn_blocking(move || app.step_in_loop(q.k, q.loop_id))
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(Json(view).into_response())
}

#[derive(Deserialize)]
struct JumpQuery {
    k: u64,
    what: String,
    dir: i8,
}

async fn jump(State(app): State<App>, Query(q): Query<JumpQuery>) -> Result<Json<u64>, ApiError> {
    let marks = app.index.marks();
    let renders: Vec<u64>;
    let list: &[u64] = match q.what.as_str() {
        "turn" => &marks.turns,
        "task" => &marks.tasks,
        "chart" => &marks.chart_events,
        "render" => {
            renders = marks.renders.iter().map(|r| r.0).collect();
            &renders
        }
        other => {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("unknown jump {other:?} (turn, task, render, chart)"),
            ))
        }
    };
    let to = if q.dir >= 0 {
        let i = list.partition_point(|&s| s <= q.k);
        list.get(i).copied().unwrap_or(q.k)
    } else {
        let i = list.partition_point(|&s| s < q.k);
        i.checked_sub(1).map(|i| list[i]).unwrap_or(q.k)
    };
    Ok(Json(to))
}

/// Actors plotted at most (the deepest lanes).
const MAX_PLOTTED: usize = 6;

#[derive(Deserialize)]
struct QueuesQuery {
    /// Buckets: the plot's width in pixels.
    px: usize,
    /// The window, in ns (default: the whole trace).
    t0: Option<u64>,
    t1: Option<u64>,
}

#[derive(Serialize)]
struct QueuePlot {
    name: String,
    policy: String,
    /// `actor` (a mailbox's user lane) or `stream` (a traced stream's
    /// buffer).
    kind: &'static str,
    #[serde(flatten)]
    plot: turno_trace::Plot,
}

/// The queues over time of the deepest actors, folded into `px` buckets
/// by the index (see `turno_trace::queues`).
async fn queues(
    State(app): State<App>,
    Query(q): Query<QueuesQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let plots = tokio::task::spawn_blocking(move || -> Result<serde_json::Value, ApiError> {
        let names = app.names()?;
        let end = app.index.end_t_ns();
        Ok(queue_plots(
            app.index.queues(),
            q.t0,
            q.t1,
            0,
            end,
            q.px,
            |id| names.get(&id).cloned().unwrap_or_default(),
        ))
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(Json(plots))
}

/// Each queue's name, policy and kind (`actor` or `stream`), by id.
pub(crate) type QueueNames =
    std::collections::HashMap<turno_trace::ActorId, (String, String, &'static str)>;

/// The names of `world`'s actors and traced streams, for the queue plots.
pub(crate) fn queue_names(world: &turno_trace::World) -> QueueNames {
    let actors = world
        .actors
        .iter()
        .map(|(id, a)| (*id, (a.name.clone(), a.policy.to_string(), "actor")));
    let streams = world.streams.iter().map(|(id, s)| {
        let policy = s.policy.map(|p| p.to_string()).unwrap_or_default();
        (*id, (s.name.clone(), policy, "stream"))
    });
    actors.chain(streams).collect()
}

/// What `/api/queues` answers, for a recorded trace and in live mode
/// alike: the deepest actors' and streams' plots over `[t0, t1]` (by
/// default `[since, end]`: what `qs` holds), each named by `name` (its
/// name, policy and kind).
pub(crate) fn queue_plots(
    qs: &turno_trace::Queues,
    t0: Option<u64>,
    t1: Option<u64>,
    since: u64,
    end: u64,
    px: usize,
    name: impl Fn(turno_trace::ActorId) -> (String, String, &'static str),
) -> serde_json::Value {
    let t0 = t0.unwrap_or(since);
    let t1 = t1.unwrap_or(end).max(t0);
    let plots: Vec<QueuePlot> = qs
        .actors()
        .into_iter()
        .take(MAX_PLOTTED)
        .filter_map(|(id, _)| {
            let plot = qs.plot(id, t0, t1, px)?;
            let (name, policy, kind) = name(id);
            Some(QueuePlot {
                name,
                policy,
                kind,
                plot,
            })
        })
        .collect();
    serde_json::json!({ "t0": t0, "t1": t1, "end_t_ns": end, "plots": plots })
}

#[derive(Deserialize)]
struct ChartQuery {
    k: u64,
    actor: u64,
}

/// The statechart of `actor` as it stands after step `k`, as SVG.
async fn chart_svg(
    State(app): State<App>,
    Query(q): Query<ChartQuery>,
) -> Result<Response, ApiError> {
    let svg = tokio::task::spawn_blocking(move || -> Result<String, ApiError> {
        let world = app.index.world_at(app.file()?, q.k)?;
        let c = world
            .charts
            .get(&turno_trace::ActorId(q.actor))
            .ok_or_else(|| {
                ApiError(
                    StatusCode::NOT_FOUND,
                    format!("no statechart on actor {} at step {}", q.actor, q.k),
                )
            })?;
        app.layouts
            .svg(c)
            .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e))
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    let mut r = svg.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml"),
    );
    Ok(r)
}

#[derive(Deserialize)]
struct EventsQuery {
    from: u64,
    count: u64,
}

async fn events(
    State(app): State<App>,
    Query(q): Query<EventsQuery>,
) -> Result<Json<Vec<Event>>, ApiError> {
    let list = tokio::task::spawn_blocking(move || -> Result<Vec<Event>, ApiError> {
        let f = app.file()?;
        Ok(app.index.events(f, q.from, q.count.min(500))?)
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(Json(list))
}

/// Serves the embedded assets; the policy forbids any script but ours, so
/// a trace's text can never run, even if it were ever taken as markup.
/// A cluster trace's nodes and remote messages, each with its marks
/// (send, wire, receive with the verdict, turn).
async fn cluster(State(app): State<App>) -> Result<Response, ApiError> {
    let m = tokio::task::spawn_blocking(move || app.cluster().cloned())
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(Json(m).into_response())
}

pub(crate) fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

pub(crate) fn asset_routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset(PAGE, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/app.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
}

/// The router for one trace.
pub fn router(loaded: Arc<Loaded>) -> Router {
    Router::new()
        .route("/api/meta", get(meta))
        .route("/api/step", get(step))
        .route("/api/jump", get(jump))
        .route("/api/events", get(events))
        .route("/api/chart.svg", get(chart_svg))
        .route("/api/queues", get(queues))
        .route("/api/cluster", get(cluster))
        .with_state(loaded)
        .merge(asset_routes())
}

/// Binds `addr` (loopback only) and serves `loaded` until Ctrl-C; calls
/// `ready` with the page's URL once listening.
pub fn serve_blocking(
    loaded: Loaded,
    addr: SocketAddr,
    ready: impl FnOnce(&str),
) -> Result<(), Error> {
    if !addr.ip().is_loopback() {
        return Err(Error::NotLoopback(addr));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::Bind(addr, e))?;
        let local = listener.local_addr().map_err(|e| Error::Bind(addr, e))?;
        ready(&format!("http://{local}/"));
        axum::serve(listener, router(Arc::new(loaded)))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(Error::Runtime)
    })
}
