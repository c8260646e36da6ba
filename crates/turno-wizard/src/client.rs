//! The wizard's side of the gateway: a charge and a lookup over HTTP/1.1
//! on loopback, each outcome classified as the submit chart needs it.
//!
//! A charge ends in `Ok({"receipt"})` or `Err({"kind", "known", "message"})`:
//! `known: true` only when the gateway *said* it did not charge (a 4xx or
//! 5xx answer with a body); a timeout, a cut connection or an unreadable
//! reply is `known: false`: the charge may have happened.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

/// How long the wizard waits for one gateway answer.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// How long `uncertain` keeps asking before `unresolvable`.
pub const QUERY_DEADLINE: Duration = Duration::from_secs(3);

/// Faults for the next charge (and its lookups), from the fault panel.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Faults {
    /// Extra latency per gateway answer, ms.
    #[serde(default)]
    pub latency_ms: u64,
    /// `""`, `timeout`, `lost`, `error`.
    #[serde(default)]
    pub charge: String,
    /// Lookups answer 503 (the query by key cannot resolve).
    #[serde(default)]
    pub lookup_down: bool,
    /// Crash the wizard server after the charge was sent.
    #[serde(default)]
    pub crash: bool,
}

impl Faults {
    /// Checks the values the panel may set.
    pub fn check(&self) -> Result<(), String> {
        if !matches!(self.charge.as_str(), "" | "timeout" | "lost" | "error") {
            return Err(format!(
                "unknown charge fault {:?}: use timeout, lost or error",
                self.charge
            ));
        }
        if self.latency_ms > 10_000 {
            return Err("latency must be at most 10000 ms".into());
        }
        Ok(())
    }
}

struct Answer {
    status: u16,
    body: Result<Value, String>,
}

async fn exchange(gateway: SocketAddr, req: Request<Full<Bytes>>) -> Result<Answer, String> {
    let stream = tokio::net::TcpStream::connect(gateway)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let conn = tokio::spawn(conn);
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let status = resp.status().as_u16();
    let body = match resp.into_body().collect().await {
        Ok(b) => {
            serde_json::from_slice(&b.to_bytes()).map_err(|e| format!("reply is not JSON: {e}"))
        }
        Err(e) => Err(format!("reply cut: {e}")),
    };
    conn.abort();
    Ok(Answer { status, body })
}

fn request(
    method: &str,
    gateway: SocketAddr,
    path: &str,
    faults: &Faults,
    fault: &str,
    body: Vec<u8>,
) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", gateway.to_string())
        .header("content-type", "application/json");
    if faults.latency_ms > 0 {
        b = b.header("x-turno-latency-ms", faults.latency_ms.to_string());
    }
    if !fault.is_empty() {
        b = b.header("x-turno-fault", fault);
    }
    b.body(Full::new(Bytes::from(body)))
        .expect("a valid request")
}

/// Charges `body` under `key`. See the module docs for the outcome.
pub async fn charge(
    gateway: SocketAddr,
    key: &str,
    body: &Value,
    faults: &Faults,
) -> Result<Value, Value> {
    charge_within(gateway, key, body, faults, TIMEOUT).await
}

/// [`charge`], giving up after `timeout` (the outcome is then unknown).
pub async fn charge_within(
    gateway: SocketAddr,
    key: &str,
    body: &Value,
    faults: &Faults,
    timeout: Duration,
) -> Result<Value, Value> {
    let mut req = request(
        "POST",
        gateway,
        "/charges",
        faults,
        &faults.charge,
        body.to_string().into_bytes(),
    );
    req.headers_mut().insert(
        "idempotency-key",
        key.parse()
            .map_err(|_| json!({"kind": "bad key", "known": true}))?,
    );
    let unknown =
        |kind: &str, message: String| json!({"kind": kind, "known": false, "message": message});
    match tokio::time::timeout(timeout, exchange(gateway, req)).await {
        Err(_) => Err(unknown(
            "timeout",
            format!("no answer within {} s", timeout.as_secs()),
        )),
        Ok(Err(e)) => Err(unknown("lost", e)),
        Ok(Ok(Answer { status, body })) => match (status, body) {
            (200 | 201, Ok(v)) if v.get("receipt").is_some() => Ok(v),
            (200 | 201, Ok(_)) => Err(unknown("lost", "a reply without a receipt".into())),
            (_, Err(e)) => Err(unknown("lost", e)),
            // 409: the same key is being charged right now: not known.
            (409, Ok(v)) => Err(unknown(
                "in progress",
                v["error"].as_str().unwrap_or("").into(),
            )),
            (s, Ok(v)) => Err(json!({
                "kind": if s >= 500 { "server error" } else { "rejected" },
                "known": v["charged"] == json!(false),
                "status": s,
                "message": v["error"],
            })),
        },
    }
}

/// What a lookup by key says.
#[derive(Debug, PartialEq)]
pub enum Lookup {
    /// Charged: the receipt.
    Charged(Value),
    /// The gateway never charged this key.
    Unknown,
}

/// Asks the gateway about `key` until it knows or `deadline` passes
/// (`Err` then, with the last problem).
pub async fn query(
    gateway: SocketAddr,
    key: &str,
    faults: &Faults,
    deadline: Duration,
) -> Result<Lookup, String> {
    let until = Instant::now() + deadline;
    let path = format!("/charges/{key}");
    let fault = if faults.lookup_down {
        "lookup-down"
    } else {
        ""
    };
    let mut last;
    loop {
        let req = request("GET", gateway, &path, faults, fault, Vec::new());
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left.min(TIMEOUT), exchange(gateway, req)).await {
            Ok(Ok(Answer {
                status: 200,
                body: Ok(v),
            })) => return Ok(Lookup::Charged(v["receipt"].clone())),
            Ok(Ok(Answer { status: 404, .. })) => return Ok(Lookup::Unknown),
            Ok(Ok(Answer { status, .. })) => last = format!("the gateway answered {status}"),
            Ok(Err(e)) => last = e,
            Err(_) => last = "no answer in time".into(),
        }
        if Instant::now() + Duration::from_millis(200) >= until {
            return Err(last);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Posts `body` as JSON to `path` at `addr` and reads a JSON answer, within
/// `timeout`: its status and body. For the cluster's nodes and supervisor,
/// which speak to each other over loopback HTTP.
#[cfg(feature = "cluster")]
pub(crate) async fn post_json(
    addr: SocketAddr,
    path: &str,
    body: &Value,
    timeout: Duration,
) -> Result<(u16, Value), String> {
    let req = Request::builder()
        .method("POST")
        .uri(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("x-turno-node", "1")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(timeout, exchange(addr, req)).await {
        Ok(Ok(a)) => Ok((a.status, a.body.unwrap_or(Value::Null))),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

/// `GET path` at `addr` within `timeout`: its status.
#[cfg(feature = "cluster")]
pub(crate) async fn get_status(addr: SocketAddr, path: &str, timeout: Duration) -> Option<u16> {
    let req = Request::builder()
        .method("GET")
        .uri(path)
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .ok()?;
    match tokio::time::timeout(timeout, exchange(addr, req)).await {
        Ok(Ok(a)) => Some(a.status),
        _ => None,
    }
}
