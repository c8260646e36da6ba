//! A bounded load test over loopback: many simulated users go through the
//! whole signup over the HTTP API while faults are injected, and the
//! gateway's ledger is checked against the completed signups.
//!
//! Each user: `POST /api/new`, three `NEXT`s with valid data, optionally
//! `POST /api/faults`, `CONFIRM`, then `GET /api/state?after=REV` (the long
//! poll the sending page makes: answered once the session moves on) until
//! `completed` (a `failed` submit is retried, an `unresolvable` one counted).
//! The faults rotate over users: every `fault_every`-th user gets, in turn,
//! a timeout after charging, a lost reply, a server error, 300 ms of
//! latency.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::steps::{Page, Step};
use crate::{Config, Error, Wizard};

/// The load to put on.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Simulated users in all.
    pub users: usize,
    /// Users at the same time.
    pub concurrency: usize,
    /// Every n-th user gets a fault (0: none).
    pub fault_every: usize,
}

/// What the run measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadReport {
    /// Users started.
    pub users: usize,
    /// Signups that reached `completed`.
    pub completed: usize,
    /// Signups left `unresolvable` or broken.
    pub not_completed: usize,
    /// Users that had a fault injected.
    pub faulted: usize,
    /// Charges in the gateway's ledger made by this run.
    pub charges: usize,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// Completed signups per second.
    pub signups_per_sec: f64,
    /// HTTP API requests made.
    pub requests: usize,
    /// Request latency percentiles, ms.
    pub request_p50_ms: f64,
    /// 99th percentile.
    pub request_p99_ms: f64,
    /// Signup durations (first request to completed), ms.
    pub signup_p50_ms: f64,
    /// 99th percentile.
    pub signup_p99_ms: f64,
    /// Sessions without a fault: from sending CONFIRM to seeing the
    /// completed page (the state long-polled as the page does), ms.
    pub confirm_p50_ms: f64,
    /// 99th percentile.
    pub confirm_p99_ms: f64,
}

struct Http {
    addr: SocketAddr,
}

impl Http {
    async fn call(
        &self,
        method: &str,
        path: &str,
        cookie: &str,
        body: Option<Value>,
    ) -> Result<(u16, Option<String>, Value), String> {
        let stream = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|e| e.to_string())?;
        let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        let conn = tokio::spawn(conn);
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string())
            .header("content-type", "application/json");
        if !cookie.is_empty() {
            b = b.header("cookie", cookie);
        }
        let body = body.map(|v| v.to_string()).unwrap_or_default();
        let req = b
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let resp = tx.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let set = resp
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_string);
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        conn.abort();
        Ok((
            status,
            set,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    }
}

struct Outcome {
    completed: bool,
    faulted: bool,
    latencies: Vec<f64>,
    total_ms: f64,
    confirm_ms: f64,
}

