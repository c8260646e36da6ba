//! The HTTP service as a client meets it: status codes, bodies and the
//! faults asked for in headers, each checked against the ledger.

#![cfg(feature = "http")]

use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use turno_gateway::http::HttpGateway;

/// The status and, when the body arrives whole, its JSON (`Err` when the
/// connection is cut or the body is not JSON). A connection cut before the
/// status line arrives is status 0.
async fn call(
    at: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Result<Value, String>) {
    let stream = tokio::net::TcpStream::connect(at).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", at.to_string());
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let resp = match sender
        .send_request(b.body(Full::new(Bytes::from(body.to_string()))).unwrap())
        .await
    {
        Ok(r) => r,
        Err(e) => return (0, Err(format!("cut: {e}"))),
    };
    let status = resp.status().as_u16();
    let body = match resp.into_body().collect().await {
        Ok(b) => serde_json::from_slice(&b.to_bytes()).map_err(|e| e.to_string()),
        Err(e) => Err(format!("cut: {e}")),
    };
    conn.abort();
    (status, body)
}

async fn charge(
    at: SocketAddr,
    key: &str,
    body: &str,
    fault: &str,
) -> (u16, Result<Value, String>) {
    let mut h = vec![
        ("idempotency-key", key),
        ("content-type", "application/json"),
    ];
    if !fault.is_empty() {
        h.push(("x-turno-fault", fault));
    }
    call(at, "POST", "/charges", &h, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_charge_per_key_whatever_the_client_meets() {
    let dir = tempfile::tempdir().unwrap();
    let gw = HttpGateway::start(&dir.path().join("gateway.db"), 0)
        .await
        .unwrap();
    let at = gw.addr;
    let req = r#"{"amount_cents": 900, "plan": "pro", "last4": "4242", "token": "tok_x"}"#;

    // A server error charges nothing and says so.
    let (s, b) = charge(at, "k1", req, "error").await;
    assert_eq!((s, b.unwrap()["charged"].clone()), (500, json!(false)));
    assert_eq!(gw.charges(), 0);

    // A lost reply: the money is taken, the client's connection is cut
    // before a body arrives (hyper may not even flush the status line).
    let (s, b) = charge(at, "k1", req, "lost").await;
    assert!(s == 0 || s == 201, "{s}");
    assert!(b.unwrap_err().starts_with("cut"), "the reply is cut");
    assert_eq!(gw.charges(), 1);

    // The retry replays the receipt, which repeats no token.
    let (s, b) = charge(at, "k1", req, "").await;
    let b = b.unwrap();
    assert_eq!((s, b["replayed"].clone()), (200, json!(true)));
    assert_eq!(b["receipt"]["last4"], "4242");
    assert!(b["receipt"].get("token").is_none());

    // The key with another body is refused, nothing taken.
    let (s, b) = charge(at, "k1", r#"{"amount_cents": 1}"#, "").await;
    assert_eq!((s, b.unwrap()["charged"].clone()), (422, json!(false)));

    // A decline is an explicit refusal.
    let (s, _) = charge(at, "k2", req, "decline").await;
    assert_eq!(s, 402);

    // Bad requests name their problem.
    let (s, b) = charge(at, "k3", req, "explode").await;
    assert_eq!(s, 400);
    assert!(b.unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("\"explode\""));
    let (s, _) = call(at, "POST", "/charges", &[], req).await;
    assert_eq!(s, 400, "no key");
    let (s, _) = charge(at, "k3", "not json", "").await;
    assert_eq!(s, 400);

    // Lookups: known, unknown, down.
    let (s, b) = call(at, "GET", "/charges/k1", &[], "").await;
    assert_eq!(
        (s, b.unwrap()["receipt"]["id"].clone()),
        (200, json!("ch_1"))
    );
    let (s, _) = call(at, "GET", "/charges/k2", &[], "").await;
    assert_eq!(s, 404, "a declined key was never charged");
    let (s, _) = call(
        at,
        "GET",
        "/charges/k1",
        &[("x-turno-fault", "lookup-down")],
        "",
    )
    .await;
    assert_eq!(s, 503);

    let (_, stats) = call(at, "GET", "/stats", &[], "").await;
    let stats = stats.unwrap();
    assert_eq!(stats["charges"], 1);
    assert_eq!(stats["charge_requests"], 8);
    assert_eq!(stats["lookups"], 3);
    assert_eq!(gw.ledger().charges_for("k1").unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_charges_are_committed_together_and_each_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let gw = HttpGateway::start(&dir.path().join("gateway.db"), 0)
        .await
        .unwrap();
    let at = gw.addr;
    let mut calls = Vec::new();
    for i in 0..60 {
        let key = format!("k{}", i % 12);
        calls.push(tokio::spawn(async move {
            charge(at, &key, r#"{"amount_cents": 500}"#, "").await.0
        }));
    }
    let mut statuses = Vec::new();
    for c in calls {
        statuses.push(c.await.unwrap());
    }
    let created = statuses.iter().filter(|s| **s == 201).count();
    let replayed = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!((created, replayed), (12, 48), "{statuses:?}");
    assert_eq!(gw.charges(), 12);
    for k in 0..12 {
        assert_eq!(gw.ledger().charges_for(&format!("k{k}")).unwrap(), 1);
    }
}
