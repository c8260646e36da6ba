//! `turno-bench store`: turno-store against plain SQL doing the same
//! statements, on SQLite and on PostgreSQL.
//!
//! Cases, per backend: `sqlite-full` (the store's default `synchronous =
//! FULL`, an fsync per commit, in `$TMPDIR`), `sqlite-normal`
//! (`synchronous = NORMAL`, same disk), `sqlite-memfs` (`FULL` on
//! `/dev/shm`, where fsync costs nothing: the CPU cost alone), `postgres` (a
//! private server started for the run, default settings, `fsync = on`) and
//! `postgres-nofsync` (`fsync = off`: round trips and server CPU without the
//! disk wait):
//!
//! - `snapshot_put`: `n` optimistic-concurrency updates spread over 100
//!   snapshots of 256 bytes (each a transaction: read the version, write
//!   the next).
//! - `queue`: `n` items enqueued (one transaction each), then leased in
//!   batches of 64 and acknowledged batch by batch until the queue is empty.
//!   `turno-store+pump` does the same through a [`Pump`] into an actor with
//!   a `Suspend(64)` mailbox that acks each delivery in its turn.
//!
//! `plain-sql` runs the exact statements the backend runs (same SQL, same
//! transactions, same pragmas, prepared once) with rusqlite or the
//! `postgres` client directly; the ratio between the two rows is the
//! store's overhead over the database itself.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rusqlite::{params, Connection};
use turno::{Actor, Context, Policy, Props, System, ThreadedSystem};
use turno_store::postgres::{PgBackend, TempCluster};
use turno_store::{Delivery, Durability, Pump, PumpConfig, SqliteConfig, Store};

use crate::harness::Harness;
use crate::Args;

const SNAPSHOTS: u64 = 100;
const BATCH: usize = 64;
const LEASE: Duration = Duration::from_secs(60);

