//! The fake payment gateway: a separate service with its own actor, its own
//! HTTP endpoint on loopback and its own SQLite file.
//!
//! - `POST /charges` with an `Idempotency-Key` header charges once per key
//!   (turno-store's key store, the IETF draft's semantics): a repeat with
//!   the same body replays the stored receipt, a repeat while the first is
//!   running is 409, the same key with another body is 422.
//! - `GET /charges/{key}` looks the key up: 200 with the receipt, 202 while
//!   in progress, 404 when the gateway never charged it.
//! - `GET /stats`: how many charges the ledger holds and how many charge
//!   requests arrived (the tests' "exactly one charge").
//!
//! Every charge and lookup is one turn of [`GatewayActor`], so two requests
//! with one key cannot interleave their claim and completion.
//!
//! Faults are asked for per request (this is a fake; a real gateway does not
//! take orders from its clients): `x-turno-latency-ms: N` delays the
//! answer; `x-turno-fault: error` answers 500 **without charging**;
//! `timeout` charges and then answers only after the client has given up;
//! `lost` charges and then cuts the connection mid-reply; on a lookup,
//! `lookup-down` answers 503.

use std::convert::Infallible;
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
use turno::{Actor, Addr, Context, Props, ReplyTo, System, ThreadedSystem};
use turno_store::{Claim, KeyState, SnapshotWrite, Store};

use crate::ids::random_hex;

/// The client every key belongs to (the wizard is the gateway's only client).
const OWNER: &str = "wizard";
const LEDGER: &str = "ledger";

/// How long a `timeout` fault keeps the client waiting after charging.
pub const HANG: Duration = Duration::from_secs(6);

/// What a charge did.
#[derive(Debug)]
pub enum Charged {
    /// Charged now: the receipt.
    New(Value),
    /// Charged before with this key: the stored receipt.
    Replayed(Value),
    /// Another request with this key is being charged.
    InProgress,
    /// This key was used for another body.
    Mismatch,
    /// The gateway's store failed (nothing was charged).
    Failed(String),
}

/// What a lookup found.
#[derive(Debug)]
pub enum Found {
    /// Charged: the receipt.
    Charged(Value),
    /// Claimed, not completed yet.
    InProgress,
    /// Never charged (or past retention).
    Unknown,
    /// The gateway's store failed.
    Failed(String),
}

/// The gateway actor's messages.
pub enum GatewayMsg {
    /// Charge `body` once for `key`.
    Charge {
        /// The idempotency key.
        key: String,
        /// The request body (its bytes are the fingerprint).
        body: Vec<u8>,
        /// Where the outcome goes.
        reply: ReplyTo<Charged>,
    },
    /// Look `key` up.
    Lookup {
        /// The idempotency key.
        key: String,
        /// Where the answer goes.
        reply: ReplyTo<Found>,
    },
}

/// The gateway's ledger keeper. Its store calls are short SQLite
/// transactions on the gateway's own file; this actor is the gateway's
/// whole "bank", so a turn that waits on its disk is the point, not a
/// stall of anybody else.
pub struct GatewayActor {
    store: Store,
}

impl GatewayActor {
    /// A charge: the claim of its key, the ledger entry and the key's
    /// completion with the receipt in one transaction
    /// ([`Store::claim_and_complete`]): one commit waits for the disk, and
    /// a charge is in the ledger exactly when its key says so.
    fn charge(&mut self, key: &str, body: &[u8]) -> Charged {
        let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let id = format!("ch_{}", random_hex(8));
        let receipt = json!({
            "id": id,
            "key": key,
            "amount_cents": req["amount_cents"],
            "plan": req["plan"],
            "last4": req["last4"],
            "at_ms": self.store.now(),
        });
        let bytes = receipt.to_string().into_bytes();
        let entry = SnapshotWrite::new(LEDGER, id, None, bytes.clone());
        match self
            .store
            .claim_and_complete(OWNER, key, body, &bytes, &[entry])
        {
            Err(e) => Charged::Failed(e.to_string()),
            Ok(Claim::New) => Charged::New(receipt),
            Ok(Claim::InProgress) => Charged::InProgress,
            Ok(Claim::FingerprintMismatch) => Charged::Mismatch,
            Ok(Claim::Completed(r)) => {
                Charged::Replayed(serde_json::from_slice(&r).unwrap_or(Value::Null))
            }
        }
    }

