//! The wizard over its HTTP API on loopback: the load module's simulated
//! users with faults (charges == completed signups), the crash of the
//! server mid-submit, expiry, and the refusals.

use std::time::Duration;

use serde_json::{json, Value};
use turno_wizard::load::{self, LoadConfig};
use turno_wizard::{Config, Wizard};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_with_faults_complete_with_exactly_one_charge_each() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LoadConfig {
        users: 24,
        concurrency: 24,
        fault_every: 2,
    };
    let r = load::run(dir.path(), &cfg).await.unwrap();
    assert_eq!(r.faulted, 12);
    assert_eq!(r.completed, 24, "{r:?}");
    assert_eq!(r.charges, r.completed, "{r:?}");
}

/// A tiny client keeping one session's cookie.
struct Client {
    base: String,
    cookie: String,
    sid: String,
}

async fn call(
    base: &str,
    method: &str,
    path: &str,
    cookie: &str,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
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
    let req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("cookie", cookie)
        .body(Full::new(Bytes::from(
            body.map(|b| b.to_string()).unwrap_or_default(),
        )))
        .unwrap();
    let resp = tx.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let set = resp
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        set,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

impl Client {
    async fn new(w: &Wizard) -> Client {
        let base = w.url();
        let (s, cookie, v) = call(&base, "POST", "/api/new", "", None).await;
        assert_eq!(s, 200);
        Client {
            base,
            cookie: cookie.unwrap(),
            sid: v["sid"].as_str().unwrap().into(),
        }
    }
    async fn event(&self, step: &str, event: &str, fields: Value) -> (u16, Value) {
        let body = json!({"sid": self.sid, "step": step, "event": event, "fields": fields});
        let (s, _, v) = call(&self.base, "POST", "/api/event", &self.cookie, Some(body)).await;
        (s, v)
    }
    async fn state(&self) -> (u16, Value) {
        let (s, _, v) = call(&self.base, "GET", "/api/state", &self.cookie, None).await;
        (s, v)
    }
    async fn to_review(&self) {
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
    async fn wait_for(&self, step: &str) -> Value {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_submit_restores_into_uncertain_and_charges_once() {
    let dir = tempfile::tempdir().unwrap();
    let w = Wizard::start(Config::new(dir.path())).await.unwrap();
    let c = Client::new(&w).await;
    c.to_review().await;
    let (_, _, v) = call(
        &c.base,
        "POST",
        "/api/faults",
        &c.cookie,
        Some(json!({"sid": c.sid, "faults": {"crash": true}})),
    )
    .await;
    assert_eq!(v["faults"]["crash"], true);
    let (s, v) = c.event("review", "CONFIRM", json!({})).await;
    assert_eq!((s, v["step"].as_str()), (200, Some("submit.sending")));
    // Down for a while (503), then back from the snapshot.
    let mut saw_down = false;
    for _ in 0..100 {
        if c.state().await.0 == 503 {
            saw_down = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saw_down, "the server went down");
    let v = c.wait_for("completed").await;
    assert_eq!(w.crashes(), 1);
    assert_eq!(w.charges(), 1);
    assert_eq!(
        v["context"]["attempts"], 1,
        "never resent after the restore"
    );
    assert!(v["context"]["receipt"]["id"]
        .as_str()
        .unwrap()
        .starts_with("ch_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_stale_steps_other_sessions_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::new(dir.path());
    cfg.ttl = Duration::from_secs(1);
    let w = Wizard::start(cfg).await.unwrap();
    let c = Client::new(&w).await;
    let (s, v) = c
        .event("personal", "NEXT", json!({"name": "", "email": "x"}))
        .await;
    assert_eq!(s, 422);
    assert_eq!(v["errors"]["name"], "Full name is required.");
    let (s, _) = c
        .event(
            "personal",
            "NEXT",
            json!({"name": "Ada", "email": "ada@example.org"}),
        )
        .await;
    assert_eq!(s, 200);
    // A replay of the same form: the session is at plan now.
    let (s, v) = c
        .event(
            "personal",
            "NEXT",
            json!({"name": "Eve", "email": "eve@example.org"}),
        )
        .await;
    assert_eq!(s, 409, "{v}");
    assert_eq!(v["step"], "plan");
    // Another session's id in the form.
    let body = json!({"sid": "ab".repeat(16), "step": "plan", "event": "BACK"});
    let (s, _, _) = call(&c.base, "POST", "/api/event", &c.cookie, Some(body)).await;
    assert_eq!(s, 403);
    // The plan step's data was not overwritten by the replay.
    assert_eq!(c.state().await.1["context"]["personal"]["name"], "Ada");
    // Expiry: a fresh server instance (no session in memory) finds nothing
    // once the TTL has passed.
    drop(w);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut cfg = Config::new(dir.path());
    cfg.ttl = Duration::from_secs(1);
    let w2 = Wizard::start(cfg).await.unwrap();
    let (s, _, v) = call(&w2.url(), "GET", "/api/state", &c.cookie, None).await;
    assert_eq!(s, 410, "{v}");
}
