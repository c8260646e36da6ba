//! Shared by the integration tests: one store per backend, on a manual
//! clock, and the PostgreSQL server.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

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
