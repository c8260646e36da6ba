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
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Row, Statement, Transaction};

pub use cluster::TempCluster;

use crate::backend::{classify, conflict, key_state, next_version, SnapshotPut};
use crate::error::{Result, StoreError};
use crate::model::{Claim, Draft, DraftSaved, ForgetReport, Millis};
use crate::sql::{self, Arg, Dialect, Row as SqlRow, SqlEngine, Tx};
use Arg::{Bytes, Int, OptInt, Text};

/// The tables (see [`crate::sql`]) in PostgreSQL's types.
fn schema() -> String {
    sql::schema(&sql::Types {
        i64: "BIGINT",
        i16: "SMALLINT",
        bytes: "BYTEA",
        serial: "BIGSERIAL PRIMARY KEY",
    })
}

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
        tx.batch_execute(&schema()).map_err(pg_err)?;
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
    fn tx<T>(&self, mut f: impl FnMut(&mut PgTx<'_, '_>) -> Result<T>) -> Result<T> {
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
    f: &mut impl FnMut(&mut PgTx<'_, '_>) -> Result<T>,
) -> Result<T> {
    let pid = conn.pid;
    let mut tx = conn.client.transaction().map_err(pg_err)?;
    let mut t = PgTx {
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
struct PgTx<'a, 'b> {
    tx: &'a mut Transaction<'b>,
    stmts: &'a mut HashMap<&'static str, Statement>,
    pid: i32,
    hook: Option<&'a FaultHook>,
}

impl PgTx<'_, '_> {
    /// The prepared statement, its `?N` placeholders (the shared
    /// statements' style) read as `$N`.
    fn stmt(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.tx.prepare(&dollar_placeholders(sql)).map_err(pg_err)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }
}

/// `?1` -> `$1` (no statement here has a `?` of its own).
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

fn pg_args<'a>(args: &'a [Arg<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter()
        .map(|a| -> &(dyn ToSql + Sync) {
            match a {
                Arg::Int(v) => v,
                Arg::OptInt(v) => v,
                Arg::Text(s) => s,
                Arg::Bytes(b) => b,
                Arg::Ints(x) => x,
            }
        })
        .collect()
}

impl Tx for PgTx<'_, '_> {
    fn exec(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64> {
        let s = self.stmt(sql)?;
        self.tx.execute(&s, &pg_args(args)).map_err(pg_err)
    }

    fn each(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        f: &mut dyn FnMut(&dyn SqlRow) -> Result<()>,
    ) -> Result<()> {
        let s = self.stmt(sql)?;
        for r in self.tx.query(&s, &pg_args(args)).map_err(pg_err)? {
            f(&r)?;
        }
        Ok(())
    }

    fn between(&mut self) {
        if let Some(h) = self.hook {
            h(self.pid);
        }
    }
}

impl SqlRow for Row {
    fn int(&self, i: usize) -> Result<i64> {
        let ty = self.columns().get(i).map(|c| c.type_().clone());
        match ty {
            Some(Type::INT2) => self.try_get::<_, i16>(i).map(i64::from),
            Some(Type::INT4) => self.try_get::<_, i32>(i).map(i64::from),
            _ => self.try_get::<_, i64>(i),
        }
        .map_err(pg_err)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        self.try_get(i).map_err(pg_err)
    }
    fn text(&self, i: usize) -> Result<String> {
        self.try_get(i).map_err(pg_err)
    }
    fn bytes(&self, i: usize) -> Result<Vec<u8>> {
        self.try_get(i).map_err(pg_err)
    }
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>> {
        self.try_get(i).map_err(pg_err)
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

fn version(r: &dyn SqlRow) -> Result<u64> {
    Ok(r.int(0)? as u64)
}

impl SqlEngine for PgBackend {
    const NAME: &'static str = "postgres";
    const DIALECT: Dialect = Dialect {
        // Locks the row (if any) so a conflict report is accurate.
        snapshot_version: "SELECT version FROM turno_snapshots WHERE owner = $1 AND key = $2
             AND (expires_at IS NULL OR expires_at > $3) FOR UPDATE",
        // Consumers on other connections skip the rows this one locked.
        lease: "UPDATE turno_queue SET attempts = attempts + 1, lease_until = $1, lease_token = $2
             WHERE id IN (SELECT id FROM turno_queue
                 WHERE queue = $3 AND acked_at IS NULL AND not_before <= $4
                 AND (lease_until IS NULL OR lease_until <= $4)
                 ORDER BY id LIMIT $5 FOR UPDATE SKIP LOCKED)
             RETURNING id, owner, key, payload, attempts",
        queue_counts: "SELECT
                COUNT(*) FILTER (WHERE acked_at IS NULL AND (lease_until IS NULL OR lease_until <= $2)),
                COUNT(*) FILTER (WHERE acked_at IS NULL AND lease_until > $2),
                COUNT(*) FILTER (WHERE acked_at IS NOT NULL),
                (SELECT COUNT(*) FROM turno_dead WHERE queue = $1)
             FROM turno_queue WHERE queue = $1",
        // A takeover's UPDATE of the row waits for this transaction, or this
        // read waits for the takeover's commit and sees its new epoch.
        shard_epoch: "SELECT epoch FROM turno_shards WHERE shard = $1 FOR SHARE",
        entity_applied: "SELECT applied FROM turno_entities WHERE kind = $1 AND key = $2
             FOR UPDATE",
    };

    fn read<T>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
        self.tx(|t| f(t))
    }

    fn write<T>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
        self.tx(|t| f(t))
    }

    /// The version check, then the write that checks it again on its own.
    fn put(t: &mut dyn Tx, put: &SnapshotPut<'_>, now: Millis) -> Result<u64> {
        let at = [Text(put.owner), Text(put.key), Int(now)];
        let actual = t.opt(Self::DIALECT.snapshot_version, &at, version)?;
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
                &[
                    Text(put.owner),
                    Text(put.key),
                    Bytes(put.data),
                    Int(now),
                    OptInt(put.expires_at),
                ],
                version,
            )?,
            Some(v) => t.opt(
                "UPDATE turno_snapshots SET version = version + 1, data = $4,
                     updated_at = $5, expires_at = $6
                 WHERE owner = $1 AND key = $2 AND version = $3
                     AND (expires_at IS NULL OR expires_at > $5)
                 RETURNING version",
                &[
                    Text(put.owner),
                    Text(put.key),
                    Int(v as i64),
                    Bytes(put.data),
                    Int(now),
                    OptInt(put.expires_at),
                ],
                version,
            )?,
        };
        row.ok_or_else(|| conflict(put.owner, put.key, put.expected, None))
    }

    fn ack(t: &mut dyn Tx, ids: &[i64], now: Millis) -> Result<u64> {
        t.exec(
            "UPDATE turno_queue SET acked_at = $2, payload = '\\x', lease_until = NULL
             WHERE id = ANY($1) AND acked_at IS NULL",
            &[Arg::Ints(ids), Int(now)],
        )
    }

    fn draft_save(t: &mut dyn Tx, d: &Draft, now: Millis) -> Result<DraftSaved> {
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
                Text(&d.owner),
                Text(&d.key),
                Int(d.version as i64),
                Bytes(&d.data),
                Int(d.saved_at),
                OptInt(d.expires_at),
                Int(now),
            ],
            |_| Ok(()),
        )?;
        if saved.is_some() {
            return Ok(DraftSaved::Saved);
        }
        let stored = t
            .opt(
                "SELECT version FROM turno_drafts WHERE owner = $1 AND key = $2",
                &[Text(&d.owner), Text(&d.key)],
                version,
            )?
            .unwrap_or(0);
        Ok(DraftSaved::Stale { stored })
    }

    fn key_claim(
        t: &mut dyn Tx,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<Claim> {
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
            &[
                Text(owner),
                Text(key),
                Bytes(fingerprint),
                Int(now),
                Int(now.saturating_add(retention)),
            ],
            |_| Ok(()),
        )?;
        if won.is_some() {
            return Ok(Claim::New);
        }
        let live = t.opt(
            "SELECT fingerprint, state, result FROM turno_keys WHERE owner = $1 AND key = $2",
            &[Text(owner), Text(key)],
            |r| {
                let (fp, state, result) = (r.bytes(0)?, key_state(r.int(1)?)?, r.opt_bytes(2)?);
                Ok(classify(&fp, state, result.as_deref(), fingerprint))
            },
        )?;
        // Deleted between the two statements (a concurrent forget or
        // abandon): roll back and decide again.
        live.ok_or_else(|| StoreError::Contention("key vanished during claim".into()))
    }

    fn bury(t: &mut dyn Tx, ids: &[i64], now: Millis) -> Result<()> {
        t.exec(
            "WITH moved AS (DELETE FROM turno_queue WHERE id = ANY($1) RETURNING *)
             INSERT INTO turno_dead
                 (id, queue, owner, key, payload, attempts, enqueued_at, dead_at)
             SELECT id, queue, owner, key, payload, attempts - 1, enqueued_at, $2
             FROM moved",
            &[Arg::Ints(ids), Int(now)],
        )?;
        Ok(())
    }

    fn requeue_dead(t: &mut dyn Tx, id: i64, now: Millis) -> Result<bool> {
        let n = t.exec(
            "WITH moved AS (DELETE FROM turno_dead WHERE id = $1 RETURNING *)
             INSERT INTO turno_queue
                 (id, queue, owner, key, payload, attempts, not_before, enqueued_at)
             SELECT id, queue, owner, key, payload, 0, $2, enqueued_at FROM moved",
            &[Int(id), Int(now)],
        )?;
        Ok(n == 1)
    }

    /// Nothing: what PostgreSQL keeps of deleted rows is its own (see the
    /// [module docs](self)); `files_scrubbed` stays false.
    fn scrub(&self, _report: &mut ForgetReport) -> Result<()> {
        Ok(())
    }
}