/// Runs every case. `--n` sets the operations per run of the cases that
/// wait for a disk (`sqlite-full`, `postgres`; default 300); the others run
/// ten times as many.
pub fn run(args: &Args, h: &mut Harness) {
    let n = args.n.unwrap_or(300);
    let tmp = std::env::temp_dir();
    let shm = std::path::Path::new("/dev/shm");
    let mut sqlite = vec![
        ("sqlite-full", Durability::Full, tmp.clone(), n),
        ("sqlite-normal", Durability::Normal, tmp, n * 10),
    ];
    if shm.is_dir() {
        sqlite.push(("sqlite-memfs", Durability::Full, shm.to_path_buf(), n * 10));
    }
    for (label, durability, parent, n) in sqlite {
        let dir = parent.join(format!("turno-bench-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        sqlite_cases(args, h, n, label, durability, &dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
    for (label, fast) in [("postgres", false), ("postgres-nofsync", true)] {
        let cases = [
            format!("store/{label}/snapshot_put"),
            format!("store/{label}/queue"),
        ];
        if !cases.iter().any(|c| args.selected(c, "")) {
            continue;
        }
        let cluster = match if fast {
            TempCluster::start_fast()
        } else {
            TempCluster::start()
        } {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipping the {label} cases: {e}");
                continue;
            }
        };
        pg_cases(args, h, if fast { n * 10 } else { n }, label, &cluster);
    }
}

fn sqlite_cases(
    args: &Args,
    h: &mut Harness,
    n: u64,
    label: &str,
    durability: Durability,
    dir: &std::path::Path,
) {
    let open = |name: &str| {
        let path = dir.join(format!("{name}.db"));
        SqliteConfig::new(&path)
            .durability(durability)
            .open()
            .expect("open sqlite");
        path
    };
    let store_at = |name: &str| {
        Store::new(
            SqliteConfig::new(open(name))
                .durability(durability)
                .open()
                .unwrap(),
        )
    };
    let case = format!("store/{label}/snapshot_put");
    if args.selected(&case, "turno-store") {
        let store = store_at("store-snap");
        let mut w = SnapshotWriter::default();
        h.measure(&case, "turno-store", n, || w.store_puts(&store, n));
    }
    if args.selected(&case, "plain-sql") {
        let conn = raw_sqlite(open("plain-snap"), durability);
        let mut w = SnapshotWriter::default();
        h.measure(&case, "plain-sql", n, || w.sqlite_puts(&conn, n));
    }
    let case = format!("store/{label}/queue");
    if args.selected(&case, "turno-store") {
        let store = store_at("store-q");
        let mut run = 0;
        h.measure(&case, "turno-store", n, || {
            run += 1;
            store_queue(&store, run, n)
        });
    }
    if args.selected(&case, "turno-store+pump") {
        let store = store_at("store-pump");
        let mut run = 0;
        h.measure(&case, "turno-store+pump", n, || {
            run += 1;
            pump_queue(&store, run, n)
        });
    }
    if args.selected(&case, "plain-sql") {
        let conn = raw_sqlite(open("plain-q"), durability);
        let mut run = 0;
        h.measure(&case, "plain-sql", n, || {
            run += 1;
            sqlite_queue(&conn, run, n)
        });
    }
}

fn pg_cases(args: &Args, h: &mut Harness, n: u64, label: &str, cluster: &TempCluster) {
    let fresh = || {
        let url = cluster.fresh_database().expect("create database");
        drop(PgBackend::connect(&url).expect("schema"));
        url
    };
    let case = format!("store/{label}/snapshot_put");
    if args.selected(&case, "turno-store") {
        let store = Store::new(PgBackend::connect(&fresh()).unwrap());
        let mut w = SnapshotWriter::default();
        h.measure(&case, "turno-store", n, || w.store_puts(&store, n));
    }
    if args.selected(&case, "plain-sql") {
        let mut pg = PlainPg::connect(&fresh());
        let mut w = SnapshotWriter::default();
        h.measure(&case, "plain-sql", n, || w.pg_puts(&mut pg, n));
    }
    let case = format!("store/{label}/queue");
    if args.selected(&case, "turno-store") {
        let store = Store::new(PgBackend::connect(&fresh()).unwrap());
        let mut run = 0;
        h.measure(&case, "turno-store", n, || {
            run += 1;
            store_queue(&store, run, n)
        });
    }
    if args.selected(&case, "turno-store+pump") {
        let store = Store::new(PgBackend::connect(&fresh()).unwrap());
        let mut run = 0;
        h.measure(&case, "turno-store+pump", n, || {
            run += 1;
            pump_queue(&store, run, n)
        });
    }
    if args.selected(&case, "plain-sql") {
        let mut pg = PlainPg::connect(&fresh());
        let mut run = 0;
        h.measure(&case, "plain-sql", n, || {
            run += 1;
            pg.queue(run, n)
        });
    }
}

fn now_ms() -> i64 {
    turno_store::Clock::now_ms(&turno_store::SystemClock)
}

/// The same sequence of puts for every implementation: snapshot `i % 100`,
/// each at its next version.
#[derive(Default)]
struct SnapshotWriter {
    versions: Vec<Option<u64>>,
    i: u64,
}

impl SnapshotWriter {
    fn next(&mut self) -> (String, Option<u64>, Vec<u8>) {
        if self.versions.is_empty() {
            self.versions = vec![None; SNAPSHOTS as usize];
        }
        let slot = (self.i % SNAPSHOTS) as usize;
        self.i += 1;
        let data = format!("{:0256}", self.i).into_bytes();
        (format!("snap-{slot}"), self.versions[slot], data)
    }

    fn done(&mut self, v: u64) {
        let slot = ((self.i - 1) % SNAPSHOTS) as usize;
        self.versions[slot] = Some(v);
    }

    fn store_puts(&mut self, store: &Store, n: u64) {
        for _ in 0..n {
            let (key, expected, data) = self.next();
            let v = store
                .put_snapshot("bench", &key, expected, &data, None)
                .unwrap();
            self.done(v);
        }
    }

    fn sqlite_puts(&mut self, conn: &Connection, n: u64) {
        for _ in 0..n {
            let (key, expected, data) = self.next();
            let now = now_ms();
            // IMMEDIATE: the write lock first, as the store takes it.
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            let actual: Option<i64> = conn
                .prepare_cached(
                    "SELECT version FROM turno_snapshots WHERE owner = ?1 AND key = ?2
                     AND (expires_at IS NULL OR expires_at > ?3)",
                )
                .unwrap()
                .query_row(params!["bench", key, now], |r| r.get(0))
                .ok();
            assert_eq!(actual.map(|v| v as u64), expected);
            let v = actual.unwrap_or(0) + 1;
            conn.prepare_cached(
                "INSERT OR REPLACE INTO turno_snapshots
                 (owner, key, version, data, updated_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .unwrap()
            .execute(params!["bench", key, v, data, now, None::<i64>])
            .unwrap();
            conn.execute_batch("COMMIT").unwrap();
            self.done(v as u64);
        }
    }

    fn pg_puts(&mut self, pg: &mut PlainPg, n: u64) {
        for _ in 0..n {
            let (key, expected, data) = self.next();
            let now = now_ms();
            let mut tx = pg.client.transaction().unwrap();
            let actual: Option<i64> = tx
                .query_opt(&pg.snap_select, &[&"bench", &key, &now])
                .unwrap()
                .map(|r| r.get(0));
            assert_eq!(actual.map(|v| v as u64), expected);
            let row = match expected {
                None => tx
                    .query_one(
                        &pg.snap_insert,
                        &[&"bench", &key, &data, &now, &None::<i64>],
                    )
                    .unwrap(),
                Some(v) => tx
                    .query_one(
                        &pg.snap_update,
                        &[&"bench", &key, &(v as i64), &data, &now, &None::<i64>],
                    )
                    .unwrap(),
            };
            tx.commit().unwrap();
            self.done(row.get::<_, i64>(0) as u64);
        }
    }
}

fn raw_sqlite(path: PathBuf, durability: Durability) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA secure_delete = ON;"
    ))
    .unwrap();
    conn
}

/// The `n` items of one run's queue workload, through the store.
fn enqueue_run(store: &Store, run: u64, n: u64) {
    for i in 0..n {
        store
            .enqueue(
                "bench",
                "bench",
                &format!("r{run}-{i}"),
                b"payload of 32 bytes, more or less",
            )
            .unwrap();
    }
}

fn store_queue(store: &Store, run: u64, n: u64) {
    enqueue_run(store, run, n);
    let mut left = n;
    while left > 0 {
        let items = store.lease("bench", BATCH, LEASE).unwrap();
        assert!(!items.is_empty());
        let ids: Vec<i64> = items.iter().map(|i| i.id).collect();
        left -= store.ack(&ids).unwrap();
    }
}

struct Acker;

impl Actor for Acker {
    type Msg = Delivery;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, d: Delivery) {
        d.ack();
    }
}