    fn lookup(&self, key: &str) -> Found {
        match self.store.lookup(OWNER, key) {
            Err(e) => Found::Failed(e.to_string()),
            Ok(None) => Found::Unknown,
            Ok(Some(r)) => match (r.state, r.result) {
                (KeyState::Completed, Some(bytes)) => {
                    Found::Charged(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
                }
                _ => Found::InProgress,
            },
        }
    }
}

impl Actor for GatewayActor {
    type Msg = GatewayMsg;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, msg: GatewayMsg) {
        match msg {
            GatewayMsg::Charge { key, body, reply } => {
                reply.reply(self.charge(&key, &body));
            }
            GatewayMsg::Lookup { key, reply } => {
                reply.reply(self.lookup(&key));
            }
        }
    }
}

/// Counters of requests (the ledger itself is in the store).
#[derive(Default, Debug)]
pub struct Counters {
    /// `POST /charges` received.
    pub charge_requests: AtomicU64,
    /// `GET /charges/{key}` received.
    pub lookups: AtomicU64,
}

#[derive(Clone)]
struct Shared {
    actor: Addr<GatewayMsg>,
    store: Store,
    counters: Arc<Counters>,
}

/// A running gateway.
pub struct Gateway {
    /// Where it listens.
    pub addr: SocketAddr,
    store: Store,
    counters: Arc<Counters>,
    server: tokio::task::JoinHandle<()>,
    system: Option<ThreadedSystem>,
}

impl Gateway {
    /// Opens (or creates) the gateway's SQLite file and listens on
    /// `127.0.0.1:port` (0: any free port).
    pub async fn start(db: &std::path::Path, port: u16) -> Result<Gateway, crate::Error> {
        let store =
            Store::sqlite(db).map_err(|e| crate::Error::Store(db.display().to_string(), e))?;
        let system = ThreadedSystem::builder().threads(1).build();
        let s = store.clone();
        let actor = system
            .spawn(Props::new().name("gateway"), move || GatewayActor {
                store: s.clone(),
            })
            .map_err(|e| crate::Error::Spawn(e.to_string()))?;
        let counters = Arc::new(Counters::default());
        let shared = Shared {
            actor,
            store: store.clone(),
            counters: counters.clone(),
        };
        let app = Router::new()
            .route("/charges", post(charge))
            .route("/charges/{key}", get(lookup))
            .route("/stats", get(stats))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| crate::Error::Bind(format!("127.0.0.1:{port}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| crate::Error::Bind("gateway".into(), e))?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Gateway {
            addr,
            store,
            counters,
            server,
            system: Some(system),
        })
    }

    /// Charges in the ledger (from the database, not a counter).
    pub fn charges(&self) -> usize {
        ledger_size(&self.store)
    }

    /// Request counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.server.abort();
        if let Some(sys) = self.system.take() {
            let _ = sys.shutdown_now(Duration::from_secs(1));
        }
    }
}

fn ledger_size(store: &Store) -> usize {
    store.list_snapshots(LEDGER).map_or(0, |l| l.len())
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn latency(h: &HeaderMap) {
    if let Some(ms) = header(h, "x-turno-latency-ms").and_then(|v| v.parse::<u64>().ok()) {
        tokio::time::sleep(Duration::from_millis(ms.min(30_000))).await;
    }
}

fn problem(status: StatusCode, known: bool, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({"error": message.into(), "charged": !known})),
    )
        .into_response()
}

