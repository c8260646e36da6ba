//! The embedded default: one SQLite file in WAL mode (rusqlite, SQLite
//! compiled in), no server.
//!
//! - **Atomicity.** Every call is one transaction. Calls that read before
//!   they write (`snapshot_put`, `key_claim`, `lease`...) begin with
//!   `BEGIN IMMEDIATE`, which takes the write lock up front, so two
//!   connections (or processes) cannot both read "absent" and both insert.
//! - **Durability.** `synchronous = FULL` by default: a call that returned
//!   survives a power cut, not only a crash of the process.
//!   [`Durability::Normal`] trades the last few commits on power loss for
//!   fewer fsyncs (a crash of the process still loses nothing).
//! - **Forgetting.** `secure_delete = ON` makes SQLite overwrite deleted
//!   rows with zeros; `forget` then checkpoints the write-ahead log and
//!   truncates it, so the old page images that still held the owner's
//!   bytes leave the `-wal` file too.
//! - **Faults.** A disk (or `max_page_count`) full is
//!   [`StoreError::Full`], a lock held past the busy
//!   timeout is [`StoreError::Busy`]; both roll the
//!   transaction back whole.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql, TransactionBehavior};

use crate::backend::{classify, draft_is_newer, key_state, next_version, SnapshotPut};
use crate::error::{Result, StoreError};
use crate::model::{Claim, Draft, DraftSaved, ForgetReport, Millis};
use crate::sql::{self, Arg, Dialect, Row, SqlEngine, Tx};
use Arg::{Bytes, Int, OptInt, Text};

/// The schema version this code writes (in `PRAGMA user_version`). 2 added
/// `turno_dead`, 3 `turno_shards` and `turno_entities`; an older file is
/// upgraded on open.
const SCHEMA_VERSION: i64 = 3;

/// The tables (see [`crate::sql`]), and SQLite's index on expiry.
fn schema() -> String {
    let mut ddl = sql::schema(&sql::Types {
        i64: "INTEGER",
        i16: "INTEGER",
        bytes: "BLOB",
        serial: "INTEGER PRIMARY KEY AUTOINCREMENT",
    });
    ddl.push_str(
        "CREATE INDEX IF NOT EXISTS turno_snapshots_expiry ON turno_snapshots (expires_at)
            WHERE expires_at IS NOT NULL;\n",
    );
    ddl
}

/// How hard a commit waits for the disk. See the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous = FULL`: every commit is on disk when the call returns.
    #[default]
    Full,
    /// `synchronous = NORMAL`: in WAL mode, commits survive a crash of the
    /// process but the last ones may be lost on power failure.
    Normal,
}

/// How to open a SQLite store.
#[derive(Clone, Debug)]
pub struct SqliteConfig {
    path: PathBuf,
    busy_timeout: Duration,
    durability: Durability,
    max_pages: Option<u64>,
}

impl SqliteConfig {
    /// A store in the file at `path` (created with its directory if absent).
    pub fn new(path: impl AsRef<Path>) -> Self {
        SqliteConfig {
            path: path.as_ref().to_owned(),
            busy_timeout: Duration::from_secs(5),
            durability: Durability::Full,
            max_pages: None,
        }
    }

    /// How long a call waits for a lock held by another connection before
    /// failing with [`StoreError::Busy`] (5 s by
    /// default). SQLite retries the lock itself during that time.
    pub fn busy_timeout(mut self, t: Duration) -> Self {
        self.busy_timeout = t;
        self
    }

    /// See [`Durability`].
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// Caps the database at this many pages (`PRAGMA max_page_count`; pages
    /// are 4 KiB): past it, writes fail with
    /// [`StoreError::Full`].
    pub fn max_pages(mut self, pages: u64) -> Self {
        self.max_pages = Some(pages);
        self
    }

    /// Opens (and if needed creates) the store.
    pub fn open(self) -> Result<SqliteBackend> {
        SqliteBackend::open_with(self)
    }
}

/// A store in one SQLite file. See the [module docs](self). One connection,
/// behind a mutex: SQLite has one writer at a time anyway. Open the same
/// file from several `SqliteBackend`s (or processes) to share it.
pub struct SqliteBackend {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl SqliteBackend {
    /// Opens the store at `path` with the default configuration.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        SqliteConfig::new(path).open()
    }