fn pump_queue(store: &Store, run: u64, n: u64) {
    enqueue_run(store, run, n);
    let sys = ThreadedSystem::builder().threads(1).build();
    let addr = sys
        .spawn(Props::new().mailbox(Policy::Suspend(BATCH)), || Acker)
        .unwrap();
    let pump = Pump::spawn(
        store.clone(),
        "bench",
        addr,
        |d| d,
        PumpConfig::default()
            .batch(BATCH)
            .poll(Duration::from_millis(1)),
    )
    .unwrap();
    while pump.stats().acked.load(Ordering::Relaxed) < n {
        std::thread::sleep(Duration::from_micros(200));
    }
    pump.stop();
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

fn sqlite_queue(conn: &Connection, run: u64, n: u64) {
    let payload = &b"payload of 32 bytes, more or less"[..];
    for i in 0..n {
        let now = now_ms();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let inserted = conn
            .prepare_cached(
                "INSERT INTO turno_queue (queue, owner, key, payload, not_before, enqueued_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (queue, key) DO NOTHING",
            )
            .unwrap()
            .execute(params![
                "bench",
                "bench",
                format!("r{run}-{i}"),
                payload,
                now
            ])
            .unwrap();
        assert_eq!(inserted, 1);
        let _id = conn.last_insert_rowid();
        conn.execute_batch("COMMIT").unwrap();
    }
    let mut left = n;
    while left > 0 {
        let now = now_ms();
        let ids = {
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            let ids: Vec<i64> = conn
                .prepare_cached(
                    "UPDATE turno_queue SET attempts = attempts + 1, lease_until = ?1, lease_token = ?2
                     WHERE id IN (SELECT id FROM turno_queue
                         WHERE queue = ?3 AND acked_at IS NULL AND not_before <= ?4
                         AND (lease_until IS NULL OR lease_until <= ?4)
                         ORDER BY id LIMIT ?5)
                     RETURNING id, owner, key, payload, attempts",
                )
                .unwrap()
                .query_map(
                    params![now + 60_000, 7i64, "bench", now, BATCH as i64],
                    |r| {
                        let _: (String, String, Vec<u8>, i64) =
                            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
                        r.get(0)
                    },
                )
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            conn.execute_batch("COMMIT").unwrap();
            ids
        };
        assert!(!ids.is_empty());
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut stmt = conn
            .prepare_cached(
                "UPDATE turno_queue SET acked_at = ?2, payload = X'', lease_until = NULL
                 WHERE id = ?1 AND acked_at IS NULL",
            )
            .unwrap();
        for id in &ids {
            left -= stmt.execute(params![id, now]).unwrap() as u64;
        }
        drop(stmt);
        conn.execute_batch("COMMIT").unwrap();
    }
}

/// The PostgreSQL backend's statements on one client, prepared once.
struct PlainPg {
    client: postgres::Client,
    snap_select: postgres::Statement,
    snap_insert: postgres::Statement,
    snap_update: postgres::Statement,
    enqueue: postgres::Statement,
    lease: postgres::Statement,
    ack: postgres::Statement,
}

impl PlainPg {
    fn connect(url: &str) -> PlainPg {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let mut p = |sql: &str| client.prepare(sql).unwrap();
        let snap_select = p(
            "SELECT version FROM turno_snapshots WHERE owner = $1 AND key = $2
             AND (expires_at IS NULL OR expires_at > $3) FOR UPDATE",
        );
        let snap_insert = p(
            "INSERT INTO turno_snapshots (owner, key, version, data, updated_at, expires_at)
             VALUES ($1, $2, 1, $3, $4, $5)
             ON CONFLICT (owner, key) DO UPDATE SET version = 1, data = EXCLUDED.data,
                 updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at
             WHERE turno_snapshots.expires_at IS NOT NULL AND turno_snapshots.expires_at <= $4
             RETURNING version",
        );
        let snap_update = p(
            "UPDATE turno_snapshots SET version = version + 1, data = $4,
                 updated_at = $5, expires_at = $6
             WHERE owner = $1 AND key = $2 AND version = $3
                 AND (expires_at IS NULL OR expires_at > $5)
             RETURNING version",
        );
        let enqueue = p(
            "INSERT INTO turno_queue (queue, owner, key, payload, not_before, enqueued_at)
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (queue, key) DO NOTHING RETURNING id",
        );
        let lease = p(
            "UPDATE turno_queue SET attempts = attempts + 1, lease_until = $1, lease_token = $2
             WHERE id IN (SELECT id FROM turno_queue
                 WHERE queue = $3 AND acked_at IS NULL AND not_before <= $4
                 AND (lease_until IS NULL OR lease_until <= $4)
                 ORDER BY id LIMIT $5 FOR UPDATE SKIP LOCKED)
             RETURNING id, owner, key, payload, attempts",
        );
        let ack = p(
            "UPDATE turno_queue SET acked_at = $2, payload = '\\x', lease_until = NULL
             WHERE id = ANY($1) AND acked_at IS NULL",
        );
        PlainPg {
            client,
            snap_select,
            snap_insert,
            snap_update,
            enqueue,
            lease,
            ack,
        }
    }

    fn queue(&mut self, run: u64, n: u64) {
        let payload = &b"payload of 32 bytes, more or less"[..];
        for i in 0..n {
            let now = now_ms();
            let mut tx = self.client.transaction().unwrap();
            let row = tx
                .query_opt(
                    &self.enqueue,
                    &[&"bench", &"bench", &format!("r{run}-{i}"), &payload, &now],
                )
                .unwrap();
            assert!(row.is_some());
            tx.commit().unwrap();
        }
        let mut left = n;
        while left > 0 {
            let now = now_ms();
            let mut tx = self.client.transaction().unwrap();
            let rows = tx
                .query(
                    &self.lease,
                    &[&(now + 60_000), &7i64, &"bench", &now, &(BATCH as i64)],
                )
                .unwrap();
            tx.commit().unwrap();
            assert!(!rows.is_empty());
            let ids: Vec<i64> = rows
                .iter()
                .map(|r| {
                    let _: (String, String, Vec<u8>, i32) =
                        (r.get(1), r.get(2), r.get(3), r.get(4));
                    r.get(0)
                })
                .collect();
            let mut tx = self.client.transaction().unwrap();
            left -= tx.execute(&self.ack, &[&ids, &now]).unwrap();
            tx.commit().unwrap();
        }
    }
}
