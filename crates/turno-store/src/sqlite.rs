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

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::backend::{
    check_delete, classify, draft_is_newer, is_poison, key_state, next_version, not_in_progress,
    Backend, Committed, SnapshotPut,
};
use crate::error::{Result, StoreError};
use crate::model::{
    Claim, DeadLetter, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord, Millis, NewItem,
    QueueCounts, QueueItem, Snapshot, SnapshotMeta, SweepReport,
};

/// The schema version this code writes (in `PRAGMA user_version`). 2 added
/// `turno_dead`; a version-1 file is upgraded on open.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS turno_snapshots (
    owner TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
    data BLOB NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER,
    PRIMARY KEY (owner, key));
CREATE INDEX IF NOT EXISTS turno_snapshots_expiry ON turno_snapshots (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS turno_drafts (
    owner TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
    data BLOB NOT NULL, saved_at INTEGER NOT NULL, expires_at INTEGER,
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_keys (
    owner TEXT NOT NULL, key TEXT NOT NULL, fingerprint BLOB NOT NULL,
    state INTEGER NOT NULL, result BLOB, created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, owner TEXT NOT NULL,
    key TEXT NOT NULL, payload BLOB NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    not_before INTEGER NOT NULL, lease_until INTEGER, lease_token INTEGER NOT NULL DEFAULT 0,
    enqueued_at INTEGER NOT NULL, acked_at INTEGER,
    UNIQUE (queue, key));
CREATE INDEX IF NOT EXISTS turno_queue_ready ON turno_queue (queue, id) WHERE acked_at IS NULL;
CREATE INDEX IF NOT EXISTS turno_queue_owner ON turno_queue (owner);
CREATE TABLE IF NOT EXISTS turno_dead (
    id INTEGER PRIMARY KEY, queue TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL,
    payload BLOB NOT NULL, attempts INTEGER NOT NULL, enqueued_at INTEGER NOT NULL,
    dead_at INTEGER NOT NULL,
    UNIQUE (queue, key));
CREATE INDEX IF NOT EXISTS turno_dead_owner ON turno_dead (owner);
";

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
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .inspect_err(|_| {
            let _ = conn.execute_batch("ROLLBACK");
        })?;
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

    /// One write transaction that takes the write lock first.
    fn write<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }
}

/// The two tables with versioned, expiring rows.
#[derive(Clone, Copy)]
enum Versioned {
    Snapshots,
    Drafts,
}

fn live_version(
    tx: &Connection,
    table: Versioned,
    owner: &str,
    key: &str,
    now: Millis,
) -> Result<Option<u64>> {
    // Static SQL, so the statement cache prepares each once.
    let sql = match table {
        Versioned::Snapshots => {
            "SELECT version FROM turno_snapshots WHERE owner = ?1 AND key = ?2
             AND (expires_at IS NULL OR expires_at > ?3)"
        }
        Versioned::Drafts => {
            "SELECT version FROM turno_drafts WHERE owner = ?1 AND key = ?2
             AND (expires_at IS NULL OR expires_at > ?3)"
        }
    };
    let v: Option<i64> = tx
        .prepare_cached(sql)?
        .query_row(params![owner, key, now], |r| r.get(0))
        .optional()?;
    Ok(v.map(|v| v as u64))
}

impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn snapshot_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Snapshot>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT version, data, updated_at, expires_at FROM turno_snapshots
             WHERE owner = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        )?;
        Ok(stmt
            .query_row(params![owner, key, now], |r| {
                Ok(Snapshot {
                    owner: owner.into(),
                    key: key.into(),
                    version: r.get::<_, i64>(0)? as u64,
                    data: r.get(1)?,
                    updated_at: r.get(2)?,
                    expires_at: r.get(3)?,
                })
            })
            .optional()?)
    }

    fn commit(&self, puts: &[SnapshotPut<'_>], acks: &[i64], now: Millis) -> Result<Committed> {
        self.write(|tx| {
            let mut versions = Vec::with_capacity(puts.len());
            for put in puts {
                let actual = live_version(tx, Versioned::Snapshots, put.owner, put.key, now)?;
                let version = next_version(put, actual)?;
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO turno_snapshots
                     (owner, key, version, data, updated_at, expires_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    put.owner,
                    put.key,
                    version as i64,
                    put.data,
                    now,
                    put.expires_at
                ])?;
                versions.push(version);
            }
            let mut acked = 0;
            if !acks.is_empty() {
                let mut stmt = tx.prepare_cached(
                    "UPDATE turno_queue SET acked_at = ?2, payload = X'', lease_until = NULL
                     WHERE id = ?1 AND acked_at IS NULL",
                )?;
                for id in acks {
                    acked += stmt.execute(params![id, now])? as u64;
                }
            }
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
        self.write(|tx| {
            let actual = live_version(tx, Versioned::Snapshots, owner, key, now)?;
            check_delete(owner, key, expected, actual)?;
            tx.prepare_cached("DELETE FROM turno_snapshots WHERE owner = ?1 AND key = ?2")?
                .execute(params![owner, key])?;
            Ok(actual.is_some())
        })
    }

    fn snapshot_list(&self, owner: &str, now: Millis) -> Result<Vec<SnapshotMeta>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT key, version, updated_at, expires_at FROM turno_snapshots
             WHERE owner = ?1 AND (expires_at IS NULL OR expires_at > ?2) ORDER BY key",
        )?;
        let rows = stmt.query_map(params![owner, now], |r| {
            Ok(SnapshotMeta {
                key: r.get(0)?,
                version: r.get::<_, i64>(1)? as u64,
                updated_at: r.get(2)?,
                expires_at: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn draft_save(&self, d: &Draft, now: Millis) -> Result<DraftSaved> {
        self.write(|tx| {
            let stored = live_version(tx, Versioned::Drafts, &d.owner, &d.key, now)?;
            if let Err(stored) = draft_is_newer(stored, d.version) {
                return Ok(DraftSaved::Stale { stored });
            }
            tx.prepare_cached(
                "INSERT OR REPLACE INTO turno_drafts
                 (owner, key, version, data, saved_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                d.owner,
                d.key,
                d.version as i64,
                d.data,
                d.saved_at,
                d.expires_at
            ])?;
            Ok(DraftSaved::Saved)
        })
    }

    fn draft_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Draft>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT version, data, saved_at, expires_at FROM turno_drafts
             WHERE owner = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        )?;
        Ok(stmt
            .query_row(params![owner, key, now], |r| {
                Ok(Draft {
                    owner: owner.into(),
                    key: key.into(),
                    version: r.get::<_, i64>(0)? as u64,
                    data: r.get(1)?,
                    saved_at: r.get(2)?,
                    expires_at: r.get(3)?,
                })
            })
            .optional()?)
    }

    fn draft_delete(&self, owner: &str, key: &str) -> Result<bool> {
        self.write(|tx| {
            Ok(tx
                .prepare_cached("DELETE FROM turno_drafts WHERE owner = ?1 AND key = ?2")?
                .execute(params![owner, key])?
                > 0)
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
        // One IMMEDIATE transaction: the read and the insert happen under
        // the write lock, so concurrent claimers are serialized.
        self.write(|tx| {
            let row: Option<(Vec<u8>, i64, Option<Vec<u8>>)> = tx
                .prepare_cached(
                    "SELECT fingerprint, state, result FROM turno_keys
                     WHERE owner = ?1 AND key = ?2 AND expires_at > ?3",
                )?
                .query_row(params![owner, key, now], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            if let Some((fp, state, result)) = row {
                return Ok(classify(
                    &fp,
                    key_state(state)?,
                    result.as_deref(),
                    fingerprint,
                ));
            }
            tx.prepare_cached(
                "INSERT OR REPLACE INTO turno_keys
                 (owner, key, fingerprint, state, result, created_at, expires_at)
                 VALUES (?1, ?2, ?3, 0, NULL, ?4, ?5)",
            )?
            .execute(params![
                owner,
                key,
                fingerprint,
                now,
                now.saturating_add(retention)
            ])?;
            Ok(Claim::New)
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
        self.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE turno_keys SET state = 1, result = ?3, expires_at = ?4
                 WHERE owner = ?1 AND key = ?2 AND state = 0 AND expires_at > ?5",
                )?
                .execute(params![
                    owner,
                    key,
                    result,
                    now.saturating_add(retention),
                    now
                ])?;
            if n == 1 {
                return Ok(());
            }
            let completed: bool = tx
                .query_row(
                    "SELECT 1 FROM turno_keys WHERE owner = ?1 AND key = ?2 AND expires_at > ?3",
                    params![owner, key, now],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            Err(not_in_progress(owner, key, completed))
        })
    }

    fn key_abandon(&self, owner: &str, key: &str, now: Millis) -> Result<()> {
        self.write(|tx| {
            let n = tx
                .prepare_cached(
                    "DELETE FROM turno_keys WHERE owner = ?1 AND key = ?2 AND state = 0
                 AND expires_at > ?3",
                )?
                .execute(params![owner, key, now])?;
            if n == 1 {
                return Ok(());
            }
            let completed = tx
                .query_row(
                    "SELECT 1 FROM turno_keys WHERE owner = ?1 AND key = ?2 AND expires_at > ?3",
                    params![owner, key, now],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            Err(not_in_progress(owner, key, completed))
        })
    }

    fn key_lookup(&self, owner: &str, key: &str, now: Millis) -> Result<Option<KeyRecord>> {
        let conn = self.conn();
        let row = conn
            .prepare_cached(
                "SELECT fingerprint, state, result, created_at, expires_at FROM turno_keys
                 WHERE owner = ?1 AND key = ?2 AND expires_at > ?3",
            )?
            .query_row(params![owner, key, now], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, i64>(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                ))
            })
            .optional()?;
        row.map(|(fingerprint, state, result, created_at, expires_at)| {
            Ok(KeyRecord {
                owner: owner.into(),
                key: key.into(),
                fingerprint,
                state: key_state(state)?,
                result,
                created_at,
                expires_at,
            })
        })
        .transpose()
    }

    fn enqueue(&self, item: NewItem<'_>, now: Millis) -> Result<Enqueued> {
        self.write(|tx| {
            // A dead letter keeps its key taken.
            let n = tx
                .prepare_cached(
                    "INSERT INTO turno_queue (queue, owner, key, payload, not_before, enqueued_at)
                     SELECT ?1, ?2, ?3, ?4, ?5, ?5 WHERE NOT EXISTS
                         (SELECT 1 FROM turno_dead WHERE queue = ?1 AND key = ?3)
                     ON CONFLICT (queue, key) DO NOTHING",
                )?
                .execute(params![item.queue, item.owner, item.key, item.payload, now])?;
            if n == 1 {
                return Ok(Enqueued::New(tx.last_insert_rowid()));
            }
            let id: i64 = tx
                .prepare_cached(
                    "SELECT id FROM turno_queue WHERE queue = ?1 AND key = ?2
                     UNION ALL SELECT id FROM turno_dead WHERE queue = ?1 AND key = ?2",
                )?
                .query_row(params![item.queue, item.key], |r| r.get(0))?;
            Ok(Enqueued::Duplicate(id))
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
        self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE turno_queue SET attempts = attempts + 1, lease_until = ?1, lease_token = ?2
                 WHERE id IN (SELECT id FROM turno_queue
                     WHERE queue = ?3 AND acked_at IS NULL AND not_before <= ?4
                     AND (lease_until IS NULL OR lease_until <= ?4)
                     ORDER BY id LIMIT ?5)
                 RETURNING id, owner, key, payload, attempts",
            )?;
            let rows = stmt.query_map(params![until, token, queue, now, max as i64], |r| {
                Ok(QueueItem {
                    id: r.get(0)?,
                    queue: queue.into(),
                    owner: r.get(1)?,
                    key: r.get(2)?,
                    payload: r.get(3)?,
                    attempt: r.get::<_, i64>(4)? as u32,
                    lease_token: token,
                    lease_until: until,
                })
            })?;
            let leased: Vec<QueueItem> = rows.collect::<rusqlite::Result<_>>()?;
            drop(stmt);
            let (poison, mut items): (Vec<QueueItem>, Vec<QueueItem>) = leased
                .into_iter()
                .partition(|i| is_poison(i.attempt, max_attempts));
            for p in &poison {
                // This lease counted one attempt that was never delivered.
                tx.prepare_cached(
                    "INSERT INTO turno_dead
                     (id, queue, owner, key, payload, attempts, enqueued_at, dead_at)
                     SELECT id, queue, owner, key, payload, attempts - 1, enqueued_at, ?2
                     FROM turno_queue WHERE id = ?1",
                )?
                .execute(params![p.id, now])?;
                tx.prepare_cached("DELETE FROM turno_queue WHERE id = ?1")?
                    .execute([p.id])?;
            }
            items.sort_by_key(|i| i.id);
            Ok(items)
        })
    }

    fn release(&self, id: i64, lease_token: i64, not_before: Millis) -> Result<bool> {
        self.write(|tx| {
            Ok(tx
                .prepare_cached(
                    "UPDATE turno_queue SET lease_until = NULL, not_before = ?3
                     WHERE id = ?1 AND lease_token = ?2 AND acked_at IS NULL
                     AND lease_until IS NOT NULL",
                )?
                .execute(params![id, lease_token, not_before])?
                == 1)
        })
    }

    fn queue_counts(&self, queue: &str, now: Millis) -> Result<QueueCounts> {
        let conn = self.conn();
        let (ready, leased, acked, dead): (i64, i64, i64, i64) = conn.query_row(
            "SELECT
                COALESCE(SUM(acked_at IS NULL AND (lease_until IS NULL OR lease_until <= ?2)), 0),
                COALESCE(SUM(acked_at IS NULL AND lease_until > ?2), 0),
                COALESCE(SUM(acked_at IS NOT NULL), 0),
                (SELECT COUNT(*) FROM turno_dead WHERE queue = ?1)
             FROM turno_queue WHERE queue = ?1",
            params![queue, now],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        Ok(QueueCounts {
            ready: ready as u64,
            leased: leased as u64,
            acked: acked as u64,
            dead: dead as u64,
        })
    }

    fn dead_letters(&self, queue: &str, limit: usize) -> Result<Vec<DeadLetter>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, owner, key, payload, attempts, enqueued_at, dead_at FROM turno_dead
             WHERE queue = ?1 ORDER BY id LIMIT ?2",
        )?;
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = stmt.query_map(params![queue, limit], |r| {
            Ok(DeadLetter {
                id: r.get(0)?,
                queue: queue.into(),
                owner: r.get(1)?,
                key: r.get(2)?,
                payload: r.get(3)?,
                attempts: r.get::<_, i64>(4)? as u32,
                enqueued_at: r.get(5)?,
                dead_at: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn requeue_dead(&self, id: i64, now: Millis) -> Result<bool> {
        self.write(|tx| {
            let n = tx.execute(
                "INSERT INTO turno_queue
                 (id, queue, owner, key, payload, attempts, not_before, enqueued_at)
                 SELECT id, queue, owner, key, payload, 0, ?2, enqueued_at
                 FROM turno_dead WHERE id = ?1",
                params![id, now],
            )?;
            tx.execute("DELETE FROM turno_dead WHERE id = ?1", [id])?;
            Ok(n == 1)
        })
    }

    fn sweep(&self, now: Millis, dedup_window: Millis) -> Result<SweepReport> {
        self.write(|tx| {
            Ok(SweepReport {
                snapshots: tx
                    .execute("DELETE FROM turno_snapshots WHERE expires_at <= ?1", [now])?
                    as u64,
                drafts: tx.execute("DELETE FROM turno_drafts WHERE expires_at <= ?1", [now])?
                    as u64,
                keys: tx.execute("DELETE FROM turno_keys WHERE expires_at <= ?1", [now])? as u64,
                queue_items: tx.execute(
                    "DELETE FROM turno_queue WHERE acked_at <= ?1",
                    [now.saturating_sub(dedup_window)],
                )? as u64,
            })
        })
    }

    fn forget(&self, owner: &str) -> Result<ForgetReport> {
        let mut report = self.write(|tx| {
            Ok(ForgetReport {
                snapshots: tx.execute("DELETE FROM turno_snapshots WHERE owner = ?1", [owner])?
                    as u64,
                drafts: tx.execute("DELETE FROM turno_drafts WHERE owner = ?1", [owner])? as u64,
                keys: tx.execute("DELETE FROM turno_keys WHERE owner = ?1", [owner])? as u64,
                queue_items: (tx.execute("DELETE FROM turno_queue WHERE owner = ?1", [owner])?
                    + tx.execute("DELETE FROM turno_dead WHERE owner = ?1", [owner])?)
                    as u64,
                files_scrubbed: false,
            })
        })?;
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
        Ok(report)
    }
}
