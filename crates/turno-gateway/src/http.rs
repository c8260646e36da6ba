//! The gateway as a separate HTTP service on loopback, with its own store:
//! what `turno demo` runs beside the wizard.
//!
//! **Group commit.** Charges go to one writer thread, which takes every
//! charge queued while it was busy and commits them in one transaction of
//! the store ([`Ledger::charge_batch`]): many clients share one wait for the
//! disk, and each answer leaves only once its transaction is on disk. Two
//! requests with one key cannot interleave their claim and completion: the
//! writer is one thread, and each claim and completion is one transaction.
//!
//! - `POST /charges` with an `Idempotency-Key` header and a JSON body
//!   charges once per key (the IETF idempotency-key draft's semantics): 201
//!   with `{"receipt"}` when charged now; 200 with `{"receipt", "replayed":
//!   true}` for a repeat with the same body; 409 while a request with the key
//!   is in progress; 422 for the key with another body; 402 for a decline.
//! - `GET /charges/{key}`: 200 `{"found": true, "receipt"}`, 202 while in
//!   progress, 404 when the gateway never charged the key.
//! - `GET /stats`: `{"charges", "charge_requests", "lookups"}`, the charges
//!   counted in the ledger itself.
//!
//! Every error body is `{"error": message, "charged": bool}`: `charged:
//! false` only when the gateway *knows* nothing was taken.
//!
//! Faults are asked for per request: `x-turno-latency-ms: N` holds the
//! request N ms (at most [`MAX_LATENCY`]) before the gateway handles it;
//! `x-turno-fault: error` answers 500 without charging; `timeout` charges
//! and answers only after [`HANG`] (after the client gave up); `lost`
//! charges and cuts the connection mid-reply; `decline` refuses (402); on a
//! lookup, `lookup-down` answers 503. An unknown fault or latency value is a
//! 400 that names it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use turno_store::Store;

use crate::fault::Fault;
use crate::ledger::{Charged, Found, Ledger};

/// How long a `timeout` fault keeps the client waiting after charging.
pub const HANG: Duration = Duration::from_secs(6);

/// The longest latency a request may ask for.
pub const MAX_LATENCY: Duration = Duration::from_secs(30);

/// Why the gateway did not start.
#[derive(Debug)]
pub enum StartError {
    /// The ledger's store could not be opened or read.
    Store(String, turno_store::StoreError),
    /// The gateway's writer thread could not be started.
    Spawn(std::io::Error),
    /// The port could not be bound.
    Bind(String, std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Store(path, e) => write!(f, "the gateway's store {path}: {e}"),
            StartError::Spawn(e) => write!(f, "the gateway's writer thread: {e}"),
            StartError::Bind(at, e) => write!(f, "the gateway cannot listen on {at}: {e}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Store(_, e) => Some(e),
            StartError::Bind(_, e) | StartError::Spawn(e) => Some(e),
        }
    }
}

/// Counters of requests (the charges themselves are counted in the ledger).
#[derive(Default, Debug)]
pub struct Counters {
    /// `POST /charges` received.
    pub charge_requests: AtomicU64,
    /// `GET /charges/{key}` received.
    pub lookups: AtomicU64,
}

#[derive(Clone)]
struct Shared {
    writer: std::sync::mpsc::Sender<Job>,
    ledger: Ledger,
    counters: Arc<Counters>,
}

/// A charge for the writer thread.
struct Job {
    key: String,
    request: Value,
    done: oneshot::Sender<Charged>,
}

/// The most charges one transaction takes.
const MAX_BATCH: usize = 256;

/// The writer thread: one transaction for every charge waiting, then each
/// answer. It ends when every sender is gone.
fn writer(ledger: Ledger, jobs: std::sync::mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let requests: Vec<(String, Value)> = batch
            .iter_mut()
            .map(|j| (std::mem::take(&mut j.key), std::mem::take(&mut j.request)))
            .collect();
        for (job, outcome) in batch.into_iter().zip(ledger.charge_batch(&requests)) {
            let _ = job.done.send(outcome);
        }
    }
}

/// A running gateway service. Dropping it stops the server and its writer.
pub struct HttpGateway {
    /// Where it listens.
    pub addr: SocketAddr,
    ledger: Ledger,
    counters: Arc<Counters>,
    server: tokio::task::JoinHandle<()>,
}