    fn open_with(cfg: SqliteConfig) -> Result<Self> {
        if let Some(dir) = cfg.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let conn = Connection::open(&cfg.path)?;
        conn.busy_timeout(cfg.busy_timeout)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Database(format!(
                "{}: could not switch to WAL mode (got {mode})",
                cfg.path.display()
            )));
        }
        let sync = match cfg.durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        };
        conn.execute_batch(&format!(
            "PRAGMA synchronous = {sync}; PRAGMA secure_delete = ON;"
        ))?;
        if let Some(pages) = cfg.max_pages {
            conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))?;
        }
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::Corrupt(format!(
                "{}: schema version {version} is newer than this turno-store ({SCHEMA_VERSION})",
                cfg.path.display()
            )));
        }
        // Only an older file is written to on open: a current one may be on
        // a full disk (or read by a tool) and must still open.
        if version < SCHEMA_VERSION {
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;",
                schema()
            ))
            .inspect_err(|_| {
                let _ = conn.execute_batch("ROLLBACK");
            })?;
        }
        Ok(SqliteBackend {
            conn: Mutex::new(conn),
            path: cfg.path,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `PRAGMA integrity_check`; `Ok(())` when SQLite finds nothing
    /// wrong, else [`StoreError::Corrupt`] with its report.
    pub fn integrity_check(&self) -> Result<()> {
        let conn = self.conn();
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        let rows: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if rows == ["ok"] {
            Ok(())
        } else {
            Err(StoreError::Corrupt(rows.join("; ")))
        }
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // rusqlite rolls back an open transaction when it is dropped during
        // a panic, so a poisoned connection is still consistent.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// SQLite's side of [`Tx`]: a connection, inside a transaction for writes.
struct SqliteTx<'a>(&'a Connection);

impl Tx for SqliteTx<'_> {
    fn exec(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64> {
        Ok(self
            .0
            .prepare_cached(sql)?
            .execute(params_from_iter(args))? as u64)
    }

    fn each(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        f: &mut dyn FnMut(&dyn Row) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.0.prepare_cached(sql)?;
        let mut rows = stmt.query(params_from_iter(args))?;
        while let Some(r) = rows.next()? {
            f(r)?;
        }
        Ok(())
    }
}

impl Row for rusqlite::Row<'_> {
    fn int(&self, i: usize) -> Result<i64> {
        Ok(self.get(i)?)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        Ok(self.get(i)?)
    }
    fn text(&self, i: usize) -> Result<String> {
        Ok(self.get(i)?)
    }
    fn bytes(&self, i: usize) -> Result<Vec<u8>> {
        Ok(self.get(i)?)
    }
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>> {
        Ok(self.get(i)?)
    }
}

impl ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Arg::Int(v) | Arg::OptInt(Some(v)) => ToSqlOutput::Owned(Value::Integer(v)),
            Arg::OptInt(None) => ToSqlOutput::Owned(Value::Null),
            Arg::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Arg::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            Arg::Ints(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "SQLite has no array parameters".into(),
                ))
            }
        })
    }
}

fn version(r: &dyn Row) -> Result<u64> {
    Ok(r.int(0)? as u64)
}

impl SqlEngine for SqliteBackend {
    const NAME: &'static str = "sqlite";
    const DIALECT: Dialect = Dialect {
        snapshot_version: "SELECT version FROM turno_snapshots WHERE owner = ?1 AND key = ?2
             AND (expires_at IS NULL OR expires_at > ?3)",
        lease: "UPDATE turno_queue SET attempts = attempts + 1, lease_until = ?1, lease_token = ?2
             WHERE id IN (SELECT id FROM turno_queue
                 WHERE queue = ?3 AND acked_at IS NULL AND not_before <= ?4
                 AND (lease_until IS NULL OR lease_until <= ?4)
                 ORDER BY id LIMIT ?5)
             RETURNING id, owner, key, payload, attempts",
        queue_counts: "SELECT
                COALESCE(SUM(acked_at IS NULL AND (lease_until IS NULL OR lease_until <= ?2)), 0),
                COALESCE(SUM(acked_at IS NULL AND lease_until > ?2), 0),
                COALESCE(SUM(acked_at IS NOT NULL), 0),
                (SELECT COUNT(*) FROM turno_dead WHERE queue = ?1)
             FROM turno_queue WHERE queue = ?1",
        // `BEGIN IMMEDIATE` holds the write lock: no takeover can interleave.
        shard_epoch: "SELECT epoch FROM turno_shards WHERE shard = ?1",
        entity_applied: "SELECT applied FROM turno_entities WHERE kind = ?1 AND key = ?2",
    };

