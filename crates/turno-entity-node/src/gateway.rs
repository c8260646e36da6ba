//! The node's side of the payment gateway (turno-gateway's HTTP service):
//! a charge and a lookup over HTTP/1.1, each outcome as the submit chart
//! (`turno_chart::submit`) takes it: a charge's receipt, `{"rejected"}`
//! only when the gateway said it took nothing, any other error unknown; a
//! lookup's `{"found": receipt-or-null}`.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

/// Faults a charge asks the gateway for (its `x-turno-*` headers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    /// `x-turno-latency-ms`: held this long before the gateway charges.
    pub latency_ms: u64,
    /// `x-turno-fault` on charges: `timeout`, `lost`, `error`, `decline`.
    pub charge: String,
    /// Lookups answer 503.
    pub lookup_down: bool,
}

impl Asked {
    /// The faults an entity key asks for: after its first `@`, `&`-joined
    /// `latency=MS`, `fault=NAME` and `lookup=down` (`order-7@fault=timeout`).
    /// A key without `@` asks for none; an unknown item is ignored here and
    /// refused by the gateway when it is a fault name it does not know.
    pub fn from_key(key: &str) -> Asked {
        let mut a = Asked::default();
        let Some((_, spec)) = key.split_once('@') else {
            return a;
        };
        for item in spec.split('&') {
            match item.split_once('=') {
                Some(("latency", ms)) => a.latency_ms = ms.parse().unwrap_or(0),
                Some(("fault", f)) => a.charge = f.to_string(),
                Some(("lookup", "down")) => a.lookup_down = true,
                _ => {}
            }
        }
        a
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
        .map_err(|e| format!("request: {e}"));
    let out = match resp {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let body = match resp.into_body().collect().await {
                Ok(b) => serde_json::from_slice(&b.to_bytes())
                    .map_err(|e| format!("reply is not JSON: {e}")),
                Err(e) => Err(format!("reply cut: {e}")),
            };
            Ok(Answer { status, body })
        }
        Err(e) => Err(e),
    };
    conn.abort();
    out
}

fn request(
    method: &str,
    gateway: SocketAddr,
    path: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> Result<Request<Full<Bytes>>, String> {
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", gateway.to_string())
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, v.as_str());
    }
    b.body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("the request cannot be built: {e}"))
}

/// Charges `input` (`{"key", "amount"}`) under its key, waiting at most
/// `timeout`.
pub async fn charge(
    gateway: SocketAddr,
    input: Value,
    asked: Asked,
    timeout: Duration,
) -> Result<Value, Value> {
    let key = input["key"].as_str().unwrap_or_default().to_string();
    let mut headers = vec![("idempotency-key", key)];
    if asked.latency_ms > 0 {
        headers.push(("x-turno-latency-ms", asked.latency_ms.to_string()));
    }
    if !asked.charge.is_empty() {
        headers.push(("x-turno-fault", asked.charge.clone()));
    }
    let body = json!({"amount_cents": input["amount"]}).to_string();
    let req = request("POST", gateway, "/charges", &headers, body.into_bytes())
        .map_err(|e| json!({"unknown": e}))?;
    match tokio::time::timeout(timeout, exchange(gateway, req)).await {
        Err(_) => Err(json!({"unknown": "no answer in time"})),
        Ok(Err(e)) => Err(json!({ "unknown": e })),
        Ok(Ok(Answer { status, body })) => match (status, body) {
            (200 | 201, Ok(v)) if v.get("receipt").is_some() => Ok(v["receipt"].clone()),
            // The gateway says it took nothing: an explicit rejection.
            (s, Ok(v)) if v["charged"] == json!(false) && s != 503 => {
                Err(json!({"rejected": v["error"], "status": s}))
            }
            (s, Ok(v)) => Err(json!({"unknown": v["error"], "status": s})),
            (s, Err(e)) => Err(json!({"unknown": e, "status": s})),
        },
    }
}

/// Looks `input`'s key up, waiting at most `timeout`.
pub async fn lookup(
    gateway: SocketAddr,
    input: Value,
    asked: Asked,
    timeout: Duration,
) -> Result<Value, Value> {
    let key = input["key"].as_str().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    if asked.lookup_down {
        headers.push(("x-turno-fault", "lookup-down".to_string()));
    }
    let req = request(
        "GET",
        gateway,
        &format!("/charges/{key}"),
        &headers,
        Vec::new(),
    )
    .map_err(|e| json!({ "error": e }))?;
    match tokio::time::timeout(timeout, exchange(gateway, req)).await {
        Err(_) => Err(json!({"error": "no answer in time"})),
        Ok(Err(e)) => Err(json!({ "error": e })),
        Ok(Ok(Answer {
            status: 200,
            body: Ok(v),
        })) => Ok(json!({"found": v["receipt"]})),
        Ok(Ok(Answer { status: 404, .. })) => Ok(json!({ "found": null })),
        Ok(Ok(Answer { status, .. })) => Err(json!({"error": "not known yet", "status": status})),
    }
}

#[cfg(test)]
mod tests {
    use super::Asked;

    #[test]
    fn a_key_asks_for_its_faults_after_the_at_sign() {
        assert_eq!(Asked::from_key("plain"), Asked::default());
        let a = Asked::from_key("s1@latency=1500&fault=timeout&lookup=down");
        assert_eq!(
            a,
            Asked {
                latency_ms: 1500,
                charge: "timeout".into(),
                lookup_down: true
            }
        );
    }
}