impl HttpGateway {
    /// Opens (or creates) the gateway's SQLite file `db` and listens on
    /// `127.0.0.1:port` (0: any free port). Call inside a tokio runtime.
    pub async fn start(db: &std::path::Path, port: u16) -> Result<HttpGateway, StartError> {
        let store =
            Store::sqlite(db).map_err(|e| StartError::Store(db.display().to_string(), e))?;
        HttpGateway::start_with(store, port).await
    }

    /// [`HttpGateway::start`] over a store already open (any backend).
    pub async fn start_with(store: Store, port: u16) -> Result<HttpGateway, StartError> {
        let ledger = Ledger::open(store).map_err(|e| StartError::Store("ledger".into(), e))?;
        let (tx, rx) = std::sync::mpsc::channel();
        let l = ledger.clone();
        std::thread::Builder::new()
            .name("turno-gateway-writer".into())
            .spawn(move || writer(l, rx))
            .map_err(StartError::Spawn)?;
        let counters = Arc::new(Counters::default());
        let shared = Shared {
            writer: tx,
            ledger: ledger.clone(),
            counters: counters.clone(),
        };
        let app = Router::new()
            .route("/charges", post(charge))
            .route("/charges/{key}", get(lookup))
            .route("/stats", get(stats))
            .with_state(shared);
        let at = format!("127.0.0.1:{port}");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| StartError::Bind(at.clone(), e))?;
        let addr = listener.local_addr().map_err(|e| StartError::Bind(at, e))?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(HttpGateway {
            addr,
            ledger,
            counters,
            server,
        })
    }

    /// The gateway's ledger (what tests count: money actually taken).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Charges in the ledger, read from the store (0 if it cannot be read).
    pub fn charges(&self) -> usize {
        self.ledger.charges().map_or(0, |c| c.len())
    }

    /// Request counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        // The router holds the writer's only sender: aborting the server
        // drops it, and the writer ends after its last transaction.
        self.server.abort();
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The latency and the fault a request asks for, or why its headers are not
/// understood.
fn requested_fault(h: &HeaderMap, lookup: bool) -> Result<(Duration, Fault), String> {
    let latency = match header(h, "x-turno-latency-ms") {
        None => Duration::ZERO,
        Some(v) => match v.parse::<u64>() {
            Ok(ms) => Duration::from_millis(ms).min(MAX_LATENCY),
            Err(_) => return Err(format!("x-turno-latency-ms: {v:?} is not a whole number")),
        },
    };
    let fault = match (header(h, "x-turno-fault").unwrap_or(""), lookup) {
        ("", _) => Fault::None,
        ("error", false) => Fault::ServerErrorBeforeExecuting,
        ("timeout", false) => Fault::TimeoutAfterExecuting(HANG),
        ("lost", false) => Fault::LostReply,
        ("decline", false) => Fault::Decline,
        ("lookup-down", true) => Fault::ServerErrorBeforeExecuting,
        (other, false) => {
            return Err(format!(
                "x-turno-fault: {other:?} is not a charge fault (error, timeout, lost, decline)"
            ))
        }
        (other, true) => {
            return Err(format!(
                "x-turno-fault: {other:?} is not a lookup fault (lookup-down)"
            ))
        }
    };
    Ok((latency, fault))
}

fn problem(status: StatusCode, maybe_charged: bool, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({"error": message.into(), "charged": maybe_charged})),
    )
        .into_response()
}

