//! Crash tests: a child process writes (enqueues, snapshot puts, a pump
//! delivering into an actor that acks) and is killed with SIGKILL at random
//! moments, then restarted, many times. After every kill: the database is
//! sound, every enqueue the child had seen succeed is stored, no item was
//! delivered after its acknowledgement had committed, no snapshot version
//! the child had seen committed is lost. At the end a clean run drains the
//! queue: every acknowledged enqueue was delivered and acknowledged.
//!
//! The child is this test binary again, running the ignored test
//! `crash_child` with `TURNO_CRASH_DIR` set.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use turno::System;

use turno::{Actor, Context, Policy, Props, ThreadedSystem};
use turno_store::{Delivery, Pump, PumpConfig, Store};

const QUEUE: &str = "crash";

/// One line per event, one `write` each (O_APPEND), so lines never mix.
#[derive(Clone)]
struct Log(Arc<Mutex<std::fs::File>>);

impl Log {
    fn open(dir: &Path) -> Log {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("events.log"))
            .unwrap();
        Log(Arc::new(Mutex::new(f)))
    }
    fn line(&self, s: String) {
        let mut f = self.0.lock().unwrap();
        f.write_all(format!("{s}\n").as_bytes()).unwrap();
    }
}

/// Complete lines of the log (a kill can cut the last one short).
fn read_log(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("events.log")).unwrap_or_default();
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(|l| !l.ends_with('\n')) {
        lines.pop();
    }
    lines.into_iter().map(|l| l.trim_end().to_owned()).collect()
}

fn open_store(dir: &Path, pg_url: Option<&str>) -> Store {
    common::shared_store(dir, "crash.db", pg_url)
}

struct Recorder {
    log: Log,
}

impl Actor for Recorder {
    type Msg = Delivery;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, d: Delivery) {
        let ok = d.payload() == format!("payload of {}", d.key()).as_bytes();
        self.log.line(format!(
            "{} {} {}",
            if ok { "P" } else { "BAD" },
            d.key(),
            d.attempt()
        ));
        d.ack();
    }
}

#[test]
#[ignore = "the child process of the crash tests; they run it"]
fn crash_child() {
    let Some(dir) = std::env::var_os("TURNO_CRASH_DIR").map(PathBuf::from) else {
        return;
    };
    let drain = std::env::var("TURNO_CRASH_MODE").is_ok_and(|m| m == "drain");
    let log = Log::open(&dir);
    let store = open_store(&dir, std::env::var("TURNO_CRASH_PG_URL").ok().as_deref());
    let sys = ThreadedSystem::builder().threads(2).build();
    let addr = sys
        .spawn(Props::new().mailbox(Policy::Suspend(8)), {
            let log = log.clone();
            move || Recorder { log: log.clone() }
        })
        .unwrap();
    let acked_log = log.clone();
    let pump = Pump::spawn(
        store.clone(),
        QUEUE,
        addr,
        |d| d,
        PumpConfig::default()
            .lease(Duration::from_millis(300))
            .poll(Duration::from_millis(5))
            .batch(8)
            .on_acked(move |keys| {
                for k in keys {
                    acked_log.line(format!("A {k}"));
                }
            }),
    )
    .unwrap();
    if drain {
        common::wait_drained(&store, QUEUE, Duration::from_secs(60));
        pump.stop();
        sys.shutdown(Duration::from_secs(5)).unwrap();
        return;
    }
    // Produce until killed: enqueues and snapshot puts, each logged after
    // it returned.
    let lines = read_log(&dir);
    let mut seq = lines
        .iter()
        .filter_map(|l| l.strip_prefix("E e")?.parse::<u64>().ok())
        .max()
        .map_or(0, |m| m + 1);
    let mut version = store
        .get_snapshot("crash-owner", "state")
        .unwrap()
        .map(|s| s.version);
    loop {
        let key = format!("e{seq}");
        store
            .enqueue(
                QUEUE,
                "crash-owner",
                &key,
                format!("payload of {key}").as_bytes(),
            )
            .unwrap();
        log.line(format!("E {key}"));
        let data = format!("state after {seq}").repeat(50);
        let v = store
            .put_snapshot("crash-owner", "state", version, data.as_bytes(), None)
            .unwrap();
        log.line(format!("S {v}"));
        version = Some(v);
        seq += 1;
    }
}

fn run_child(dir: &Path, pg_url: Option<&str>, drain: bool) -> std::process::Child {
    let mut cmd = common::child_process("crash_child");
    cmd.env("TURNO_CRASH_DIR", dir);
    if let Some(u) = pg_url {
        cmd.env("TURNO_CRASH_PG_URL", u);
    }
    if drain {
        cmd.env("TURNO_CRASH_MODE", "drain");
    }
    cmd.spawn().unwrap()
}

