//! The wizard over its HTTP API on loopback: the load module's simulated
//! users with faults (charges == completed signups), the crash of the
//! server mid-submit, expiry, and the refusals.

mod common;

use std::time::Duration;

use common::{call, raw, Client};
use serde_json::json;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_submit_restores_into_uncertain_and_charges_once() {
    let dir = tempfile::tempdir().unwrap();
    let w = Wizard::start(Config::new(dir.path())).await.unwrap();
    let c = Client::new(&w.url()).await;
    c.to_review().await;
    assert_eq!(c.faults(json!({"crash": true})).await["crash"], true);
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
    let c = Client::new(&w.url()).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_sessions_leave_memory_and_the_sweeper_deletes_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::new(dir.path());
    cfg.ttl = Duration::from_secs(1);
    cfg.sweep_every = Duration::from_millis(100);
    let w = Wizard::start(cfg).await.unwrap();
    let c = Client::new(&w.url()).await;
    let (s, _) = c
        .event(
            "personal",
            "NEXT",
            json!({"name": "Ada", "email": "ada@example.org"}),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(w.live_sessions(), 1);
    let rows = |sid: &str| -> i64 {
        let db = rusqlite::Connection::open(dir.path().join("wizard.db")).unwrap();
        let count = |sql: &str| -> i64 { db.query_row(sql, [sid], |r| r.get(0)).unwrap() };
        count("SELECT COUNT(*) FROM turno_snapshots WHERE owner = ?1")
            + count("SELECT COUNT(*) FROM turno_drafts WHERE owner = ?1")
            + count("SELECT COUNT(*) FROM turno_snapshots WHERE data = CAST(?1 AS BLOB)")
    };
    // the chart snapshot, the draft of the completed step, the draft link
    // (written by the persister thread, so not at once)
    let start = std::time::Instant::now();
    while rows(&c.sid) != 3 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{} rows",
            rows(&c.sid)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Still there while steps keep renewing it...
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (s, _) = c
        .event("plan", "NEXT", json!({"plan": "team", "billing": "yearly"}))
        .await;
    assert_eq!(s, 200);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(w.live_sessions(), 1, "renewed by the last step");
    // ...gone from memory and from the file once its time to live passed.
    let start = std::time::Instant::now();
    while w.live_sessions() > 0 || rows(&c.sid) > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} in memory, {} rows",
            w.live_sessions(),
            rows(&c.sid)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (s, _) = c.state().await;
    assert_eq!(s, 410, "an expired session is not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_inspector_follows_the_server_and_its_restart() {
    // What `turno demo --inspect` wires: the live inspector's sink as the
    // server system's trace, a fresh one per start of the server.
    let (live, sink) = turno_inspect::live::start(Default::default()).unwrap();
    let sink = std::sync::Mutex::new(sink);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::new(dir.path());
    cfg.restart_after = Duration::from_millis(100);
    cfg.trace = Some(turno_wizard::TraceTo::new(move || {
        sink.lock().unwrap().clone()
    }));
    let w = Wizard::start(cfg).await.unwrap();
    let c = Client::new(&w.url()).await;
    c.to_review().await;
    let sessions = |world: &turno_trace::World| {
        world
            .actors
            .values()
            .filter(|a| a.name.starts_with("session-"))
            .count()
    };
    let before = live.world();
    assert_eq!(
        sessions(&before),
        1,
        "the session actor is in the live world"
    );
    assert!(before.step > 0);
    assert_eq!(
        live.unreadable(),
        0,
        "every event the server traced was read"
    );
    // A crash mid-submit restarts the server's system; the live view
    // follows the new one, where the session is restored and completes.
    assert_eq!(c.faults(json!({"crash": true})).await["crash"], true);
    let (s, _) = c.event("review", "CONFIRM", json!({})).await;
    assert_eq!(s, 200);
    c.wait_for("completed").await;
    assert_eq!(w.crashes(), 1);
    let after = live.world();
    assert!(
        after.step > before.step,
        "events after the restart were followed"
    );
    assert!(
        sessions(&after) >= 1,
        "the restored session is in the live world"
    );
    assert_eq!(live.unreadable(), 0);
}

/// A form POST (`application/x-www-form-urlencoded`), as the page sends
/// "forget me": the status and the page's text.
async fn post_form(base: &str, path: &str, cookie: &str, form: &str) -> (u16, String) {
    let headers = [
        ("content-type", "application/x-www-form-urlencoded"),
        ("cookie", cookie),
    ];
    let (status, _, body) = raw(base, "POST", path, &headers, form.to_string()).await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_me_waits_until_the_payment_is_settled() {
    let dir = tempfile::tempdir().unwrap();
    let w = Wizard::start(Config::new(dir.path())).await.unwrap();
    let c = Client::new(&w.url()).await;
    c.to_review().await;
    // The gateway answers slowly: the submit stays in `sending` a while.
    c.faults(json!({"latency_ms": 1500})).await;
    let (s, v) = c.event("review", "CONFIRM", json!({})).await;
    assert_eq!((s, v["step"].as_str()), (200, Some("submit.sending")));
    let form = format!("sid={}", c.sid);
    let (s, page) = post_form(&c.base, "/forget", &c.cookie, &form).await;
    assert_eq!(s, 409, "{page}");
    assert!(page.contains("Not deleted yet"), "{page}");
    assert!(
        page.contains("Sending your payment") && !page.contains("submit.sending"),
        "the page names the step in words: {page}"
    );
    // Nothing was forgotten: the submit goes on and charges once.
    c.wait_for("completed").await;
    assert_eq!(w.charges(), 1);
    // Settled, the signup can be forgotten.
    let (s, page) = post_form(&c.base, "/forget", &c.cookie, &form).await;
    assert_eq!(s, 200, "{page}");
    assert!(page.contains("Your signup is deleted"), "{page}");
    assert_eq!(c.state().await.0, 410);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cookie_travels_with_links_from_other_sites() {
    let dir = tempfile::tempdir().unwrap();
    let w = Wizard::start(Config::new(dir.path())).await.unwrap();
    let (_, headers, _) = raw(&w.url(), "GET", "/", &[], String::new()).await;
    let set = headers["set-cookie"].to_str().unwrap().to_string();
    // `Lax`: browsers send it on a top-level navigation from another site
    // (a draft link in a mail client), never on another site's POST.
    assert!(set.contains("SameSite=Lax"), "{set}");
    assert!(set.contains("HttpOnly"), "{set}");
}

/// A plain `GET` of a step's URL, as the browser's Back and Forward send
/// it: the status and the `Location` it is sent on to, if any.
async fn get_page(base: &str, path: &str, cookie: &str) -> (u16, Option<String>) {
    let (status, headers, _) = raw(base, "GET", path, &[("cookie", cookie)], String::new()).await;
    let location = headers
        .get("location")
        .map(|v| v.to_str().unwrap().to_string());
    (status, location)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_urls_move_the_session_only_where_the_chart_allows_and_never_charge() {
    let dir = tempfile::tempdir().unwrap();
    let w = Wizard::start(Config::new(dir.path())).await.unwrap();
    let c = Client::new(&w.url()).await;
    c.to_review().await;
    let key = c.state().await.1["key"].clone();
    // Back (review -> the payment sub-step), Back (-> plan), Forward
    // (-> payment again, with the plan the context holds), Forward
    // (-> review, with the payment it holds).
    for (path, step) in [
        ("/payment/card", "payment.card"),
        ("/plan", "plan"),
        ("/payment/card", "payment.card"),
        ("/review", "review"),
    ] {
        assert_eq!(
            get_page(&c.base, path, &c.cookie).await,
            (200, None),
            "{path}"
        );
        assert_eq!(c.state().await.1["step"], step, "{path}");
    }
    let v = c.state().await.1;
    assert_eq!(
        v["context"]["plan"]["id"], "team",
        "nothing was lost on the way"
    );
    assert_ne!(
        v["key"], key,
        "review entered anew: a new key, nothing was sent"
    );
    // A step the chart does not reach by a move that sends nothing: the
    // current step, which says why; the sending page is never reached by
    // a GET (no charge).
    assert_eq!(
        get_page(&c.base, "/submit/sending", &c.cookie).await,
        (303, Some("/review?from=submit.sending".into()))
    );
    assert_eq!(
        get_page(&c.base, "/completed", &c.cookie).await,
        (303, Some("/review?from=completed".into()))
    );
    assert_eq!(c.state().await.1["step"], "review");
    assert_eq!(w.charges(), 0);
    let (s, v) = c.event("review", "CONFIRM", json!({})).await;
    assert_eq!((s, v["step"].as_str()), (200, Some("submit.sending")));
    c.wait_for("completed").await;
    for path in ["/review", "/personal", "/payment/card"] {
        let (s, at) = get_page(&c.base, path, &c.cookie).await;
        let from = &path[1..].replace('/', ".");
        assert_eq!((s, at), (303, Some(format!("/completed?from={from}"))));
    }
    assert_eq!(c.state().await.1["step"], "completed");
    assert_eq!(w.charges(), 1);
    // `/` leads to the current step's URL.
    assert_eq!(
        get_page(&c.base, "/", &c.cookie).await,
        (303, Some("/completed".into()))
    );
}

fn form(cookie: &str) -> [(&str, &str); 2] {
    [
        ("content-type", "application/x-www-form-urlencoded"),
        ("cookie", cookie),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_signup_and_the_workings_switch_cannot_be_forced_from_another_site() {
    let dir = tempfile::tempdir().unwrap();
    let w = Wizard::start(Config::new(dir.path())).await.unwrap();
    let c = Client::new(&w.url()).await;
    let sid = format!("sid={}", c.sid);
    // A cross-site POST carries no `Lax` cookie: no new signup replaces
    // the user's.
    let (s, h, _) = raw(&c.base, "POST", "/new", &form(""), sid.clone()).await;
    assert_eq!((s, h.get("set-cookie")), (403, None));
    let cookie = c.cookie.as_str();
    let other = format!("sid={}", "0".repeat(32));
    let (s, h, _) = raw(&c.base, "POST", "/new", &form(cookie), other).await;
    assert_eq!((s, h.get("set-cookie")), (403, None));
    let (s, h, _) = raw(&c.base, "POST", "/new", &form(cookie), sid).await;
    assert_eq!((s, h["location"].to_str().unwrap()), (303, "/personal"));
    let set = h["set-cookie"].to_str().unwrap();
    assert!(
        set.starts_with("turno_sid=") && !set.contains(&c.sid),
        "{set}"
    );
    // The switch leads back to a page of the wizard only.
    for (back, to) in [
        ("%2Fpayment%2Fcard", "/payment/card"),
        ("%2F%2Fevil.example", "/"),
        ("%2F%5Cevil.example", "/"),
        ("https%3A%2F%2Fevil.example%2F", "/"),
    ] {
        let body = format!("back={back}&show=on");
        let (s, h, _) = raw(&c.base, "POST", "/workings", &form(""), body).await;
        assert_eq!((s, h["location"].to_str().unwrap()), (303, to), "{back}");
        assert!(h["set-cookie"]
            .to_str()
            .unwrap()
            .starts_with("turno_workings=on"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_answers_when_the_session_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let w = Wizard::start(Config::new(dir.path())).await.unwrap();
    let c = Client::new(&w.url()).await;
    let rev = c.state().await.1["rev"].as_u64().unwrap();
    // Behind the session already: answered at once (the 20 s wait would
    // outlast the test's own deadline).
    let behind = format!("/api/state?after={}&wait=20000", rev + 1);
    let (s, _, v) = tokio::time::timeout(
        Duration::from_secs(10),
        call(&c.base, "GET", &behind, &c.cookie, None),
    )
    .await
    .expect("answered at once");
    assert_eq!((s, v["rev"].as_u64()), (200, Some(rev)));
    // Nothing happens: the wait ends with the same view.
    let quiet = format!("/api/state?after={rev}&wait=100");
    let (s, _, v) = call(&c.base, "GET", &quiet, &c.cookie, None).await;
    assert_eq!((s, v["rev"].as_u64()), (200, Some(rev)));
    assert_eq!(v["step"], "personal");
    // A step taken while the poll waits: the poll answers with it.
    let waiting = format!("/api/state?after={rev}&wait=20000");
    let (base, cookie) = (c.base.clone(), c.cookie.clone());
    let poll = tokio::spawn(async move { call(&base, "GET", &waiting, &cookie, None).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!poll.is_finished(), "the poll waits while nothing changes");
    let (s, _) = c
        .event(
            "personal",
            "NEXT",
            json!({"name": "Ada", "email": "ada@example.org"}),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _, v) = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("answered when the session moved on")
        .unwrap();
    assert_eq!(s, 200);
    assert!(v["rev"].as_u64().unwrap() > rev, "{v}");
    assert_eq!(v["step"], "plan");
    // More waiters than a session keeps: the oldest is answered, none is lost.
    let rev = v["rev"].as_u64().unwrap();
    let polls: Vec<_> = (0..12)
        .map(|_| {
            let (base, cookie) = (c.base.clone(), c.cookie.clone());
            let path = format!("/api/state?after={rev}&wait=20000");
            tokio::spawn(async move { call(&base, "GET", &path, &cookie, None).await })
        })
        .collect();
    let finished = || polls.iter().filter(|p| p.is_finished()).count();
    for _ in 0..200 {
        if finished() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        finished(),
        4,
        "beyond the bound of 8 the oldest are answered"
    );
    let (s, _) = c
        .event("plan", "NEXT", json!({"plan": "pro", "billing": "monthly"}))
        .await;
    assert_eq!(s, 200);
    for p in polls {
        let (s, _, _) = tokio::time::timeout(Duration::from_secs(10), p)
            .await
            .expect("every waiter is answered")
            .unwrap();
        assert_eq!(s, 200);
    }
}
