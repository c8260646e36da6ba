//! Shared by the wizard's integration tests: a tiny HTTP/1.1 client that
//! keeps one session's cookie.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{json, Value};

/// A tiny client keeping one session's cookie.
pub struct Client {
    pub base: String,
    pub cookie: String,
    pub sid: String,
}

/// One HTTP/1.1 request on a fresh connection: the status, the headers
/// and the body.
pub async fn raw(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
) -> (u16, hyper::HeaderMap, Vec<u8>) {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    let addr: std::net::SocketAddr = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut tx, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = tx
        .send_request(req.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, bytes.to_vec())
}

pub async fn call(
    base: &str,
    method: &str,
    path: &str,
    cookie: &str,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let headers = [("content-type", "application/json"), ("cookie", cookie)];
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let (status, headers, bytes) = raw(base, method, path, &headers, body).await;
    let set = headers
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string());
    (
        status,
        set,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

impl Client {
    pub async fn new(base: &str) -> Client {
        let base = base.to_string();
        let (s, cookie, v) = call(&base, "POST", "/api/new", "", None).await;
        assert_eq!(s, 200);
        Client {
            base,
            cookie: cookie.unwrap(),
            sid: v["sid"].as_str().unwrap().into(),
        }
    }
    pub async fn event(&self, step: &str, event: &str, fields: Value) -> (u16, Value) {
        let body = json!({"sid": self.sid, "step": step, "event": event, "fields": fields});
        let (s, _, v) = call(&self.base, "POST", "/api/event", &self.cookie, Some(body)).await;
        (s, v)
    }
    pub async fn state(&self) -> (u16, Value) {
        let (s, _, v) = call(&self.base, "GET", "/api/state", &self.cookie, None).await;
        (s, v)
    }
    /// Sets this session's faults (the fault panel's form) and returns the
    /// faults the server now holds.
    pub async fn faults(&self, faults: Value) -> Value {
        let body = json!({"sid": self.sid, "faults": faults});
        let (s, _, v) = call(&self.base, "POST", "/api/faults", &self.cookie, Some(body)).await;
        assert_eq!(s, 200, "{v}");
        v["faults"].clone()
    }
    pub async fn to_review(&self) {
        for (step, fields) in [
            (
                "personal",
                json!({"name": "Ada Lovelace", "email": "ada@example.org"}),
            ),
            ("plan", json!({"plan": "team", "billing": "yearly"})),
            (
                "payment.card",
                json!({"card_number": "4242424242424242", "expiry": "01/40", "holder": "Ada", "otp": "000111"}),
            ),
        ] {
            let (s, v) = self.event(step, "NEXT", fields).await;
            assert_eq!(s, 200, "{step}: {v}");
        }
        assert_eq!(self.state().await.1["step"], "review");
    }
    pub async fn wait_for(&self, step: &str) -> Value {
        for _ in 0..300 {
            if let (200, v) = self.state().await {
                if v["step"] == step {
                    return v;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("never reached {step}: {:?}", self.state().await);
    }
}
