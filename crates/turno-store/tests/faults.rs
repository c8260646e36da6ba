//! Faults: a full disk, a size-limited database, a locked database, a
//! PostgreSQL connection lost in the middle of a transaction. Each is a
//! typed error, retried where that is safe, and leaves nothing half-written.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use turno_store::{SqliteConfig, Store, StoreError};

/// Fills the store with 8 KiB snapshots until a put fails; returns how many
/// went in and the error.
fn fill_until_full(s: &Store) -> (usize, StoreError) {
    let blob = vec![0xAB; 8 * 1024];
    for i in 0..100_000 {
        if let Err(e) = s.put_snapshot("own", &format!("k{i}"), None, &blob, None) {
            return (i, e);
        }
    }
    panic!("never filled up");
}

fn assert_full_is_clean(s: &Store, written: usize, err: &StoreError) {
    assert!(
        matches!(err, StoreError::Full(_)),
        "expected Full, got {err:?}"
    );
    assert!(err.is_retryable());
    assert!(written > 0);
    // the failed put left nothing; every earlier one is intact
    assert_eq!(s.get_snapshot("own", &format!("k{written}")).unwrap(), None);
    for i in 0..written {
        assert_eq!(
            s.get_snapshot("own", &format!("k{i}"))
                .unwrap()
                .unwrap()
                .data
                .len(),
            8192
        );
    }
}

#[test]
fn a_size_limited_database_fills_up_with_a_typed_error() {
    let dir = tempdir();
    let path = dir.path().join("small.db");
    let s = Store::new(SqliteConfig::new(&path).max_pages(64).open().unwrap());
    let (written, err) = fill_until_full(&s);
    assert_full_is_clean(&s, written, &err);
    // freeing space makes writes possible again
    for i in 0..written / 2 {
        s.delete_snapshot("own", &format!("k{i}"), None).unwrap();
    }
    s.put_snapshot("own", "after", None, &[1; 8192], None)
        .unwrap();
    let b = turno_store::SqliteBackend::open(&path).unwrap();
    b.integrity_check().unwrap();
}

#[test]
fn a_full_disk_is_a_typed_error_and_nothing_is_half_written() {
    let dir = tempdir();
    let mnt = dir.path().join("tiny");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        // Not permitted here (not root, or no mount in this sandbox): the
        // size-limited database test above covers the same path in SQLite.
        eprintln!("skipping the tmpfs full-disk test: cannot mount a tmpfs here");
        return;
    }
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&mnt);
    let path = mnt.join("store.db");
    {
        let s = Store::sqlite(&path).unwrap();
        let (written, err) = fill_until_full(&s);
        assert_full_is_clean(&s, written, &err);
        // an enqueue on the full disk fails the same way, and is not there
        match s.enqueue("q", "own", "e1", &[7; 8192]) {
            Err(StoreError::Full(_)) => {}
            other => panic!("expected Full, got {other:?}"),
        }
        assert!(s.lease("q", 10, Duration::from_secs(1)).unwrap().is_empty());
    }
    // reopened after the failures: consistent
    let b = turno_store::SqliteBackend::open(&path).unwrap();
    b.integrity_check().unwrap();
}

#[test]
fn a_locked_database_is_busy_then_works_again() {
    let dir = tempdir();
    let path = dir.path().join("locked.db");
    let s = Store::new(
        SqliteConfig::new(&path)
            .busy_timeout(Duration::from_millis(100))
            .open()
            .unwrap(),
    );
    s.put_snapshot("own", "k", None, b"v1", None).unwrap();
    // another process (here: connection) takes the write lock and keeps it
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let start = Instant::now();
    let err = s
        .put_snapshot("own", "k", Some(1), b"v2", None)
        .unwrap_err();
    assert!(matches!(err, StoreError::Busy(_)), "{err:?}");
    assert!(err.is_retryable());
    assert!(
        start.elapsed() >= Duration::from_millis(90),
        "it waited the busy timeout first"
    );
    assert!(matches!(
        s.claim("own", "key", b"fp"),
        Err(StoreError::Busy(_))
    ));
    // reads go on meanwhile (WAL), and see nothing of the failed writes
    assert_eq!(s.get_snapshot("own", "k").unwrap().unwrap().version, 1);
    assert_eq!(s.lookup("own", "key").unwrap(), None);
    other.execute_batch("COMMIT").unwrap();
    // retrying is safe
    assert_eq!(s.put_snapshot("own", "k", Some(1), b"v2", None).unwrap(), 2);
}