/// Headers out, then the connection is cut mid-body: what a client sees of
/// a reply lost on the way.
fn cut_reply() -> Response {
    let cut = futures_util::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::other("injected lost reply"))
    });
    Response::builder()
        .status(StatusCode::CREATED)
        .header("content-type", "application/json")
        .body(Body::from_stream(cut))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn charge(State(s): State<Shared>, h: HeaderMap, body: Bytes) -> Response {
    s.counters.charge_requests.fetch_add(1, Ordering::Relaxed);
    let Some(key) = header(&h, "idempotency-key").map(str::to_string) else {
        return problem(
            StatusCode::BAD_REQUEST,
            false,
            "the Idempotency-Key header is required",
        );
    };
    if key.is_empty() || key.len() > 200 {
        return problem(
            StatusCode::BAD_REQUEST,
            false,
            "the Idempotency-Key must have 1 to 200 characters",
        );
    }
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return problem(
                StatusCode::BAD_REQUEST,
                false,
                format!("the body is not JSON: {e}"),
            )
        }
    };
    let (latency, fault) = match requested_fault(&h, false) {
        Ok(f) => f,
        Err(e) => return problem(StatusCode::BAD_REQUEST, false, e),
    };
    tokio::time::sleep(latency).await;
    let outcome = match fault {
        // Refusals take nothing and need no write.
        Fault::ServerErrorBeforeExecuting => {
            return problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                false,
                "injected server error: nothing was charged",
            )
        }
        Fault::Decline => return problem(StatusCode::PAYMENT_REQUIRED, false, "declined"),
        _ => {
            let (done, answer) = oneshot::channel();
            let job = Job { key, request, done };
            if s.writer.send(job).is_err() {
                return problem(
                    StatusCode::SERVICE_UNAVAILABLE,
                    false,
                    "the gateway's writer has stopped: nothing was charged",
                );
            }
            match answer.await {
                Ok(outcome) => outcome,
                // The writer died with the charge in hand: not known.
                Err(_) => {
                    return problem(
                        StatusCode::SERVICE_UNAVAILABLE,
                        true,
                        "the gateway's writer stopped during the charge",
                    )
                }
            }
        }
    };
    let response = match outcome {
        Charged::New(r) => (StatusCode::CREATED, Json(json!({"receipt": r}))).into_response(),
        Charged::Replayed(r) => (
            StatusCode::OK,
            Json(json!({"receipt": r, "replayed": true})),
        )
            .into_response(),
        // The other request may be charging: not known.
        Charged::InProgress => {
            return problem(
                StatusCode::CONFLICT,
                true,
                "a request with this key is in progress",
            )
        }
        Charged::Mismatch => {
            return problem(
                StatusCode::UNPROCESSABLE_ENTITY,
                false,
                "this key was used for another request",
            )
        }
        Charged::Declined => return problem(StatusCode::PAYMENT_REQUIRED, false, "declined"),
        Charged::Failed(e) => return problem(StatusCode::SERVICE_UNAVAILABLE, false, e),
    };
    match fault {
        Fault::TimeoutAfterExecuting(d) => {
            tokio::time::sleep(d).await;
            response
        }
        Fault::LostReply => cut_reply(),
        _ => response,
    }
}

async fn lookup(State(s): State<Shared>, Path(key): Path<String>, h: HeaderMap) -> Response {
    s.counters.lookups.fetch_add(1, Ordering::Relaxed);
    let (latency, fault) = match requested_fault(&h, true) {
        Ok(f) => f,
        Err(e) => return problem(StatusCode::BAD_REQUEST, false, e),
    };
    tokio::time::sleep(latency).await;
    if fault == Fault::ServerErrorBeforeExecuting {
        return problem(
            StatusCode::SERVICE_UNAVAILABLE,
            false,
            "injected: lookups are down",
        );
    }
    let ledger = s.ledger.clone();
    let found = tokio::task::spawn_blocking(move || ledger.lookup(&key))
        .await
        .unwrap_or_else(|e| Found::Failed(e.to_string()));
    match found {
        Found::Charged(r) => {
            (StatusCode::OK, Json(json!({"found": true, "receipt": r}))).into_response()
        }
        Found::InProgress => (
            StatusCode::ACCEPTED,
            Json(json!({"found": false, "in_progress": true})),
        )
            .into_response(),
        Found::Unknown => (StatusCode::NOT_FOUND, Json(json!({"found": false}))).into_response(),
        Found::Failed(e) => problem(StatusCode::SERVICE_UNAVAILABLE, false, e),
    }
}

async fn stats(State(s): State<Shared>) -> Json<Value> {
    let ledger = s.ledger.clone();
    let charges = tokio::task::spawn_blocking(move || ledger.charges().map_or(0, |c| c.len()))
        .await
        .unwrap_or(0);
    Json(json!({
        "charges": charges,
        "charge_requests": s.counters.charge_requests.load(Ordering::Relaxed),
        "lookups": s.counters.lookups.load(Ordering::Relaxed),
    }))
}
