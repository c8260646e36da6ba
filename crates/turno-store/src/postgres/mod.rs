//! The shared backend: PostgreSQL, for several processes or machines
//! (feature `postgres`, the synchronous `postgres` client).
//!
//! - **Atomicity under concurrency** comes from single statements the
//!   server makes atomic: `INSERT ... ON CONFLICT` for claims, creates and
//!   enqueues, `UPDATE ... WHERE version = $expected` for snapshot puts,
//!   `UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED)` for
//!   leases, so consumers on many connections take disjoint items and never
//!   wait for each other.
//! - **Lost connections.** A connection that dies inside a transaction (the
//!   server restarted, `pg_terminate_backend`, a network cut) before the
//!   commit was sent means the server rolled the transaction back: the call
//!   is retried once on a fresh connection, then fails with
//!   [`StoreError::ConnectionLost`]. A connection that dies while the commit
//!   is in flight is [`StoreError::CommitUnknown`]: the store cannot know,
//!   so it does not guess.
//! - **Forgetting** deletes the rows; what PostgreSQL keeps of them
//!   afterwards (dead tuples until vacuum, WAL segments until recycled,
//!   archives and replicas for as long as they are kept) is described in
//!   `docs/store.md`. [`ForgetReport::files_scrubbed`] is always `false`
//!   here.
//!
//! [`TempCluster`] starts a private server for tests and benchmarks.

pub mod cluster;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement, Transaction};

pub use cluster::TempCluster;