#[test]
fn a_lock_released_within_the_busy_timeout_is_waited_for() {
    let dir = tempdir();
    let path = dir.path().join("wait.db");
    let s = Store::sqlite(&path).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        other.execute_batch("COMMIT").unwrap();
    });
    // SQLite's busy handler retries until the lock is free (5 s budget)
    assert_eq!(s.put_snapshot("own", "k", None, b"v", None).unwrap(), 1);
    releaser.join().unwrap();
}

#[cfg(feature = "postgres")]
mod postgres_faults {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use turno_store::postgres::PgBackend;

    /// Kills the server process of `pid` and waits until it is gone, so the
    /// next statement on that connection meets a closed socket.
    fn terminate(url: &str, pid: i32) {
        let mut admin = postgres::Client::connect(url, postgres::NoTls).unwrap();
        admin
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap();
        let start = Instant::now();
        while admin
            .query_opt("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .unwrap()
            .is_some()
        {
            assert!(start.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn store_with_kills(url: &str, kills: usize) -> (Store, Arc<AtomicUsize>) {
        let b = PgBackend::connect(url).unwrap();
        let fired = Arc::new(AtomicUsize::new(0));
        let (u, f) = (url.to_owned(), fired.clone());
        b.set_fault_hook(Some(Arc::new(move |pid| {
            if f.fetch_add(1, Ordering::SeqCst) < kills {
                terminate(&u, pid);
            }
        })));
        (Store::new(b), fired)
    }

    fn seed(url: &str) {
        let s = Store::postgres(url).unwrap();
        s.put_snapshot("own", "snap", None, b"v1", None).unwrap();
        s.save_draft("own", "d", 1, b"d", None).unwrap();
        s.claim("own", "k", b"fp").unwrap();
        s.enqueue("q", "own", "e1", b"x").unwrap();
    }

    #[test]
    fn a_connection_lost_mid_transaction_is_retried_once_on_a_new_one() {
        let Some(url) = pg_url() else { return };
        seed(&url);
        let (s, fired) = store_with_kills(&url, 1);
        // forget: killed between its deletes, rolled back, retried whole
        let r = s.forget("own").unwrap();
        assert_eq!(
            fired.load(Ordering::SeqCst),
            2,
            "killed once, then ran again"
        );
        assert_eq!((r.snapshots, r.drafts, r.keys, r.queue_items), (1, 1, 1, 1));
        // a snapshot put killed between its read and its write: one version
        let (s, _) = store_with_kills(&url, 1);
        assert_eq!(s.put_snapshot("own", "p", None, b"x", None).unwrap(), 1);
        assert_eq!(s.get_snapshot("own", "p").unwrap().unwrap().version, 1);
    }

    #[test]
    fn a_connection_lost_twice_is_a_typed_error_and_nothing_is_half_written() {
        let Some(url) = pg_url() else { return };
        seed(&url);
        let (s, _) = store_with_kills(&url, usize::MAX);
        match s.forget("own") {
            Err(e @ StoreError::ConnectionLost(_)) => assert!(e.is_retryable()),
            other => panic!("expected ConnectionLost, got {other:?}"),
        }
        match s.put_snapshot("own", "snap", Some(1), b"v2", None) {
            Err(StoreError::ConnectionLost(_)) => {}
            other => panic!("expected ConnectionLost, got {other:?}"),
        }
        // the first deletes of the killed forget did not stick, nor the put
        let clean = Store::postgres(&url).unwrap();
        let snap = clean.get_snapshot("own", "snap").unwrap().unwrap();
        assert_eq!((snap.version, snap.data.as_slice()), (1, &b"v1"[..]));
        assert!(clean.get_draft("own", "d").unwrap().is_some());
        assert!(clean.lookup("own", "k").unwrap().is_some());
        assert_eq!(clean.queue_counts("q").unwrap().ready, 1);
        // and a store whose connections were killed recovers by itself
        let b = PgBackend::connect(&url).unwrap();
        let s = Store::new(b);
        assert_eq!(s.forget("own").unwrap().snapshots, 1);
    }
}