async fn charge(State(s): State<Shared>, h: HeaderMap, body: Bytes) -> Response {
    s.counters.charge_requests.fetch_add(1, Ordering::Relaxed);
    let Some(key) = header(&h, "idempotency-key").map(str::to_string) else {
        return problem(
            StatusCode::BAD_REQUEST,
            true,
            "the Idempotency-Key header is required",
        );
    };
    if key.is_empty() || key.len() > 200 {
        return problem(
            StatusCode::BAD_REQUEST,
            true,
            "the Idempotency-Key must have 1 to 200 characters",
        );
    }
    if serde_json::from_slice::<Value>(&body).is_err() {
        return problem(StatusCode::BAD_REQUEST, true, "the body is not JSON");
    }
    latency(&h).await;
    let fault = header(&h, "x-turno-fault").unwrap_or("").to_string();
    if fault == "error" {
        return problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            true,
            "injected server error: nothing was charged",
        );
    }
    let answer = turno::bridge::ask(
        &s.actor,
        |reply| GatewayMsg::Charge {
            key: key.clone(),
            body: body.to_vec(),
            reply,
        },
        Duration::from_secs(10),
    )
    .await;
    let (status, value) = match answer {
        Ok(Charged::New(r)) => (StatusCode::CREATED, json!({"receipt": r})),
        Ok(Charged::Replayed(r)) => (StatusCode::OK, json!({"receipt": r, "replayed": true})),
        Ok(Charged::InProgress) => {
            return problem(
                StatusCode::CONFLICT,
                false,
                "a request with this key is in progress",
            )
        }
        Ok(Charged::Mismatch) => {
            return problem(
                StatusCode::UNPROCESSABLE_ENTITY,
                true,
                "this key was used for another request",
            )
        }
        Ok(Charged::Failed(e)) => return problem(StatusCode::SERVICE_UNAVAILABLE, true, e),
        Err(e) => return problem(StatusCode::SERVICE_UNAVAILABLE, false, e.to_string()),
    };
    match fault.as_str() {
        "timeout" => {
            tokio::time::sleep(HANG).await;
            (status, Json(value)).into_response()
        }
        "lost" => {
            // Headers go out, then the connection is cut mid-body.
            let cut = futures_util::stream::once(async {
                Err::<Bytes, std::io::Error>(std::io::Error::other("injected lost reply"))
            });
            Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Body::from_stream(cut))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        _ => (status, Json(value)).into_response(),
    }
}

async fn lookup(State(s): State<Shared>, Path(key): Path<String>, h: HeaderMap) -> Response {
    s.counters.lookups.fetch_add(1, Ordering::Relaxed);
    latency(&h).await;
    if header(&h, "x-turno-fault") == Some("lookup-down") {
        return problem(
            StatusCode::SERVICE_UNAVAILABLE,
            false,
            "injected: lookups are down",
        );
    }
    let answer = turno::bridge::ask(
        &s.actor,
        |reply| GatewayMsg::Lookup { key, reply },
        Duration::from_secs(10),
    )
    .await;
    match answer {
        Ok(Found::Charged(r)) => {
            (StatusCode::OK, Json(json!({"found": true, "receipt": r}))).into_response()
        }
        Ok(Found::InProgress) => (
            StatusCode::ACCEPTED,
            Json(json!({"found": false, "in_progress": true})),
        )
            .into_response(),
        Ok(Found::Unknown) => {
            (StatusCode::NOT_FOUND, Json(json!({"found": false}))).into_response()
        }
        Ok(Found::Failed(e)) => problem(StatusCode::SERVICE_UNAVAILABLE, false, e),
        Err(e) => problem(StatusCode::SERVICE_UNAVAILABLE, false, e.to_string()),
    }
}

async fn stats(State(s): State<Shared>) -> Result<Json<Value>, Infallible> {
    let store = s.store.clone();
    let charges = tokio::task::spawn_blocking(move || ledger_size(&store))
        .await
        .unwrap_or(0);
    Ok(Json(json!({
        "charges": charges,
        "charge_requests": s.counters.charge_requests.load(Ordering::Relaxed),
        "lookups": s.counters.lookups.load(Ordering::Relaxed),
    })))
}