/// The stored queue keys and the stored snapshot version.
fn stored(dir: &Path, pg_url: Option<&str>) -> (BTreeSet<String>, Option<u64>) {
    match pg_url {
        #[cfg(feature = "postgres")]
        Some(url) => {
            let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let keys = c
                .query("SELECT key FROM turno_queue WHERE queue = $1", &[&QUEUE])
                .unwrap()
                .into_iter()
                .map(|r| r.get(0))
                .collect();
            let v = c
                .query_opt(
                    "SELECT version FROM turno_snapshots WHERE owner = 'crash-owner'",
                    &[],
                )
                .unwrap()
                .map(|r| r.get::<_, i64>(0) as u64);
            (keys, v)
        }
        _ => {
            let b = turno_store::SqliteBackend::open(dir.join("crash.db")).unwrap();
            b.integrity_check()
                .expect("the database survives every kill intact");
            drop(b);
            let c = rusqlite::Connection::open(dir.join("crash.db")).unwrap();
            let mut st = c.prepare("SELECT key FROM turno_queue").unwrap();
            let keys = st
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let v = c
                .query_row(
                    "SELECT version FROM turno_snapshots WHERE owner = 'crash-owner'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .ok()
                .map(|v| v as u64);
            (keys, v)
        }
    }
}

/// The invariants over the log so far.
fn check(dir: &Path, pg_url: Option<&str>, round: usize) -> (usize, usize) {
    let lines = read_log(dir);
    let (keys, version) = stored(dir, pg_url);
    let mut acked_at: BTreeMap<&str, usize> = BTreeMap::new();
    let mut max_v = 0;
    let mut enqueued = 0;
    for (i, l) in lines.iter().enumerate() {
        let mut parts = l.split(' ');
        match (parts.next(), parts.next()) {
            (Some("E"), Some(k)) => {
                enqueued += 1;
                assert!(
                    keys.contains(k),
                    "round {round}: acknowledged enqueue {k} lost"
                );
            }
            (Some("S"), Some(v)) => max_v = max_v.max(v.parse::<u64>().unwrap()),
            (Some("A"), Some(k)) => {
                acked_at.entry(k).or_insert(i);
            }
            (Some("P"), Some(k)) => {
                if let Some(&a) = acked_at.get(k) {
                    panic!("round {round}: {k} delivered again (line {i}) after its ack committed (line {a})");
                }
            }
            (Some("BAD"), k) => panic!("round {round}: corrupt payload delivered for {k:?}"),
            _ => panic!("round {round}: unreadable log line {l:?}"),
        }
    }
    if max_v > 0 {
        assert!(
            version.is_some_and(|v| v >= max_v),
            "round {round}: snapshot version {version:?} behind the committed {max_v}"
        );
    }
    (enqueued, acked_at.len())
}

fn crash_many_times(pg_url: Option<&str>, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    for round in 0..rounds {
        let enqueues = || {
            read_log(dir.path())
                .iter()
                .filter(|l| l.starts_with("E "))
                .count()
        };
        let before = enqueues();
        let mut child = run_child(dir.path(), pg_url, false);
        // Wait until it is producing (start-up takes a while on a loaded
        // machine), then kill it at a random point.
        common::wait_for_child(
            &mut child,
            Duration::from_secs(60),
            &format!("wrote in round {round}"),
            || enqueues() != before,
        );
        std::thread::sleep(Duration::from_millis(rng.u64(0..200)));
        common::kill(child);
        check(dir.path(), pg_url, round);
    }
    // A clean run delivers everything that is left.
    let status = run_child(dir.path(), pg_url, true).wait().unwrap();
    assert!(status.success(), "drain run failed: {status}");
    let (enqueued, acked) = check(dir.path(), pg_url, rounds);
    assert!(
        enqueued >= rounds,
        "every child got work done ({enqueued} enqueues)"
    );
    let (keys, _) = stored(dir.path(), pg_url);
    let logged: BTreeSet<String> = read_log(dir.path())
        .iter()
        .filter_map(|l| l.strip_prefix("E ").map(str::to_owned))
        .collect();
    assert!(logged.is_subset(&keys));
    // every stored item was delivered and acknowledged in the end
    let store = open_store(dir.path(), pg_url);
    let c = store.queue_counts(QUEUE).unwrap();
    assert_eq!((c.ready, c.leased), (0, 0));
    assert_eq!(c.acked as usize, keys.len());
    assert!(acked <= keys.len());
    // deliveries repeated because a kill fell between a turn and its ack
    let mut handled: BTreeMap<String, usize> = BTreeMap::new();
    for l in read_log(dir.path()) {
        if let Some(rest) = l.strip_prefix("P ") {
            let key = rest.split(' ').next().unwrap_or_default().to_owned();
            *handled.entry(key).or_default() += 1;
        }
    }
    let again = handled.values().filter(|&&n| n > 1).count();
    let backend = if pg_url.is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    eprintln!(
        "crash test ({backend}): {rounds} kills, {enqueued} logged enqueues, {} items, all \
         acknowledged; {again} delivered again after a kill before their ack",
        keys.len()
    );
}

#[test]
fn sqlite_survives_sigkill_mid_write() {
    crash_many_times(None, 20);
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_client_killed_mid_transaction() {
    let Some(url) = common::pg_url() else { return };
    crash_many_times(Some(&url), 12);
}
