//! The axum router: the embedded page and `/api/run`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::Semaphore;

use crate::run::{self, Answer, Budgets, Problem, ProblemKind, RunRequest, Runner};
use crate::Error;

const PAGE: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");
const SANDBOX: &str = include_str!("../assets/sandbox.html");

/// The page's policy: nothing but its own files; frames from itself only.
const PAGE_POLICY: &str = "default-src 'self'; img-src 'self' data:; frame-src 'self'";

/// The guess section's frame runs the reader's snippet as inline script
/// with `eval`; it is sandboxed without same-origin by the page, and its
/// policy lets it load and reach nothing.
const SANDBOX_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'";

/// What the server needs: how to start a run, and its limits.
#[derive(Debug, Clone)]
pub struct Config {
    /// How a child run is started.
    pub runner: Runner,
    /// The limits of every run.
    pub budgets: Budgets,
}

struct App {
    config: Config,
    slots: Semaphore,
}

/// The router: `/` (the page), `/app.js`, `/app.css`, `/sandbox.html` (the
/// guess section's frame), `/api/health` and
/// `POST /api/run` (a [`RunRequest`] in, an [`Answer`] out).
pub fn router(config: Config) -> Router {
    let slots = Semaphore::new(config.budgets.concurrent.max(1));
    let app = Arc::new(App { config, slots });
    Router::new()
        .route(
            "/",
            get(|| async { asset(PAGE, "text/html; charset=utf-8", PAGE_POLICY) }),
        )
        .route(
            "/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8", PAGE_POLICY) }),
        )
        .route(
            "/app.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8", PAGE_POLICY) }),
        )
        .route(
            "/sandbox.html",
            get(|| async { asset(SANDBOX, "text/html; charset=utf-8", SANDBOX_POLICY) }),
        )
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/health", get(|| async { "ok" }))
        .route("/api/run", post(run_snippet))
        .layer(DefaultBodyLimit::max(4 * run::MAX_CODE_BYTES))
        .with_state(app)
}

/// An embedded asset under `policy`.
fn asset(body: &'static str, kind: &'static str, policy: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(policy),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

fn reply(status: StatusCode, answer: Answer) -> Response {
    (status, Json(answer)).into_response()
}

async fn run_snippet(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let req: RunRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return reply(
                StatusCode::BAD_REQUEST,
                Answer::refused(Problem {
                    kind: ProblemKind::BadRequest,
                    message: format!("not a run request: {e}"),
                    line: None,
                    column: None,
                }),
            )
        }
    };
    if let Err(p) = run::check(&req) {
        return reply(StatusCode::BAD_REQUEST, Answer::refused(p));
    }
    let budgets = app.config.budgets;
    let wait = Duration::from_millis(budgets.queue_ms);
    let _slot = match tokio::time::timeout(wait, app.slots.acquire()).await {
        Ok(Ok(slot)) => slot,
        _ => {
            return reply(
                StatusCode::SERVICE_UNAVAILABLE,
                Answer::refused(Problem {
                    kind: ProblemKind::Busy,
                    message: format!(
                        "busy: {} runs at a time, and none ended within {:.0} s; try again",
                        budgets.concurrent,
                        wait.as_secs_f64()
                    ),
                    line: None,
                    column: None,
                }),
            )
        }
    };
    let answer = run::run_child(&app.config.runner, &req, &budgets).await;
    reply(StatusCode::OK, answer)
}

/// A running server.
pub struct Server {
    url: String,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// The page's URL, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Waits until the server stops (it stops on Ctrl-C only if started by
    /// [`serve_blocking`]).
    pub async fn wait(self) -> Result<(), Error> {
        match self.task.await {
            Ok(r) => r.map_err(Error::Runtime),
            Err(e) => Err(Error::Runtime(std::io::Error::other(e.to_string()))),
        }
    }
}

/// Binds `addr` (loopback only) and serves the page on the current tokio
/// runtime.
pub async fn start(config: Config, addr: SocketAddr) -> Result<Server, Error> {
    if !addr.ip().is_loopback() {
        return Err(Error::NotLoopback(addr));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Bind(addr, e))?;
    let local = listener.local_addr().map_err(|e| Error::Bind(addr, e))?;
    let app = router(config);
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    });
    Ok(Server {
        url: format!("http://{local}/"),
        task,
    })
}

/// Binds `addr` (loopback only), calls `ready` with the page's URL, and
/// serves until Ctrl-C.
pub fn serve_blocking(
    config: Config,
    addr: SocketAddr,
    ready: impl FnOnce(&str),
) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    rt.block_on(async move {
        let server = start(config, addr).await?;
        ready(server.url());
        server.wait().await
    })
}
