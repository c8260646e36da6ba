//! `forget(owner)` on SQLite leaves none of the owner's bytes in any
//! database file: the main file, the `-wal` and the `-shm`, read raw.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use turno_store::{ManualClock, Store};

#[cfg(feature = "postgres")]
use common::pg_url;

/// Unusual markers, so a hit cannot be a coincidence.
const OWNER: &str = "owner-QX7Z-forget-me";
const SECRET: &[u8] = b"SECRET-4111111111111111-card";

fn occurrences(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// (file, hits of the owner, hits of the secret) for every file of the db.
fn scan(db: &Path) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let p = db.with_file_name(format!(
            "{}{suffix}",
            db.file_name().unwrap().to_string_lossy()
        ));
        if let Ok(bytes) = std::fs::read(&p) {
            out.push((
                suffix.to_string(),
                occurrences(&bytes, OWNER.as_bytes()),
                occurrences(&bytes, SECRET),
            ));
        }
    }
    out
}

fn fill(s: &Store, owner: &str, secret: &[u8]) {
    // large payloads too, so overflow pages are involved
    let big: Vec<u8> = secret.iter().copied().cycle().take(20_000).collect();
    for i in 0..50 {
        let key = format!("snap-{i}");
        let v = s.put_snapshot(owner, &key, None, secret, None).unwrap();
        s.put_snapshot(owner, &key, Some(v), &big, None).unwrap();
        s.save_draft(owner, &format!("draft-{i}"), 1, secret, None)
            .unwrap();
        s.claim(owner, &format!("key-{i}"), secret).unwrap();
        s.complete(owner, &format!("key-{i}"), secret).unwrap();
        s.enqueue("q", owner, &format!("{owner}-evt-{i}"), secret)
            .unwrap();
    }
    // some acknowledged (payload cleared), some leased, some waiting
    let items = s.lease("q", 30, Duration::from_secs(60)).unwrap();
    let mine: Vec<i64> = items
        .iter()
        .filter(|i| i.owner == owner)
        .map(|i| i.id)
        .take(10)
        .collect();
    s.ack(&mine).unwrap();
}

#[test]
fn forget_leaves_none_of_the_owners_bytes_in_the_sqlite_files() {
    let dir = tempdir();
    let db = dir.path().join("store.db");
    let clock = ManualClock::new(T0);
    let s = sqlite_at(db.clone(), clock.clone());
    fill(&s, OWNER, SECRET);
    fill(&s, "someone-else", b"KEEP-THIS-other-data");
    // the scan can see the bytes before: the test is not blind
    let before = scan(&db);
    assert!(
        before.iter().any(|(_, o, s)| *o > 0 && *s > 0),
        "the owner's bytes should be in the files before forget: {before:?}"
    );

    let report = s.forget(OWNER).unwrap();
    assert_eq!(
        (
            report.snapshots,
            report.drafts,
            report.keys,
            report.queue_items
        ),
        (50, 50, 50, 50)
    );
    assert!(
        report.files_scrubbed,
        "the WAL should have been checkpointed and truncated"
    );

    // the store is still open (its -wal and -shm exist): read them as they are
    let after = scan(&db);
    assert!(after.iter().any(|(f, _, _)| f == "-wal"), "{after:?}");
    for (file, owner_hits, secret_hits) in &after {
        assert_eq!(
            (*owner_hits, *secret_hits),
            (0, 0),
            "store.db{file} still holds the forgotten owner's bytes"
        );
    }
    // the other owner's data is intact and the database is sound
    assert_eq!(s.list_snapshots("someone-else").unwrap().len(), 50);
    let kept = std::fs::read(&db).unwrap();
    assert!(occurrences(&kept, b"KEEP-THIS-other-data") > 0);
    let b = turno_store::SqliteBackend::open(&db).unwrap();
    b.integrity_check().unwrap();
    drop(b);
    drop(s);
    for (file, o, x) in scan(&db) {
        assert_eq!((o, x), (0, 0), "store.db{file} after close");
    }
}

#[test]
fn forget_reports_when_a_reader_holds_the_wal() {
    let dir = tempdir();
    let db = dir.path().join("store.db");
    let s = sqlite_at(db.clone(), ManualClock::new(T0));
    fill(&s, OWNER, SECRET);
    // another connection in the middle of a read transaction pins the WAL
    let reader = rusqlite::Connection::open(&db).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let n: i64 = reader
        .query_row("SELECT count(*) FROM turno_snapshots", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 50);
    let store = Store::new(
        turno_store::SqliteConfig::new(&db)
            .busy_timeout(Duration::from_millis(50))
            .open()
            .unwrap(),
    );
    let report = store.forget(OWNER).unwrap();
    assert_eq!(report.snapshots, 50);
    // the rows are gone, but the store says the files are not yet clean
    assert!(!report.files_scrubbed);
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    // once the reader is gone, forgetting again scrubs
    assert!(store.forget(OWNER).unwrap().files_scrubbed);
    for (file, o, x) in scan(&db) {
        assert_eq!((o, x), (0, 0), "store.db{file}");
    }
}

/// What docs/store.md says PostgreSQL keeps after `forget`, checked on a real
/// server: the deleted rows stay in the table files until `VACUUM FULL`
/// rewrites them, and stay in the WAL after that.
#[cfg(feature = "postgres")]
#[test]
fn postgres_keeps_forgotten_bytes_in_dead_tuples_and_wal_as_documented() {
    use walk::files_under;
    let Some(url) = pg_url() else { return };
    let cluster = turno_store::postgres::TempCluster::shared().unwrap();
    let s = Store::new(turno_store::postgres::PgBackend::connect(&url).unwrap());
    // small rows, stored inline (a TOASTed value would be compressed)
    for i in 0..20 {
        s.put_snapshot(OWNER, &format!("snap-{i}"), None, SECRET, None)
            .unwrap();
        s.enqueue("q", OWNER, &format!("evt-{i}"), SECRET).unwrap();
    }
    let report = s.forget(OWNER).unwrap();
    assert_eq!((report.snapshots, report.queue_items), (20, 20));
    assert!(
        !report.files_scrubbed,
        "PostgreSQL never claims scrubbed files"
    );
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let db_oid: u32 = admin
        .query_one(
            "SELECT oid FROM pg_database WHERE datname = current_database()",
            &[],
        )
        .unwrap()
        .get(0);
    let base = cluster.data_dir().join("base").join(db_oid.to_string());
    let hits_in = |dir: &Path| -> usize {
        files_under(dir)
            .iter()
            .map(|f| occurrences(&std::fs::read(f).unwrap_or_default(), SECRET))
            .sum()
    };
    admin.batch_execute("CHECKPOINT").unwrap();
    assert!(
        hits_in(&base) > 0,
        "dead tuples still hold the bytes after DELETE"
    );
    // one statement each: VACUUM refuses to run inside a transaction block
    for t in [
        "turno_snapshots",
        "turno_drafts",
        "turno_keys",
        "turno_queue",
    ] {
        admin.batch_execute(&format!("VACUUM FULL {t}")).unwrap();
    }
    admin.batch_execute("CHECKPOINT").unwrap();
    assert_eq!(
        hits_in(&base),
        0,
        "VACUUM FULL rewrote the tables without them"
    );
    assert!(
        hits_in(&cluster.data_dir().join("pg_wal")) > 0,
        "the WAL still holds the inserted bytes"
    );
}

#[cfg(feature = "postgres")]
mod walk {
    use std::path::{Path, PathBuf};

    pub fn files_under(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
        out
    }
}