async fn user(http: Arc<Http>, n: usize, fault_every: usize) -> Result<Outcome, String> {
    let t0 = Instant::now();
    let mut lat = Vec::new();
    let timed = |t: Instant, lat: &mut Vec<f64>| lat.push(t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let (_, cookie, v) = http.call("POST", "/api/new", "", None).await?;
    timed(t, &mut lat);
    let cookie = cookie.ok_or("no session cookie")?;
    let sid = v["sid"].as_str().ok_or("no sid")?.to_string();
    let name = |page| Step::of(page).name;
    let steps = [
        (
            name(Page::Personal),
            json!({"name": "Load Tester", "email": format!("user{n}@example.org")}),
        ),
        (
            name(Page::Plan),
            json!({"plan": "pro", "billing": "monthly"}),
        ),
        (
            name(Page::Card),
            json!({"card_number": "4242 4242 4242 4242", "expiry": "12/39", "holder": "Load Tester", "otp": "123456"}),
        ),
    ];
    for (step, fields) in steps {
        let t = Instant::now();
        let (s, _, v) = http
            .call(
                "POST",
                "/api/event",
                &cookie,
                Some(json!({"sid": sid, "step": step, "event": "NEXT", "fields": fields})),
            )
            .await?;
        timed(t, &mut lat);
        if s != 200 {
            return Err(format!("{step}: {s} {v}"));
        }
    }
    let faulted = fault_every > 0 && n % fault_every == 0;
    if faulted {
        let faults = match (n / fault_every) % 4 {
            0 => json!({"charge": "timeout"}),
            1 => json!({"charge": "lost"}),
            2 => json!({"charge": "error"}),
            _ => json!({"latency_ms": 300}),
        };
        let t = Instant::now();
        http.call(
            "POST",
            "/api/faults",
            &cookie,
            Some(json!({"sid": sid, "faults": faults})),
        )
        .await?;
        timed(t, &mut lat);
    }
    let confirmed = Instant::now();
    let t = Instant::now();
    let (s, _, v) = http
        .call(
            "POST",
            "/api/event",
            &cookie,
            Some(json!({"sid": sid, "step": name(Page::Review), "event": "CONFIRM"})),
        )
        .await?;
    timed(t, &mut lat);
    if s != 200 {
        return Err(format!("confirm: {s} {v}"));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut rev = v["rev"].as_u64().unwrap_or(0);
    loop {
        // A long poll is a wait, not a request's latency: it is not timed.
        let poll = format!("/api/state?after={rev}&wait=5000");
        let (s, _, v) = http.call("GET", &poll, &cookie, None).await?;
        if s != 200 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        rev = v["rev"].as_u64().unwrap_or(rev);
        match v["step"].as_str().and_then(Step::named).map(|r| r.page) {
            Some(Page::Completed) => {
                return Ok(Outcome {
                    completed: true,
                    faulted,
                    latencies: lat,
                    total_ms: t0.elapsed().as_secs_f64() * 1e3,
                    confirm_ms: confirmed.elapsed().as_secs_f64() * 1e3,
                })
            }
            Some(Page::Failed) => {
                let t = Instant::now();
                http.call(
                    "POST",
                    "/api/event",
                    &cookie,
                    Some(json!({"sid": sid, "step": name(Page::Failed), "event": "RETRY"})),
                )
                .await?;
                timed(t, &mut lat);
            }
            Some(Page::Unresolvable) => break,
            _ => {}
        }
        if Instant::now() > deadline {
            break;
        }
    }
    Ok(Outcome {
        completed: false,
        faulted,
        latencies: lat,
        total_ms: t0.elapsed().as_secs_f64() * 1e3,
        confirm_ms: confirmed.elapsed().as_secs_f64() * 1e3,
    })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Starts a wizard on fresh files in `data_dir` and runs the load on it.
pub async fn run(data_dir: &std::path::Path, cfg: &LoadConfig) -> Result<LoadReport, Error> {
    let wizard = Wizard::start(Config::new(data_dir)).await?;
    let addr = wizard.addrs().wizard;
    let wizard = Arc::new(wizard);
    let w = wizard.clone();
    let report = run_at(addr, cfg, move || w.charges()).await;
    tokio::task::spawn_blocking(move || drop(wizard))
        .await
        .unwrap_or(());
    Ok(report)
}

/// Runs the load on a wizard already listening at `addr` (the single-node
/// wizard, or the front door of `turno demo cluster`); `charges` reads the
/// gateway's ledger (blocking).
pub async fn run_at(
    addr: SocketAddr,
    cfg: &LoadConfig,
    charges: impl Fn() -> usize + Send + Sync + 'static,
) -> LoadReport {
    let charges = Arc::new(charges);
    let c = charges.clone();
    let before = tokio::task::spawn_blocking(move || c()).await.unwrap_or(0);
    let http = Arc::new(Http { addr });
    let gate = Arc::new(Semaphore::new(cfg.concurrency.max(1)));
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(cfg.users);
    for n in 0..cfg.users {
        let (http, gate, every) = (http.clone(), gate.clone(), cfg.fault_every);
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await.expect("semaphore");
            user(http, n + 1, every).await
        }));
    }
    let mut outcomes = Vec::new();
    let mut broken = 0;
    for t in tasks {
        match t.await {
            Ok(Ok(o)) => outcomes.push(o),
            _ => broken += 1,
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    if broken > 0 {
        eprintln!("turno-wizard load: {broken} users failed with an HTTP error");
    }
    let charges = tokio::task::spawn_blocking(move || charges())
        .await
        .unwrap_or(0)
        .saturating_sub(before);
    let completed = outcomes.iter().filter(|o| o.completed).count();
    let mut lat: Vec<f64> = outcomes
        .iter()
        .flat_map(|o| o.latencies.iter().copied())
        .collect();
    lat.sort_by(f64::total_cmp);
    let mut total: Vec<f64> = outcomes
        .iter()
        .filter(|o| o.completed)
        .map(|o| o.total_ms)
        .collect();
    total.sort_by(f64::total_cmp);
    let mut confirm: Vec<f64> = outcomes
        .iter()
        .filter(|o| o.completed && !o.faulted)
        .map(|o| o.confirm_ms)
        .collect();
    confirm.sort_by(f64::total_cmp);
    LoadReport {
        users: cfg.users,
        completed,
        not_completed: cfg.users - completed,
        faulted: outcomes.iter().filter(|o| o.faulted).count(),
        charges,
        seconds,
        signups_per_sec: completed as f64 / seconds,
        requests: lat.len(),
        request_p50_ms: percentile(&lat, 0.5),
        request_p99_ms: percentile(&lat, 0.99),
        signup_p50_ms: percentile(&total, 0.5),
        signup_p99_ms: percentile(&total, 0.99),
        confirm_p50_ms: percentile(&confirm, 0.5),
        confirm_p99_ms: percentile(&confirm, 0.99),
    }
}