use crate::backend::{
    check_delete, classify, conflict, is_poison, key_state, next_version, not_in_progress, Backend,
    Committed, SnapshotPut,
};
use crate::error::{Result, StoreError};
use crate::model::{
    Claim, DeadLetter, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord, Millis, NewItem,
    QueueCounts, QueueItem, Snapshot, SnapshotMeta, SweepReport,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS turno_snapshots (
    owner TEXT NOT NULL, key TEXT NOT NULL, version BIGINT NOT NULL,
    data BYTEA NOT NULL, updated_at BIGINT NOT NULL, expires_at BIGINT,
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_drafts (
    owner TEXT NOT NULL, key TEXT NOT NULL, version BIGINT NOT NULL,
    data BYTEA NOT NULL, saved_at BIGINT NOT NULL, expires_at BIGINT,
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_keys (
    owner TEXT NOT NULL, key TEXT NOT NULL, fingerprint BYTEA NOT NULL,
    state SMALLINT NOT NULL, result BYTEA, created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_queue (
    id BIGSERIAL PRIMARY KEY, queue TEXT NOT NULL, owner TEXT NOT NULL,
    key TEXT NOT NULL, payload BYTEA NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    not_before BIGINT NOT NULL, lease_until BIGINT, lease_token BIGINT NOT NULL DEFAULT 0,
    enqueued_at BIGINT NOT NULL, acked_at BIGINT,
    UNIQUE (queue, key));
CREATE INDEX IF NOT EXISTS turno_queue_ready ON turno_queue (queue, id) WHERE acked_at IS NULL;
CREATE INDEX IF NOT EXISTS turno_queue_owner ON turno_queue (owner);
CREATE TABLE IF NOT EXISTS turno_dead (
    id BIGINT PRIMARY KEY, queue TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL,
    payload BYTEA NOT NULL, attempts INTEGER NOT NULL, enqueued_at BIGINT NOT NULL,
    dead_at BIGINT NOT NULL,
    UNIQUE (queue, key));
CREATE INDEX IF NOT EXISTS turno_dead_owner ON turno_dead (owner);
";

/// Serializes concurrent schema creation (CREATE ... IF NOT EXISTS races
/// on the catalog otherwise).
const SCHEMA_LOCK: i64 = 0x7475_726e_6f00_0001;

/// Called inside a transaction between its statements with the server
/// process id of the connection: fault-injection tests terminate that
/// backend here to lose the connection mid-transaction.
pub type FaultHook = Arc<dyn Fn(i32) + Send + Sync>;

struct Conn {
    client: Client,
    pid: i32,
    stmts: HashMap<&'static str, Statement>,
}

/// A store on a PostgreSQL database. See the [module docs](self). Holds a
/// small pool of connections (one per concurrent caller, created on
/// demand, kept for reuse).
pub struct PgBackend {
    url: String,
    pool: Mutex<Vec<Conn>>,
    fault: Mutex<Option<FaultHook>>,
}

impl PgBackend {
    /// Connects to `url` (`postgres://user@127.0.0.1:5432/db`) and creates
    /// the tables if absent.
    pub fn connect(url: &str) -> Result<Self> {
        let b = PgBackend {
            url: url.to_owned(),
            pool: Mutex::new(Vec::new()),
            fault: Mutex::new(None),
        };
        let mut c = b.open()?;
        let mut tx = c.client.transaction().map_err(pg_err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(pg_err)?;
        tx.batch_execute(SCHEMA).map_err(pg_err)?;
        tx.commit().map_err(pg_err)?;
        b.pool().push(c);
        Ok(b)
    }

    /// Installs a [`FaultHook`] (tests only): it runs inside every
    /// multi-statement transaction, between two statements.
    pub fn set_fault_hook(&self, hook: Option<FaultHook>) {
        *self.fault.lock().unwrap_or_else(|p| p.into_inner()) = hook;
    }

    fn open(&self) -> Result<Conn> {
        let mut client = Client::connect(&self.url, NoTls).map_err(pg_err)?;
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .map_err(pg_err)?
            .get(0);
        Ok(Conn {
            client,
            pid,
            stmts: HashMap::new(),
        })
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Vec<Conn>> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` in one transaction; retried once on a fresh connection when
    /// the connection was lost before the commit was sent.
    fn tx<T>(&self, mut f: impl FnMut(&mut Tx<'_, '_>) -> Result<T>) -> Result<T> {
        let hook = self.fault.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let pooled = self.pool().pop();
            let mut conn = match pooled {
                Some(c) if !c.client.is_closed() => c,
                _ => self.open()?,
            };
            let out = run_tx(&mut conn, hook.as_ref(), &mut f);
            let healthy = !conn.client.is_closed();
            if healthy {
                self.pool().push(conn);
            }
            match out {
                Err(StoreError::ConnectionLost(_)) if attempt == 1 => continue,
                // Deadlocks and serialization failures roll back whole.
                Err(StoreError::Contention(_)) if attempt <= 3 => continue,
                other => return other,
            }
        }
    }
}

fn run_tx<T>(
    conn: &mut Conn,
    hook: Option<&FaultHook>,
    f: &mut impl FnMut(&mut Tx<'_, '_>) -> Result<T>,
) -> Result<T> {
    let pid = conn.pid;
    let mut tx = conn.client.transaction().map_err(pg_err)?;
    let mut t = Tx {
        tx: &mut tx,
        stmts: &mut conn.stmts,
        pid,
        hook,
    };
    let out = f(&mut t)?;
    tx.commit().map_err(|e| match pg_err(e) {
        StoreError::ConnectionLost(m) => StoreError::CommitUnknown(m),
        other => other,
    })?;
    Ok(out)
}

/// A transaction with a per-connection statement cache.
struct Tx<'a, 'b> {
    tx: &'a mut Transaction<'b>,
    stmts: &'a mut HashMap<&'static str, Statement>,
    pid: i32,
    hook: Option<&'a FaultHook>,
}

impl Tx<'_, '_> {
    fn stmt(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.tx.prepare(sql).map_err(pg_err)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }

    fn exec(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let s = self.stmt(sql)?;
        self.tx.execute(&s, p).map_err(pg_err)
    }

    fn query(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let s = self.stmt(sql)?;
        self.tx.query(&s, p).map_err(pg_err)
    }

    fn opt(&mut self, sql: &'static str, p: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let s = self.stmt(sql)?;
        self.tx.query_opt(&s, p).map_err(pg_err)
    }

    /// Between two statements of one transaction: where faults are injected.
    fn between(&self) {
        if let Some(h) = self.hook {
            h(self.pid);
        }
    }
}

fn pg_err(e: postgres::Error) -> StoreError {
    if e.is_closed() {
        return StoreError::ConnectionLost(e.to_string());
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let msg = format!("{}: {}", code.code(), db.message());
        if *code == SqlState::DISK_FULL
            || *code == SqlState::OUT_OF_MEMORY
            || *code == SqlState::PROGRAM_LIMIT_EXCEEDED
        {
            return StoreError::Full(msg);
        }
        if *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE
        {
            return StoreError::Contention(msg);
        }
        if *code == SqlState::LOCK_NOT_AVAILABLE || *code == SqlState::QUERY_CANCELED {
            return StoreError::Busy(msg);
        }
        if *code == SqlState::ADMIN_SHUTDOWN
            || *code == SqlState::CRASH_SHUTDOWN
            || *code == SqlState::CANNOT_CONNECT_NOW
            || code.code().starts_with("08")
        {
            return StoreError::ConnectionLost(msg);
        }
        return StoreError::Database(msg);
    }
    // I/O errors talking to the server: the connection is gone.
    if std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()) {
        return StoreError::ConnectionLost(e.to_string());
    }
    StoreError::Database(e.to_string())
}

fn ver(v: i64) -> u64 {
    v as u64
}

fn pg_key_state(n: i16) -> Result<crate::model::KeyState> {
    key_state(n.into())
}

/// One snapshot put inside a transaction: the version check, then the
/// write that checks it again on its own.
fn put_one(t: &mut Tx<'_, '_>, put: &SnapshotPut<'_>, now: Millis) -> Result<u64> {
    // Lock the row (if any) so the conflict report is accurate.
    let actual: Option<u64> = t
        .opt(
            "SELECT version FROM turno_snapshots WHERE owner = $1 AND key = $2
             AND (expires_at IS NULL OR expires_at > $3) FOR UPDATE",
            &[&put.owner, &put.key, &now],
        )?
        .map(|r| ver(r.get(0)));
    next_version(put, actual)?;
    t.between();
    let row = match put.expected {
        None => t.opt(
            "INSERT INTO turno_snapshots (owner, key, version, data, updated_at, expires_at)
             VALUES ($1, $2, 1, $3, $4, $5)
             ON CONFLICT (owner, key) DO UPDATE SET version = 1, data = EXCLUDED.data,
                 updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at
             WHERE turno_snapshots.expires_at IS NOT NULL
                 AND turno_snapshots.expires_at <= $4
             RETURNING version",
            &[&put.owner, &put.key, &put.data, &now, &put.expires_at],
        )?,
        Some(v) => t.opt(
            "UPDATE turno_snapshots SET version = version + 1, data = $4,
                 updated_at = $5, expires_at = $6
             WHERE owner = $1 AND key = $2 AND version = $3
                 AND (expires_at IS NULL OR expires_at > $5)
             RETURNING version",
            &[
                &put.owner,
                &put.key,
                &(v as i64),
                &put.data,
                &now,
                &put.expires_at,
            ],
        )?,
    };
    match row {
        Some(r) => Ok(ver(r.get(0))),
        None => Err(conflict(put.owner, put.key, put.expected, None)),
    }
}

impl Backend for PgBackend {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn snapshot_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Snapshot>> {
        self.tx(|t| {
            Ok(t.opt(
                "SELECT version, data, updated_at, expires_at FROM turno_snapshots
                 WHERE owner = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)",
                &[&owner, &key, &now],
            )?
            .map(|r| Snapshot {
                owner: owner.into(),
                key: key.into(),
                version: ver(r.get(0)),
                data: r.get(1),
                updated_at: r.get(2),
                expires_at: r.get(3),
            }))
        })
    }

    fn commit(&self, puts: &[SnapshotPut<'_>], acks: &[i64], now: Millis) -> Result<Committed> {
        self.tx(|t| {
            let mut versions = Vec::with_capacity(puts.len());
            for put in puts {
                versions.push(put_one(t, put, now)?);
            }
            let acked = if acks.is_empty() {
                0
            } else {
                t.between();
                t.exec(
                    "UPDATE turno_queue SET acked_at = $2, payload = '\\x', lease_until = NULL
                     WHERE id = ANY($1) AND acked_at IS NULL",
                    &[&acks, &now],
                )?
            };
            Ok(Committed { versions, acked })
        })
    }

    fn snapshot_delete(
        &self,
        owner: &str,
        key: &str,
        expected: Option<u64>,
        now: Millis,
    ) -> Result<bool> {
        self.tx(|t| {
            let actual: Option<u64> = t
                .opt(
                    "SELECT version FROM turno_snapshots WHERE owner = $1 AND key = $2
                     AND (expires_at IS NULL OR expires_at > $3) FOR UPDATE",
                    &[&owner, &key, &now],
                )?
                .map(|r| ver(r.get(0)));
            check_delete(owner, key, expected, actual)?;
            t.exec(
                "DELETE FROM turno_snapshots WHERE owner = $1 AND key = $2",
                &[&owner, &key],
            )?;
            Ok(actual.is_some())
        })
    }

    fn snapshot_list(&self, owner: &str, now: Millis) -> Result<Vec<SnapshotMeta>> {
        self.tx(|t| {
            Ok(t.query(
                "SELECT key, version, updated_at, expires_at FROM turno_snapshots
                 WHERE owner = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY key",
                &[&owner, &now],
            )?
            .into_iter()
            .map(|r| SnapshotMeta {
                key: r.get(0),
                version: ver(r.get(1)),
                updated_at: r.get(2),
                expires_at: r.get(3),
            })
            .collect())
        })
    }

    fn draft_save(&self, d: &Draft, now: Millis) -> Result<DraftSaved> {
        self.tx(|t| {
            let saved = t.opt(
                "INSERT INTO turno_drafts (owner, key, version, data, saved_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (owner, key) DO UPDATE SET version = EXCLUDED.version,
                     data = EXCLUDED.data, saved_at = EXCLUDED.saved_at,
                     expires_at = EXCLUDED.expires_at
                 WHERE turno_drafts.version < EXCLUDED.version
                     OR (turno_drafts.expires_at IS NOT NULL AND turno_drafts.expires_at <= $7)
                 RETURNING 1",
                &[
                    &d.owner,
                    &d.key,
                    &(d.version as i64),
                    &d.data,
                    &d.saved_at,
                    &d.expires_at,
                    &now,
                ],
            )?;
            if saved.is_some() {
                return Ok(DraftSaved::Saved);
            }
            let stored = t
                .opt(
                    "SELECT version FROM turno_drafts WHERE owner = $1 AND key = $2",
                    &[&d.owner, &d.key],
                )?
                .map(|r| ver(r.get(0)))
                .unwrap_or(0);
            Ok(DraftSaved::Stale { stored })
        })
    }

    fn draft_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Draft>> {
        self.tx(|t| {
            Ok(t.opt(
                "SELECT version, data, saved_at, expires_at FROM turno_drafts
                 WHERE owner = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)",
                &[&owner, &key, &now],
            )?
            .map(|r| Draft {
                owner: owner.into(),
                key: key.into(),
                version: ver(r.get(0)),
                data: r.get(1),
                saved_at: r.get(2),
                expires_at: r.get(3),
            }))
        })
    }

    fn draft_delete(&self, owner: &str, key: &str) -> Result<bool> {
        self.tx(|t| {
            Ok(t.exec(
                "DELETE FROM turno_drafts WHERE owner = $1 AND key = $2",
                &[&owner, &key],
            )? > 0)
        })
    }

    fn key_claim(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<Claim> {
        let expires = now.saturating_add(retention);
        self.tx(|t| {
            // One statement decides: a fresh key is inserted, an expired one
            // replaced; a live one is left alone (and then read).
            let won = t.opt(
                "INSERT INTO turno_keys (owner, key, fingerprint, state, result, created_at, expires_at)
                 VALUES ($1, $2, $3, 0, NULL, $4, $5)
                 ON CONFLICT (owner, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
                     state = 0, result = NULL, created_at = EXCLUDED.created_at,
                     expires_at = EXCLUDED.expires_at
                 WHERE turno_keys.expires_at <= $4
                 RETURNING 1",
                &[&owner, &key, &fingerprint, &now, &expires],
            )?;
            if won.is_some() {
                return Ok(Claim::New);
            }
            let r = t.opt(
                "SELECT fingerprint, state, result FROM turno_keys WHERE owner = $1 AND key = $2",
                &[&owner, &key],
            )?;
            match r {
                Some(r) => {
                    let fp: Vec<u8> = r.get(0);
                    let result: Option<Vec<u8>> = r.get(2);
                    Ok(classify(&fp, pg_key_state(r.get(1))?, result.as_deref(), fingerprint))
                }
                // Deleted between the two statements (a concurrent forget or
                // abandon): roll back and decide again.
                None => Err(StoreError::Contention("key vanished during claim".into())),
            }
        })
    }

    fn key_complete(
        &self,
        owner: &str,
        key: &str,
        result: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<()> {
        self.tx(|t| {
            let n = t.exec(
                "UPDATE turno_keys SET state = 1, result = $3, expires_at = $4
                 WHERE owner = $1 AND key = $2 AND state = 0 AND expires_at > $5",
                &[&owner, &key, &result, &now.saturating_add(retention), &now],
            )?;
            if n == 1 {
                return Ok(());
            }
            let exists = t
                .opt(
                    "SELECT 1 FROM turno_keys WHERE owner = $1 AND key = $2 AND expires_at > $3",
                    &[&owner, &key, &now],
                )?
                .is_some();
            Err(not_in_progress(owner, key, exists))
        })
    }

    fn key_abandon(&self, owner: &str, key: &str, now: Millis) -> Result<()> {
        self.tx(|t| {
            let n = t.exec(
                "DELETE FROM turno_keys WHERE owner = $1 AND key = $2 AND state = 0
                 AND expires_at > $3",
                &[&owner, &key, &now],
            )?;
            if n == 1 {
                return Ok(());
            }
            let exists = t
                .opt(
                    "SELECT 1 FROM turno_keys WHERE owner = $1 AND key = $2 AND expires_at > $3",
                    &[&owner, &key, &now],
                )?
                .is_some();
            Err(not_in_progress(owner, key, exists))
        })
    }

    fn key_lookup(&self, owner: &str, key: &str, now: Millis) -> Result<Option<KeyRecord>> {
        self.tx(|t| {
            t.opt(
                "SELECT fingerprint, state, result, created_at, expires_at FROM turno_keys
                 WHERE owner = $1 AND key = $2 AND expires_at > $3",
                &[&owner, &key, &now],
            )?
            .map(|r| {
                Ok(KeyRecord {
                    owner: owner.into(),
                    key: key.into(),
                    fingerprint: r.get(0),
                    state: pg_key_state(r.get(1))?,
                    result: r.get(2),
                    created_at: r.get(3),
                    expires_at: r.get(4),
                })
            })
            .transpose()
        })
    }

    fn enqueue(&self, item: NewItem<'_>, now: Millis) -> Result<Enqueued> {
        self.tx(|t| {
            // A dead letter keeps its key taken.
            if let Some(r) = t.opt(
                "INSERT INTO turno_queue (queue, owner, key, payload, not_before, enqueued_at)
                 SELECT $1, $2, $3, $4, $5, $5 WHERE NOT EXISTS
                     (SELECT 1 FROM turno_dead WHERE queue = $1 AND key = $3)
                 ON CONFLICT (queue, key) DO NOTHING
                 RETURNING id",
                &[&item.queue, &item.owner, &item.key, &item.payload, &now],
            )? {
                return Ok(Enqueued::New(r.get(0)));
            }
            match t.opt(
                "SELECT id FROM turno_queue WHERE queue = $1 AND key = $2
                 UNION ALL SELECT id FROM turno_dead WHERE queue = $1 AND key = $2",
                &[&item.queue, &item.key],
            )? {
                Some(r) => Ok(Enqueued::Duplicate(r.get(0))),
                None => Err(StoreError::Contention(
                    "item vanished during enqueue".into(),
                )),
            }
        })
    }

    fn lease(
        &self,
        queue: &str,
        max: usize,
        lease: Millis,
        max_attempts: u32,
        now: Millis,
    ) -> Result<Vec<QueueItem>> {
        let token = fastrand::i64(..);
        let until = now.saturating_add(lease);
        self.tx(|t| {
            let rows = t.query(
                "UPDATE turno_queue SET attempts = attempts + 1, lease_until = $1, lease_token = $2
                 WHERE id IN (SELECT id FROM turno_queue
                     WHERE queue = $3 AND acked_at IS NULL AND not_before <= $4
                     AND (lease_until IS NULL OR lease_until <= $4)
                     ORDER BY id LIMIT $5 FOR UPDATE SKIP LOCKED)
                 RETURNING id, owner, key, payload, attempts",
                &[&until, &token, &queue, &now, &(max as i64)],
            )?;
            let (poison, mut items): (Vec<QueueItem>, Vec<QueueItem>) = rows
                .into_iter()
                .map(|r| QueueItem {
                    id: r.get(0),
                    queue: queue.into(),
                    owner: r.get(1),
                    key: r.get(2),
                    payload: r.get(3),
                    attempt: r.get::<_, i32>(4) as u32,
                    lease_token: token,
                    lease_until: until,
                })
                .partition(|i| is_poison(i.attempt, max_attempts));
            if !poison.is_empty() {
                // This lease counted one attempt that was never delivered.
                let ids: Vec<i64> = poison.iter().map(|p| p.id).collect();
                t.exec(
                    "WITH moved AS (DELETE FROM turno_queue WHERE id = ANY($1) RETURNING *)
                     INSERT INTO turno_dead
                         (id, queue, owner, key, payload, attempts, enqueued_at, dead_at)
                     SELECT id, queue, owner, key, payload, attempts - 1, enqueued_at, $2
                     FROM moved",
                    &[&ids, &now],
                )?;
            }
            items.sort_by_key(|i| i.id);
            Ok(items)
        })
    }

    fn release(&self, id: i64, lease_token: i64, not_before: Millis) -> Result<bool> {
        self.tx(|t| {
            Ok(t.exec(
                "UPDATE turno_queue SET lease_until = NULL, not_before = $3
                 WHERE id = $1 AND lease_token = $2 AND acked_at IS NULL
                 AND lease_until IS NOT NULL",
                &[&id, &lease_token, &not_before],
            )? == 1)
        })
    }

    fn queue_counts(&self, queue: &str, now: Millis) -> Result<QueueCounts> {
        self.tx(|t| {
            let r = t
                .opt(
                    "SELECT
                    COUNT(*) FILTER (WHERE acked_at IS NULL AND (lease_until IS NULL OR lease_until <= $2)),
                    COUNT(*) FILTER (WHERE acked_at IS NULL AND lease_until > $2),
                    COUNT(*) FILTER (WHERE acked_at IS NOT NULL),
                    (SELECT COUNT(*) FROM turno_dead WHERE queue = $1)
                 FROM turno_queue WHERE queue = $1",
                    &[&queue, &now],
                )?
                .ok_or_else(|| StoreError::Database("COUNT returned no row".into()))?;
            Ok(QueueCounts {
                ready: r.get::<_, i64>(0) as u64,
                leased: r.get::<_, i64>(1) as u64,
                acked: r.get::<_, i64>(2) as u64,
                dead: r.get::<_, i64>(3) as u64,
            })
        })
    }

    fn dead_letters(&self, queue: &str, limit: usize) -> Result<Vec<DeadLetter>> {
        let limit = limit.min(i64::MAX as usize) as i64;
        self.tx(|t| {
            Ok(t.query(
                "SELECT id, owner, key, payload, attempts, enqueued_at, dead_at FROM turno_dead
                 WHERE queue = $1 ORDER BY id LIMIT $2",
                &[&queue, &limit],
            )?
            .into_iter()
            .map(|r| DeadLetter {
                id: r.get(0),
                queue: queue.into(),
                owner: r.get(1),
                key: r.get(2),
                payload: r.get(3),
                attempts: r.get::<_, i32>(4) as u32,
                enqueued_at: r.get(5),
                dead_at: r.get(6),
            })
            .collect())
        })
    }

    fn requeue_dead(&self, id: i64, now: Millis) -> Result<bool> {
        self.tx(|t| {
            let n = t.exec(
                "WITH moved AS (DELETE FROM turno_dead WHERE id = $1 RETURNING *)
                 INSERT INTO turno_queue
                     (id, queue, owner, key, payload, attempts, not_before, enqueued_at)
                 SELECT id, queue, owner, key, payload, 0, $2, enqueued_at FROM moved",
                &[&id, &now],
            )?;
            Ok(n == 1)
        })
    }

    fn sweep(&self, now: Millis, dedup_window: Millis) -> Result<SweepReport> {
        let acked_before = now.saturating_sub(dedup_window);
        self.tx(|t| {
            Ok(SweepReport {
                snapshots: t.exec(
                    "DELETE FROM turno_snapshots WHERE expires_at <= $1",
                    &[&now],
                )?,
                drafts: t.exec("DELETE FROM turno_drafts WHERE expires_at <= $1", &[&now])?,
                keys: t.exec("DELETE FROM turno_keys WHERE expires_at <= $1", &[&now])?,
                queue_items: t.exec(
                    "DELETE FROM turno_queue WHERE acked_at <= $1",
                    &[&acked_before],
                )?,
            })
        })
    }

    fn forget(&self, owner: &str) -> Result<ForgetReport> {
        self.tx(|t| {
            let snapshots = t.exec("DELETE FROM turno_snapshots WHERE owner = $1", &[&owner])?;
            let drafts = t.exec("DELETE FROM turno_drafts WHERE owner = $1", &[&owner])?;
            t.between();
            let keys = t.exec("DELETE FROM turno_keys WHERE owner = $1", &[&owner])?;
            let queue_items = t.exec("DELETE FROM turno_queue WHERE owner = $1", &[&owner])?
                + t.exec("DELETE FROM turno_dead WHERE owner = $1", &[&owner])?;
            Ok(ForgetReport {
                snapshots,
                drafts,
                keys,
                queue_items,
                files_scrubbed: false,
            })
        })
    }
}
