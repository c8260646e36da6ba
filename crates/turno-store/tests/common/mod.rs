//! Shared by the integration tests: one store per backend, on a manual
//! clock, and the PostgreSQL server.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use turno_store::{ManualClock, SqliteConfig, Store};

/// 2026-01-01T00:00:00Z: a fixed start for manual clocks.
pub const T0: i64 = 1_767_225_600_000;

/// A fresh temporary directory, deleted when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

pub fn memory(clock: Arc<ManualClock>) -> Store {
    Store::memory().with_clock(clock)
}

pub fn sqlite_at(path: PathBuf, clock: Arc<ManualClock>) -> Store {
    let b = SqliteConfig::new(path).open().expect("open sqlite");
    Store::new(b).with_clock(clock)
}

/// The store of a crash test's processes: the PostgreSQL database at
/// `pg_url` when given, else the SQLite file `file` in `dir` (each process
/// opens its own on the same files, on the real clock).
pub fn shared_store(dir: &Path, file: &str, pg_url: Option<&str>) -> Store {
    match pg_url {
        #[cfg(feature = "postgres")]
        Some(url) => Store::new(turno_store::postgres::PgBackend::connect(url).unwrap()),
        _ => Store::sqlite(dir.join(file)).unwrap(),
    }
}

/// This test binary again, running only the ignored test `test`: the child
/// process of a crash test, told what to do by its environment.
pub fn child_process(test: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::inherit());
    cmd
}

/// Polls `reached` every 2 ms until it holds; panics saying `what` the
/// child never did when `limit` passes first, or when the child exits.
pub fn wait_for_child(
    child: &mut Child,
    limit: Duration,
    what: &str,
    mut reached: impl FnMut() -> bool,
) {
    let start = Instant::now();
    while !reached() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child exited ({status}) before it {what}");
        }
        assert!(start.elapsed() < limit, "the child never {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits (in a crash test's child) until `queue` has nothing ready or
/// leased: every item delivered and acknowledged.
pub fn wait_drained(store: &Store, queue: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let c = store.queue_counts(queue).unwrap();
        if c.ready == 0 && c.leased == 0 {
            return;
        }
        assert!(start.elapsed() < limit, "drain stalled: {c:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGKILL, then reaps the child.
pub fn kill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A URL to a fresh database on the shared private server, or `None` when
/// PostgreSQL is not installed here. Under CI (`CI=true`) that is a
/// failure, never a skip.
#[cfg(feature = "postgres")]
pub fn pg_url() -> Option<String> {
    match turno_store::postgres::TempCluster::shared() {
        Ok(c) => Some(c.fresh_database().expect("create database")),
        Err(e) => {
            if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
                panic!("CI: the PostgreSQL test server must start: {e}");
            }
            eprintln!("skipping a PostgreSQL test: {e}");
            None
        }
    }
}

#[cfg(feature = "postgres")]
pub fn pg(clock: Arc<ManualClock>) -> Option<Store> {
    let url = pg_url()?;
    let b = turno_store::postgres::PgBackend::connect(&url).expect("connect");
    Some(Store::new(b).with_clock(clock))
}
