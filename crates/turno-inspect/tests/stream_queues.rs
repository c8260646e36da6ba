//! Traced streams in the queue plots: a 100 Hz producer and an 80 Hz
//! consumer over `turno::stream::buffered_traced` on virtual time, once
//! per policy; the inspector's `/api/queues` plots each stream, and the
//! plot's maximum is the deepest the stream's own counters saw, its losses
//! the ones its counters counted.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turno::stream::buffered_traced;
use turno::trace::JsonLinesSink;
use turno::{BufferStats, DetSystem, Policy};
use turno_inspect::Loaded;

/// Two virtual seconds: a push every 10 ms, a take every 12.5 ms (ticks of
/// 2.5 ms). Returns the trace's path and each stream's counters.
fn record(policies: &[(&str, Policy)]) -> (std::path::PathBuf, Vec<(String, BufferStats)>) {
    let path = std::env::temp_dir().join(format!("turno-streams-{}.jsonl", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let mut sys = DetSystem::builder()
        .trace(JsonLinesSink::new(std::io::BufWriter::new(file)))
        .build();
    let mut streams: Vec<_> = policies
        .iter()
        .map(|(name, p)| (name.to_string(), buffered_traced::<u64>(&sys, name, *p)))
        .collect();
    for tick in 0..800u64 {
        sys.advance(Duration::from_micros(2_500)).unwrap();
        for (_, (tx, rx)) in &mut streams {
            if tick % 4 == 0 {
                let _ = tx.push(tick);
            }
            if tick % 5 == 0 {
                let _ = rx.try_next();
            }
        }
    }
    sys.flush_trace();
    let stats = streams
        .iter()
        .map(|(name, (tx, _))| (name.clone(), tx.stats()))
        .collect();
    (path, stats)
}

fn get(loaded: Loaded, path: &str) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(async move {
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
    });
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    serde_json::from_str(out.split_once("\r\n\r\n").unwrap().1).unwrap()
}

#[test]
fn a_streams_plot_peaks_at_its_deepest_and_counts_its_losses() {
    let policies = [
        ("newest", Policy::KeepNewest(20)),
        ("oldest", Policy::KeepOldest(20)),
        ("unbounded", Policy::Unbounded),
    ];
    let (path, stats) = record(&policies);
    let loaded = Loaded::open(&path, None).unwrap();
    let v = get(loaded, "/api/queues?px=300");
    let _ = std::fs::remove_file(&path);
    let plots = v["plots"].as_array().unwrap();
    for (name, s) in &stats {
        let p = plots
            .iter()
            .find(|p| p["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no plot of {name}: {v}"));
        assert_eq!(p["kind"], "stream");
        let buckets = p["buckets"].as_array().unwrap();
        let peak = buckets.iter().map(|b| b["depth"].as_u64().unwrap()).max();
        // The consumer is a fifth too slow: every stream fills.
        assert!(s.max_depth >= 20, "{name}: {s:?}");
        assert_eq!(peak, Some(s.max_depth as u64), "{name}");
        assert_eq!(p["max_depth"].as_u64(), Some(s.max_depth as u64), "{name}");
        let sum = |k: &str| buckets.iter().map(|b| b[k].as_u64().unwrap()).sum::<u64>();
        let (evicted, dropped, taken) = (sum("evicted"), sum("dropped"), sum("taken"));
        assert_eq!(evicted + dropped, s.dropped, "{name}");
        match name.as_str() {
            "newest" => assert_eq!(dropped, 0),
            "oldest" => assert_eq!(evicted, 0),
            _ => assert_eq!(s.dropped, 0),
        }
        assert_eq!(taken, s.taken, "{name}");
        // Taken elements waited in the buffer.
        let longest = buckets
            .iter()
            .map(|b| b["sojourn_max_ns"].as_u64().unwrap())
            .max()
            .unwrap();
        assert!(longest > 0, "{name}");
    }
}