    fn read<T>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
        // One statement each: SQLite's autocommit makes it a transaction.
        f(&mut SqliteTx(&self.conn()))
    }

    /// One write transaction that takes the write lock first
    /// (`BEGIN IMMEDIATE`), so a read-then-write cannot interleave with
    /// another connection's.
    fn write<T>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&mut SqliteTx(&tx))?;
        tx.commit()?;
        Ok(out)
    }

    fn put(t: &mut dyn Tx, put: &SnapshotPut<'_>, now: Millis) -> Result<u64> {
        let at = [Text(put.owner), Text(put.key), Int(now)];
        let actual = t.opt(Self::DIALECT.snapshot_version, &at, version)?;
        let version = next_version(put, actual)?;
        t.exec(
            "INSERT OR REPLACE INTO turno_snapshots
             (owner, key, version, data, updated_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Text(put.owner),
                Text(put.key),
                Int(version as i64),
                Bytes(put.data),
                Int(now),
                OptInt(put.expires_at),
            ],
        )?;
        Ok(version)
    }

    fn ack(t: &mut dyn Tx, ids: &[i64], now: Millis) -> Result<u64> {
        let mut acked = 0;
        for &id in ids {
            acked += t.exec(
                "UPDATE turno_queue SET acked_at = ?2, payload = X'', lease_until = NULL
                 WHERE id = ?1 AND acked_at IS NULL",
                &[Int(id), Int(now)],
            )?;
        }
        Ok(acked)
    }

    fn draft_save(t: &mut dyn Tx, d: &Draft, now: Millis) -> Result<DraftSaved> {
        let stored = t.opt(
            "SELECT version FROM turno_drafts WHERE owner = ?1 AND key = ?2
             AND (expires_at IS NULL OR expires_at > ?3)",
            &[Text(&d.owner), Text(&d.key), Int(now)],
            version,
        )?;
        if let Err(stored) = draft_is_newer(stored, d.version) {
            return Ok(DraftSaved::Stale { stored });
        }
        t.exec(
            "INSERT OR REPLACE INTO turno_drafts
             (owner, key, version, data, saved_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Text(&d.owner),
                Text(&d.key),
                Int(d.version as i64),
                Bytes(&d.data),
                Int(d.saved_at),
                OptInt(d.expires_at),
            ],
        )?;
        Ok(DraftSaved::Saved)
    }

    fn key_claim(
        t: &mut dyn Tx,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<Claim> {
        // Under the write lock (`write`): concurrent claimers are
        // serialized, so the read and the insert cannot interleave.
        let live = t.opt(
            "SELECT fingerprint, state, result FROM turno_keys
             WHERE owner = ?1 AND key = ?2 AND expires_at > ?3",
            &[Text(owner), Text(key), Int(now)],
            |r| {
                let (fp, state, result) = (r.bytes(0)?, key_state(r.int(1)?)?, r.opt_bytes(2)?);
                Ok(classify(&fp, state, result.as_deref(), fingerprint))
            },
        )?;
        if let Some(claim) = live {
            return Ok(claim);
        }
        t.exec(
            "INSERT OR REPLACE INTO turno_keys
             (owner, key, fingerprint, state, result, created_at, expires_at)
             VALUES (?1, ?2, ?3, 0, NULL, ?4, ?5)",
            &[
                Text(owner),
                Text(key),
                Bytes(fingerprint),
                Int(now),
                Int(now.saturating_add(retention)),
            ],
        )?;
        Ok(Claim::New)
    }

    fn bury(t: &mut dyn Tx, ids: &[i64], now: Millis) -> Result<()> {
        for &id in ids {
            t.exec(
                "INSERT INTO turno_dead
                 (id, queue, owner, key, payload, attempts, enqueued_at, dead_at)
                 SELECT id, queue, owner, key, payload, attempts - 1, enqueued_at, ?2
                 FROM turno_queue WHERE id = ?1",
                &[Int(id), Int(now)],
            )?;
            t.exec("DELETE FROM turno_queue WHERE id = ?1", &[Int(id)])?;
        }
        Ok(())
    }

    fn requeue_dead(t: &mut dyn Tx, id: i64, now: Millis) -> Result<bool> {
        let n = t.exec(
            "INSERT INTO turno_queue
             (id, queue, owner, key, payload, attempts, not_before, enqueued_at)
             SELECT id, queue, owner, key, payload, 0, ?2, enqueued_at
             FROM turno_dead WHERE id = ?1",
            &[Int(id), Int(now)],
        )?;
        t.exec("DELETE FROM turno_dead WHERE id = ?1", &[Int(id)])?;
        Ok(n == 1)
    }

    fn scrub(&self, report: &mut ForgetReport) -> Result<()> {
        // secure_delete zeroed the rows in the new page images; the old
        // images are still in the WAL until a checkpoint copies the new ones
        // into the main file and the WAL is truncated. A reader on another
        // connection can hold the checkpoint back: retry for a while.
        let conn = self.conn();
        for attempt in 0..3 {
            let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
            if busy == 0 {
                report.files_scrubbed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(2 * (attempt + 1)));
        }
        Ok(())
    }
}
