//! The server against untrusted snippets: it answers every one with a clear
//! message and keeps answering.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turno_learn::{Answer, Budgets, Config, ProblemKind, Runner};

fn config(budgets: Budgets) -> Config {
    Config {
        runner: Runner {
            program: PathBuf::from(env!("CARGO_BIN_EXE_turno-learn-runner")),
            args: vec![],
        },
        budgets,
    }
}

/// The default budgets with a wall-clock limit no loaded machine reaches,
/// for the tests that are not about the wall clock.
fn roomy() -> Budgets {
    Budgets {
        wall_ms: 120_000,
        ..Budgets::default()
    }
}

async fn server(budgets: Budgets) -> String {
    let s = turno_learn::start(config(budgets), SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    let url = s.url().to_string();
    tokio::spawn(s.wait());
    url
}

/// One HTTP/1.1 request; the status and the body.
async fn http(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text[9..12].parse().unwrap();
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    (status, body.to_string())
}

async fn run(url: &str, model: &str, code: &str) -> (u16, Answer) {
    let body = serde_json::json!({ "code": code, "model": model }).to_string();
    let (status, text) = http(url, "POST", "/api/run", &body).await;
    let answer = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, answer)
}

async fn still_answers(url: &str) {
    assert_eq!(
        http(url, "GET", "/api/health", "").await,
        (200, "ok".into())
    );
    let (status, a) = run(url, "node", "console.log('still here')").await;
    assert_eq!(status, 200);
    assert_eq!(a.problem, None);
    assert_eq!(a.stdout, ["still here"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snippet_runs_and_every_step_is_reconstructed() {
    let url = server(roomy()).await;
    let code = "setTimeout(() => console.log('timer'), 0);\n\
                const p = Promise.resolve(1);\n\
                p.then(v => console.log('promise', v));\n\
                console.log('script');";
    let (status, a) = run(&url, "html", code).await;
    assert_eq!(status, 200);
    assert_eq!(a.problem, None);
    assert_eq!(a.stdout, ["script", "promise 1", "timer"]);
    assert_eq!(a.steps.len() as u64, a.events + 1);
    assert!(a.steps[0].event.is_none());
    // Some step holds the reaction job in the microtask queue and the timer's
    // task in the task queue at once; the promise's slots were sampled.
    assert!(a.steps.iter().any(|s| {
        s.js.queues
            .iter()
            .any(|(q, e)| q.name() == "microtask" && !e.is_empty())
            && s.js
                .queues
                .iter()
                .any(|(q, e)| q.name() == "task" && !e.is_empty())
    }));
    assert!(a
        .steps
        .iter()
        .any(|s| s.js.promises.values().any(|p| p.state.is_some())));
    assert!(a.steps.iter().any(|s| !s.js.stack.is_empty()));
    let last = a.steps.last().unwrap();
    assert_eq!(a.console.lines.len(), 3);
    assert_eq!(last.console_len, 3);
    assert!(a
        .steps
        .windows(2)
        .all(|w| w[0].console_len <= w[1].console_len));

    let (_, node) = run(
        &url,
        "node",
        "setTimeout(() => console.log('timeout'), 0);\nPromise.resolve().then(() => console.log('promise'));\nprocess.nextTick(() => console.log('tick'));",
    )
    .await;
    assert_eq!(node.stdout, ["tick", "promise", "timeout"]);
    assert!(node.steps.iter().any(|s| s.js.phase.is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_is_cut_to_a_bounded_answer() {
    let url = server(roomy()).await;
    // Thousands of lines: each step counts them, the answer holds the
    // newest once.
    let (_, a) = run(
        &url,
        "node",
        "for (let i = 0; i < 3000; i++) console.log('line ' + i);",
    )
    .await;
    assert_eq!(a.problem, None);
    assert_eq!(a.stdout.len(), 3000);
    assert_eq!(a.console.forgotten + a.console.lines.len() as u64, 3000);
    assert_eq!(a.steps.len(), 3000);
    assert!(a.events + 1 > a.steps.len() as u64);
    // Thousands of queued microtasks, each step holding the whole queue:
    // the steps stop at the byte budget.
    let (status, text) = http(
        &url,
        "POST",
        "/api/run",
        &serde_json::json!({ "code": "for (let i = 0; i < 5000; i++) queueMicrotask(() => {});", "model": "html" }).to_string(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        text.len() < turno_learn::run::MAX_STEP_BYTES + (1 << 20),
        "{} bytes",
        text.len()
    );
    let a: Answer = serde_json::from_str(&text).unwrap();
    assert_eq!(a.problem, None);
    assert!(a.steps.len() > 10 && (a.steps.len() as u64) < a.events + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syntax_error_is_named_at_its_line_and_column() {
    let url = server(roomy()).await;
    let (status, a) = run(&url, "html", "console.log('a');\nlet x = ;\n").await;
    assert_eq!(status, 200);
    let p = a.problem.unwrap();
    assert_eq!(p.kind, ProblemKind::Syntax);
    assert!(p.message.starts_with("SyntaxError"), "{}", p.message);
    assert_eq!((p.line, p.column), (Some(2), Some(9)));
    still_answers(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loops_that_never_end_are_stopped_by_a_budget() {
    let url = server(roomy()).await;
    let (_, a) = run(&url, "html", "console.log('before');\nwhile (true) {}").await;
    let p = a.problem.unwrap();
    assert_eq!(p.kind, ProblemKind::LoopBudget);
    assert!(p.message.contains("2000000"), "{}", p.message);
    assert_eq!(a.stdout, ["before"]);

    let (_, a) = run(
        &url,
        "html",
        "function again() { queueMicrotask(again); }\nagain();",
    )
    .await;
    assert_eq!(a.problem.unwrap().kind, ProblemKind::StepBudget);

    let (_, a) = run(&url, "node", "setInterval(() => {}, 10);").await;
    assert_eq!(a.problem.unwrap().kind, ProblemKind::TimeBudget);
    still_answers(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_the_wall_clock_is_killed() {
    let url = server(Budgets {
        wall_ms: 1_500,
        ..Budgets::default()
    })
    .await;
    // Catastrophic backtracking: one native call, no loop the explorer
    // counts, minutes of work.
    let t0 = Instant::now();
    let (status, a) = run(&url, "html", "/(a+)+$/.test('a'.repeat(40) + 'b');").await;
    assert_eq!(status, 200);
    let p = a.problem.unwrap();
    assert_eq!(p.kind, ProblemKind::WallClock);
    assert!(p.message.contains("1.5 s"), "{}", p.message);
    assert!(t0.elapsed() < Duration::from_secs(10));
    still_answers(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbounded_allocation_hits_the_memory_budget() {
    let url = server(Budgets {
        memory_bytes: 256 << 20,
        wall_ms: 30_000,
        ..Budgets::default()
    })
    .await;
    let (status, a) = run(&url, "html", "let s = 'x';\nfor (;;) s = s + s;").await;
    assert_eq!(status, 200);
    let p = a.problem.unwrap();
    assert_eq!(p.kind, ProblemKind::Memory, "{}", p.message);
    assert!(p.message.contains("256 MiB"), "{}", p.message);
    still_answers(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_a_message_not_a_panic() {
    let url = server(roomy()).await;
    for body in [
        "",
        "{",
        "[]",
        "{\"code\": 5}",
        "{\"code\": \"1\", \"model\": \"deno\"}",
        "{\"code\": \"1\", \"model\": \"node\", \"input\": [{\"at_ms\": 1, \"type\": \"key\", \"key\": \"a\"}]}",
    ] {
        let (status, text) = http(&url, "POST", "/api/run", body).await;
        assert_eq!(status, 400, "{body}: {text}");
        let a: Answer = serde_json::from_str(&text).unwrap();
        assert_eq!(a.problem.unwrap().kind, ProblemKind::BadRequest, "{body}");
    }
    let long = serde_json::json!({ "code": "x".repeat(70_000) }).to_string();
    let (status, text) = http(&url, "POST", "/api/run", &long).await;
    assert_eq!(status, 400);
    assert!(text.contains("at most 65536"), "{text}");
    let (status, text) = http(
        &url,
        "POST",
        "/api/run",
        "{\"code\": \"1\", \"input\": [{\"at_ms\": \"soon\"}]}",
    )
    .await;
    assert_eq!(status, 200);
    assert!(text.contains("scripted input"), "{text}");
    still_answers(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_runs_at_once_all_get_an_answer() {
    let url = server(roomy()).await;
    let mut runs = Vec::new();
    for i in 0..50 {
        let url = url.clone();
        runs.push(tokio::spawn(async move {
            let code = match i % 5 {
                0 => "while (true) {}".to_string(),
                1 => "let x = ;".to_string(),
                _ => format!("Promise.resolve({i}).then(v => console.log(v));"),
            };
            (i, run(&url, "html", &code).await)
        }));
    }
    let mut busy = 0;
    for r in runs {
        let (i, (status, a)) = r.await.unwrap();
        match a.problem.as_ref().map(|p| p.kind) {
            Some(ProblemKind::Busy) => {
                assert_eq!(status, 503);
                assert!(a.problem.unwrap().message.contains("4 runs at a time"));
                busy += 1;
            }
            Some(ProblemKind::LoopBudget) => assert_eq!(i % 5, 0),
            Some(ProblemKind::Syntax) => assert_eq!(i % 5, 1),
            None => assert_eq!(a.stdout, [i.to_string()]),
            other => panic!("run {i}: {other:?}"),
        }
    }
    // On a slow machine some may be turned away; never most of them.
    assert!(busy < 25, "{busy} of 50 turned away");
    still_answers(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_assets_are_served_from_the_binary() {
    let url = server(roomy()).await;
    for path in ["/", "/app.js", "/app.css", "/sandbox.html"] {
        let (status, body) = http(&url, "GET", path, "").await;
        assert_eq!(status, 200, "{path}");
        assert!(!body.is_empty());
        assert!(!body.contains("https://"), "{path} names a remote address");
    }
    let (page, sandbox) = (head(&url, "/").await, head(&url, "/sandbox.html").await);
    assert!(
        page.contains("content-security-policy: default-src 'self';"),
        "{page}"
    );
    assert!(!page.contains("unsafe-eval"), "{page}");
    assert!(
        sandbox.contains("content-security-policy: default-src 'none';"),
        "{sandbox}"
    );
}

/// The response's head, lower-cased.
async fn head(url: &str, path: &str) -> String {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).to_lowercase();
    text.split("\r\n\r\n").next().unwrap_or("").to_string()
}
