//! The inspector's API on a real trace, over HTTP on 127.0.0.1.

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turno_inspect::Loaded;
use turno_trace::Queue;

const HTML: &str = "../turno-trace/tests/data/html_raf.jsonl";

#[test]
fn a_step_shows_the_world_and_what_moved() {
    let loaded = Loaded::open(Path::new(HTML), None).unwrap();
    assert_eq!(loaded.index().len(), 47);
    // Step 4: seq 3 pushed rAF callback 2 behind callback 1.
    let v = loaded.step(4).unwrap();
    let ids: Vec<u64> = v.world.js.queues[&Queue::AnimationFrame]
        .iter()
        .map(|e| e.id.0)
        .collect();
    assert_eq!(ids, [1, 2]);
    assert_eq!(v.moved.len(), 1);
    assert_eq!(
        (
            v.moved[0].lane.as_str(),
            v.moved[0].action,
            v.moved[0].item.as_deref()
        ),
        ("queue:animation-frame", "push", Some("2"))
    );
    assert_eq!(v.event.as_ref().map(|e| e.seq), Some(3));
    // Step 13: seq 12 took microtask 1 out; the label comes from the step before.
    let v = loaded.step(13).unwrap();
    assert_eq!(v.moved[0].action, "pop");
    assert_eq!(v.moved[0].label, "PromiseJob");
    assert!(v.world.js.queues[&Queue::Microtask].is_empty());
    // Past the end is the end.
    assert_eq!(loaded.step(1_000).unwrap().step, 47);
    assert!(loaded.step(0).unwrap().event.is_none());
}

#[test]
fn the_source_is_found_next_to_the_trace_or_not_at_all() {
    let dir = std::env::temp_dir().join(format!("turno-inspect-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HTML, dir.join("t.jsonl")).unwrap();
    let loaded = Loaded::open(&dir.join("t.jsonl"), None).unwrap();
    assert!(serde_json::to_string(&loaded.step(0).unwrap()).is_ok());
    std::fs::write(dir.join("h08_raf_microtasks.js"), "a\nb\n").unwrap();
    let loaded = Loaded::open(&dir.join("t.jsonl"), None).unwrap();
    let meta = get(loaded, "/api/meta");
    assert!(meta.contains("\"lines\":[\"a\",\"b\"]"), "{meta}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_traces_are_refused_with_line_and_field() {
    let dir = std::env::temp_dir().join(format!("turno-inspect-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.jsonl");
    std::fs::write(&p, "{\"format\":\"turno-trace\",\"version\":9}\n").unwrap();
    let e = Loaded::open(&p, None).err().unwrap();
    assert!(e.to_string().contains("line 1, field `version`"), "{e}");
    let e = Loaded::open(&dir.join("missing.jsonl"), None)
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("cannot open"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_page_and_api_are_served() {
    let loaded = Loaded::open(Path::new(HTML), None).unwrap();
    let page = get(loaded, "/");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.contains("content-security-policy: default-src 'self'"),
        "{page}"
    );
    assert!(page.contains("<script src=\"/app.js\""));
    let loaded = Loaded::open(Path::new(HTML), None).unwrap();
    let step = get(loaded, "/api/step?k=10");
    assert!(step.contains("\"step\":10"), "{step}");
    let loaded = Loaded::open(Path::new(HTML), None).unwrap();
    let jump = get(loaded, "/api/jump?k=13&what=render&dir=1");
    assert!(jump.ends_with("\r\n\r\n19"), "{jump}");
    let loaded = Loaded::open(Path::new(HTML), None).unwrap();
    let bad = get(loaded, "/api/jump?k=0&what=nope&dir=1");
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
}

#[test]
fn a_recorded_trace_is_served_on_loopback_only() {
    let loaded = Loaded::open(Path::new(HTML), None).unwrap();
    let addr: std::net::SocketAddr = "0.0.0.0:0".parse().unwrap();
    let e = turno_inspect::serve_blocking(loaded, addr, |_| panic!("listening on {addr}"))
        .err()
        .unwrap();
    assert!(matches!(e, turno_inspect::Error::NotLoopback(_)), "{e}");
}

/// One GET against the router on a fresh loopback port.
fn get(loaded: Loaded, path: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, turno_inspect::router(Arc::new(loaded)))
                .await
                .unwrap()
        });
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    })
}
