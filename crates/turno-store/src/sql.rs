//! What the two SQL backends share: the tables, the statements that read
//! the same in both dialects, and every [`Backend`] method written once
//! over a small transaction interface ([`Tx`]).
//!
//! A backend ([`SqliteBackend`](crate::SqliteBackend),
//! `PgBackend`) implements [`SqlEngine`]: how it runs a transaction, the
//! statements its dialect writes differently, and the operations whose
//! concurrency control differs (SQLite takes the write lock first and then
//! reads; PostgreSQL decides in single `ON CONFLICT` statements and row
//! locks). Everything else (decoding rows, version and key decisions,
//! sweeping, forgetting) is here, so the backends cannot drift.
//!
//! Statements are written with `?N` placeholders (SQLite's); the
//! PostgreSQL backend turns them into `$N` when it prepares them.

use crate::backend::{
    check_delete, is_poison, key_state, not_in_progress, Backend, ClaimPut, Committed, SnapshotPut,
};
use crate::error::{Result, StoreError};
use crate::model::{
    Claim, DeadLetter, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord, Millis, NewItem,
    QueueCounts, QueueItem, Snapshot, SnapshotMeta, SweepReport,
};
use crate::shards::{
    applied_after, check_fence, duplicate, DueEntity, Entity, EntityCommit, EntityWrite,
    LeaseOutcome, ShardLease,
};

/// The tables, with the dialect's types substituted: `{i64}`, `{i16}`,
/// `{bytes}` and `{serial}` (an auto-numbered primary key).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS turno_snapshots (
    owner TEXT NOT NULL, key TEXT NOT NULL, version {i64} NOT NULL,
    data {bytes} NOT NULL, updated_at {i64} NOT NULL, expires_at {i64},
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_drafts (
    owner TEXT NOT NULL, key TEXT NOT NULL, version {i64} NOT NULL,
    data {bytes} NOT NULL, saved_at {i64} NOT NULL, expires_at {i64},
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_keys (
    owner TEXT NOT NULL, key TEXT NOT NULL, fingerprint {bytes} NOT NULL,
    state {i16} NOT NULL, result {bytes}, created_at {i64} NOT NULL,
    expires_at {i64} NOT NULL,
    PRIMARY KEY (owner, key));
CREATE TABLE IF NOT EXISTS turno_queue (
    id {serial}, queue TEXT NOT NULL, owner TEXT NOT NULL,
    key TEXT NOT NULL, payload {bytes} NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    not_before {i64} NOT NULL, lease_until {i64}, lease_token {i64} NOT NULL DEFAULT 0,
    enqueued_at {i64} NOT NULL, acked_at {i64},
    UNIQUE (queue, key));
CREATE INDEX IF NOT EXISTS turno_queue_ready ON turno_queue (queue, id) WHERE acked_at IS NULL;
CREATE INDEX IF NOT EXISTS turno_queue_owner ON turno_queue (owner);
CREATE TABLE IF NOT EXISTS turno_dead (
    id {i64} PRIMARY KEY, queue TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL,
    payload {bytes} NOT NULL, attempts INTEGER NOT NULL, enqueued_at {i64} NOT NULL,
    dead_at {i64} NOT NULL,
    UNIQUE (queue, key));
CREATE INDEX IF NOT EXISTS turno_dead_owner ON turno_dead (owner);
CREATE TABLE IF NOT EXISTS turno_shards (
    shard {i64} PRIMARY KEY, owner TEXT NOT NULL, epoch {i64} NOT NULL,
    lease_until {i64} NOT NULL);
CREATE TABLE IF NOT EXISTS turno_entities (
    kind TEXT NOT NULL, key TEXT NOT NULL, shard {i64} NOT NULL, epoch {i64} NOT NULL,
    applied {i64} NOT NULL, data {bytes} NOT NULL, wake_at {i64}, updated_at {i64} NOT NULL,
    PRIMARY KEY (kind, key));
CREATE INDEX IF NOT EXISTS turno_entities_wake ON turno_entities (shard, wake_at)
    WHERE wake_at IS NOT NULL;
";

/// How a dialect spells the column types of [`schema`].
pub(crate) struct Types {
    /// A 64-bit integer.
    pub i64: &'static str,
    /// A small integer (a key's state).
    pub i16: &'static str,
    /// A byte string.
    pub bytes: &'static str,
    /// An auto-numbered 64-bit primary key.
    pub serial: &'static str,
}

/// The tables' DDL in a dialect (every statement `IF NOT EXISTS`).
pub(crate) fn schema(t: &Types) -> String {
    SCHEMA
        .replace("{i64}", t.i64)
        .replace("{i16}", t.i16)
        .replace("{bytes}", t.bytes)
        .replace("{serial}", t.serial)
}

/// A statement's argument.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    Bytes(&'a [u8]),
    /// An array (PostgreSQL's `= ANY(?1)` only).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Ints(&'a [i64]),
}

use Arg::{Bytes, Int, Text};

/// A result row, read by column index.
pub(crate) trait Row {
    fn int(&self, i: usize) -> Result<i64>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>>;
    fn text(&self, i: usize) -> Result<String>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>>;
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>>;
}

/// One transaction of a SQL backend (a read-only call may run its single
/// statement outside one).
pub(crate) trait Tx {
    /// Runs a statement that returns no rows; how many rows it changed.
    fn exec(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64>;
    /// Runs a query, calling `f` on each row.
    fn each(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        f: &mut dyn FnMut(&dyn Row) -> Result<()>,
    ) -> Result<()>;
    /// Between two statements of one transaction: where fault-injection
    /// tests cut the connection (PostgreSQL's hook; nothing elsewhere).
    fn between(&mut self) {}
}

impl dyn Tx + '_ {
    /// Every row, decoded.
    pub(crate) fn all<T>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        mut f: impl FnMut(&dyn Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.each(sql, args, &mut |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row, decoded, if any.
    pub(crate) fn opt<T>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        mut f: impl FnMut(&dyn Row) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut out = None;
        self.each(sql, args, &mut |r| {
            if out.is_none() {
                out = Some(f(r)?);
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// The statements a dialect writes its own way.
pub(crate) struct Dialect {
    /// `?1` owner, `?2` key, `?3` now: the live snapshot's version (locked
    /// for the rest of the transaction where the engine locks rows).
    pub snapshot_version: &'static str,
    /// `?1` lease until, `?2` token, `?3` queue, `?4` now, `?5` max:
    /// leases the oldest deliverable items, returning `id, owner, key,
    /// payload, attempts`.
    pub lease: &'static str,
    /// `?1` queue, `?2` now: `ready, leased, acked, dead`.
    pub queue_counts: &'static str,
    /// `?1` shard: its `epoch`, the row locked against a takeover until
    /// the transaction ends where the engine locks rows (the fence of an
    /// entity write).
    pub shard_epoch: &'static str,
    /// `?1` kind, `?2` key: the entity's `applied`, its row locked where
    /// the engine locks rows.
    pub entity_applied: &'static str,
}

/// A SQL storage engine: what differs between SQLite and PostgreSQL. The
/// [`Backend`] is written once, for every engine, below.
pub(crate) trait SqlEngine: Send + Sync {
    /// See [`Backend::name`].
    const NAME: &'static str;
    /// Its own statements.
    const DIALECT: Dialect;

    /// Runs a call that only reads.
    fn read<T>(&self, f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T>;
    /// Runs a call in one write transaction (`f` may run again when the
    /// engine retries a transaction the server rolled back).
    fn write<T>(&self, f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T>;

    /// One snapshot put inside [`Backend::commit`]: the version check and
    /// the write; the new version.
    fn put(t: &mut dyn Tx, put: &SnapshotPut<'_>, now: Millis) -> Result<u64>;
    /// Acknowledges queue items (skipping those already acknowledged); how
    /// many were newly acknowledged.
    fn ack(t: &mut dyn Tx, ids: &[i64], now: Millis) -> Result<u64>;
    /// See [`Backend::draft_save`].
    fn draft_save(t: &mut dyn Tx, d: &Draft, now: Millis) -> Result<DraftSaved>;
    /// See [`Backend::key_claim`].
    fn key_claim(
        t: &mut dyn Tx,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<Claim>;
    /// Moves leased items past the attempt cap to the dead letters (their
    /// lease counted one attempt that was never delivered).
    fn bury(t: &mut dyn Tx, ids: &[i64], now: Millis) -> Result<()>;
    /// See [`Backend::requeue_dead`].
    fn requeue_dead(t: &mut dyn Tx, id: i64, now: Millis) -> Result<bool>;
    /// After [`Backend::forget`] committed: scrubs what the files still hold
    /// of the deleted rows where the engine can, and says so in `report`.
    fn scrub(&self, report: &mut ForgetReport) -> Result<()>;
}

const SNAPSHOT_GET: &str = "SELECT version, data, updated_at, expires_at FROM turno_snapshots
     WHERE owner = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)";
const SNAPSHOT_DELETE: &str = "DELETE FROM turno_snapshots WHERE owner = ?1 AND key = ?2";
const SNAPSHOT_LIST: &str = "SELECT key, version, updated_at, expires_at FROM turno_snapshots
     WHERE owner = ?1 AND (expires_at IS NULL OR expires_at > ?2) ORDER BY key";
const DRAFT_GET: &str = "SELECT version, data, saved_at, expires_at FROM turno_drafts
     WHERE owner = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)";
const DRAFT_DELETE: &str = "DELETE FROM turno_drafts WHERE owner = ?1 AND key = ?2";
const KEY_COMPLETE: &str = "UPDATE turno_keys SET state = 1, result = ?3, expires_at = ?4
     WHERE owner = ?1 AND key = ?2 AND state = 0 AND expires_at > ?5";
const KEY_ABANDON: &str = "DELETE FROM turno_keys WHERE owner = ?1 AND key = ?2 AND state = 0
     AND expires_at > ?3";
const KEY_LIVE: &str = "SELECT 1 FROM turno_keys WHERE owner = ?1 AND key = ?2 AND expires_at > ?3";
const KEY_LOOKUP: &str = "SELECT fingerprint, state, result, created_at, expires_at FROM turno_keys
     WHERE owner = ?1 AND key = ?2 AND expires_at > ?3";
// A dead letter keeps its key taken.
const ENQUEUE: &str =
    "INSERT INTO turno_queue (queue, owner, key, payload, not_before, enqueued_at)
     SELECT ?1, ?2, ?3, ?4, ?5, ?5 WHERE NOT EXISTS
         (SELECT 1 FROM turno_dead WHERE queue = ?1 AND key = ?3)
     ON CONFLICT (queue, key) DO NOTHING
     RETURNING id";
const ENQUEUED_ID: &str = "SELECT id FROM turno_queue WHERE queue = ?1 AND key = ?2
     UNION ALL SELECT id FROM turno_dead WHERE queue = ?1 AND key = ?2";
const RELEASE: &str = "UPDATE turno_queue SET lease_until = NULL, not_before = ?3
     WHERE id = ?1 AND lease_token = ?2 AND acked_at IS NULL
     AND lease_until IS NOT NULL";
const DEAD_LETTERS: &str = "SELECT id, owner, key, payload, attempts, enqueued_at, dead_at
     FROM turno_dead WHERE queue = ?1 ORDER BY id LIMIT ?2";

const SHARD_ENSURE: &str = "INSERT INTO turno_shards (shard, owner, epoch, lease_until)
     VALUES (?1, '', 0, 0) ON CONFLICT (shard) DO NOTHING";
const SHARD_TAKE: &str = "UPDATE turno_shards SET owner = ?2, epoch = epoch + 1, lease_until = ?3
     WHERE shard = ?1 AND lease_until <= ?4 RETURNING epoch";
const SHARD_GET: &str = "SELECT owner, epoch, lease_until FROM turno_shards WHERE shard = ?1";
const SHARD_RENEW: &str = "UPDATE turno_shards SET lease_until = ?4
     WHERE shard = ?1 AND owner = ?2 AND epoch = ?3";
const SHARD_RELEASE: &str = "UPDATE turno_shards SET lease_until = 0
     WHERE shard = ?1 AND owner = ?2 AND epoch = ?3";
const ENTITY_PUT: &str = "INSERT INTO turno_entities
     (kind, key, shard, epoch, applied, data, wake_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
     ON CONFLICT (kind, key) DO UPDATE SET shard = excluded.shard, epoch = excluded.epoch,
         applied = excluded.applied, data = excluded.data, wake_at = excluded.wake_at,
         updated_at = excluded.updated_at";
const ENTITY_GET: &str = "SELECT shard, epoch, applied, data, wake_at, updated_at
     FROM turno_entities WHERE kind = ?1 AND key = ?2";
const ENTITIES_DUE: &str = "SELECT kind, key, wake_at FROM turno_entities
     WHERE shard = ?1 AND wake_at IS NOT NULL AND wake_at <= ?2
     ORDER BY wake_at, kind, key LIMIT ?3";

fn shard_lease(shard: u32, r: &dyn Row) -> Result<ShardLease> {
    Ok(ShardLease {
        shard,
        owner: r.text(0)?,
        epoch: r.int(1)? as u64,
        until: r.int(2)?,
    })
}

fn version(r: &dyn Row, i: usize) -> Result<u64> {
    Ok(r.int(i)? as u64)
}

/// `n == 1`: the key changed; otherwise why not (absent, or completed).
fn key_settled(t: &mut dyn Tx, n: u64, owner: &str, key: &str, now: Millis) -> Result<()> {
    if n == 1 {
        return Ok(());
    }
    let live = t
        .opt(KEY_LIVE, &[Text(owner), Text(key), Int(now)], |_| Ok(()))?
        .is_some();
    Err(not_in_progress(owner, key, live))
}

impl<E: SqlEngine> Backend for E {
    fn name(&self) -> &'static str {
        E::NAME
    }

    fn snapshot_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Snapshot>> {
        self.read(|t| {
            t.opt(SNAPSHOT_GET, &[Text(owner), Text(key), Int(now)], |r| {
                Ok(Snapshot {
                    owner: owner.into(),
                    key: key.into(),
                    version: version(r, 0)?,
                    data: r.bytes(1)?,
                    updated_at: r.int(2)?,
                    expires_at: r.opt_int(3)?,
                })
            })
        })
    }

    fn commit(&self, puts: &[SnapshotPut<'_>], acks: &[i64], now: Millis) -> Result<Committed> {
        self.write(|t| {
            let mut versions = Vec::with_capacity(puts.len());
            for put in puts {
                versions.push(E::put(t, put, now)?);
            }
            let acked = if acks.is_empty() {
                0
            } else {
                t.between();
                E::ack(t, acks, now)?
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
        self.write(|t| {
            let actual = t.opt(
                E::DIALECT.snapshot_version,
                &[Text(owner), Text(key), Int(now)],
                |r| version(r, 0),
            )?;
            check_delete(owner, key, expected, actual)?;
            t.exec(SNAPSHOT_DELETE, &[Text(owner), Text(key)])?;
            Ok(actual.is_some())
        })
    }

    fn snapshot_list(&self, owner: &str, now: Millis) -> Result<Vec<SnapshotMeta>> {
        self.read(|t| {
            t.all(SNAPSHOT_LIST, &[Text(owner), Int(now)], |r| {
                Ok(SnapshotMeta {
                    key: r.text(0)?,
                    version: version(r, 1)?,
                    updated_at: r.int(2)?,
                    expires_at: r.opt_int(3)?,
                })
            })
        })
    }

    fn draft_save(&self, d: &Draft, now: Millis) -> Result<DraftSaved> {
        self.write(|t| E::draft_save(t, d, now))
    }

    fn draft_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Draft>> {
        self.read(|t| {
            t.opt(DRAFT_GET, &[Text(owner), Text(key), Int(now)], |r| {
                Ok(Draft {
                    owner: owner.into(),
                    key: key.into(),
                    version: version(r, 0)?,
                    data: r.bytes(1)?,
                    saved_at: r.int(2)?,
                    expires_at: r.opt_int(3)?,
                })
            })
        })
    }

    fn draft_delete(&self, owner: &str, key: &str) -> Result<bool> {
        self.write(|t| Ok(t.exec(DRAFT_DELETE, &[Text(owner), Text(key)])? > 0))
    }

    fn key_claim(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<Claim> {
        self.write(|t| E::key_claim(t, owner, key, fingerprint, retention, now))
    }

    fn key_claim_complete_batch(
        &self,
        ops: &[ClaimPut<'_>],
        retention: Millis,
        now: Millis,
    ) -> Result<Vec<Claim>> {
        self.write(|t| {
            let mut claims = Vec::with_capacity(ops.len());
            for op in ops {
                t.between();
                claims.push(claim_complete::<E>(t, op, retention, now)?);
            }
            Ok(claims)
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
        self.write(|t| {
            let args = [
                Text(owner),
                Text(key),
                Bytes(result),
                Int(now.saturating_add(retention)),
                Int(now),
            ];
            let n = t.exec(KEY_COMPLETE, &args)?;
            key_settled(t, n, owner, key, now)
        })
    }

    fn key_abandon(&self, owner: &str, key: &str, now: Millis) -> Result<()> {
        self.write(|t| {
            let n = t.exec(KEY_ABANDON, &[Text(owner), Text(key), Int(now)])?;
            key_settled(t, n, owner, key, now)
        })
    }

    fn key_lookup(&self, owner: &str, key: &str, now: Millis) -> Result<Option<KeyRecord>> {
        self.read(|t| {
            t.opt(KEY_LOOKUP, &[Text(owner), Text(key), Int(now)], |r| {
                Ok(KeyRecord {
                    owner: owner.into(),
                    key: key.into(),
                    fingerprint: r.bytes(0)?,
                    state: key_state(r.int(1)?)?,
                    result: r.opt_bytes(2)?,
                    created_at: r.int(3)?,
                    expires_at: r.int(4)?,
                })
            })
        })
    }

    fn enqueue(&self, item: NewItem<'_>, now: Millis) -> Result<Enqueued> {
        self.write(|t| {
            let args = [
                Text(item.queue),
                Text(item.owner),
                Text(item.key),
                Bytes(item.payload),
                Int(now),
            ];
            if let Some(id) = t.opt(ENQUEUE, &args, |r| r.int(0))? {
                return Ok(Enqueued::New(id));
            }
            match t.opt(ENQUEUED_ID, &[Text(item.queue), Text(item.key)], |r| {
                r.int(0)
            })? {
                Some(id) => Ok(Enqueued::Duplicate(id)),
                // Removed between the two statements (a concurrent forget
                // or sweep, where the engine allows one): decide again.
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
        self.write(|t| {
            let args = [
                Int(until),
                Int(token),
                Text(queue),
                Int(now),
                Int(max as i64),
            ];
            let leased = t.all(E::DIALECT.lease, &args, |r| {
                Ok(QueueItem {
                    id: r.int(0)?,
                    queue: queue.into(),
                    owner: r.text(1)?,
                    key: r.text(2)?,
                    payload: r.bytes(3)?,
                    attempt: r.int(4)? as u32,
                    lease_token: token,
                    lease_until: until,
                })
            })?;
            let (poison, mut items): (Vec<QueueItem>, Vec<QueueItem>) = leased
                .into_iter()
                .partition(|i| is_poison(i.attempt, max_attempts));
            if !poison.is_empty() {
                let ids: Vec<i64> = poison.iter().map(|p| p.id).collect();
                E::bury(t, &ids, now)?;
            }
            items.sort_by_key(|i| i.id);
            Ok(items)
        })
    }

    fn release(&self, id: i64, lease_token: i64, not_before: Millis) -> Result<bool> {
        self.write(|t| Ok(t.exec(RELEASE, &[Int(id), Int(lease_token), Int(not_before)])? == 1))
    }

    fn queue_counts(&self, queue: &str, now: Millis) -> Result<QueueCounts> {
        self.read(|t| {
            t.opt(E::DIALECT.queue_counts, &[Text(queue), Int(now)], |r| {
                Ok(QueueCounts {
                    ready: r.int(0)? as u64,
                    leased: r.int(1)? as u64,
                    acked: r.int(2)? as u64,
                    dead: r.int(3)? as u64,
                })
            })?
            .ok_or_else(|| StoreError::Database("COUNT returned no row".into()))
        })
    }

    fn dead_letters(&self, queue: &str, limit: usize) -> Result<Vec<DeadLetter>> {
        let limit = limit.min(i64::MAX as usize) as i64;
        self.read(|t| {
            t.all(DEAD_LETTERS, &[Text(queue), Int(limit)], |r| {
                Ok(DeadLetter {
                    id: r.int(0)?,
                    queue: queue.into(),
                    owner: r.text(1)?,
                    key: r.text(2)?,
                    payload: r.bytes(3)?,
                    attempts: r.int(4)? as u32,
                    enqueued_at: r.int(5)?,
                    dead_at: r.int(6)?,
                })
            })
        })
    }

    fn requeue_dead(&self, id: i64, now: Millis) -> Result<bool> {
        self.write(|t| E::requeue_dead(t, id, now))
    }

    fn sweep(&self, now: Millis, dedup_window: Millis) -> Result<SweepReport> {
        let acked_before = now.saturating_sub(dedup_window);
        self.write(|t| {
            let del = |t: &mut dyn Tx, sql| t.exec(sql, &[Int(now)]);
            Ok(SweepReport {
                snapshots: del(t, "DELETE FROM turno_snapshots WHERE expires_at <= ?1")?,
                drafts: del(t, "DELETE FROM turno_drafts WHERE expires_at <= ?1")?,
                keys: del(t, "DELETE FROM turno_keys WHERE expires_at <= ?1")?,
                queue_items: t.exec(
                    "DELETE FROM turno_queue WHERE acked_at <= ?1",
                    &[Int(acked_before)],
                )?,
            })
        })
    }

    fn shard_acquire(
        &self,
        shard: u32,
        owner: &str,
        until: Millis,
        now: Millis,
    ) -> Result<LeaseOutcome> {
        let id = Int(i64::from(shard));
        self.write(|t| {
            t.exec(SHARD_ENSURE, &[id])?;
            let taken = t.opt(SHARD_TAKE, &[id, Text(owner), Int(until), Int(now)], |r| {
                r.int(0)
            })?;
            match taken {
                Some(epoch) => Ok(LeaseOutcome::Acquired(ShardLease {
                    shard,
                    owner: owner.into(),
                    epoch: epoch as u64,
                    until,
                })),
                None => {
                    let held = t.opt(SHARD_GET, &[id], |r| shard_lease(shard, r))?;
                    held.map(LeaseOutcome::Held).ok_or_else(|| {
                        StoreError::Corrupt(format!("shard {shard}: its lease row vanished"))
                    })
                }
            }
        })
    }

    fn shard_renew(&self, lease: &ShardLease, until: Millis) -> Result<Option<ShardLease>> {
        let args = [
            Int(i64::from(lease.shard)),
            Text(&lease.owner),
            Int(lease.epoch as i64),
            Int(until),
        ];
        let renewed = self.write(|t| t.exec(SHARD_RENEW, &args))?;
        Ok((renewed == 1).then(|| ShardLease {
            until,
            ..lease.clone()
        }))
    }

    fn shard_release(&self, lease: &ShardLease) -> Result<bool> {
        let args = [
            Int(i64::from(lease.shard)),
            Text(&lease.owner),
            Int(lease.epoch as i64),
        ];
        Ok(self.write(|t| t.exec(SHARD_RELEASE, &args))? == 1)
    }

    fn shard_get(&self, shard: u32) -> Result<Option<ShardLease>> {
        self.read(|t| {
            t.opt(SHARD_GET, &[Int(i64::from(shard))], |r| {
                shard_lease(shard, r)
            })
        })
    }

    fn entity_commit(&self, write: &EntityWrite<'_>, now: Millis) -> Result<EntityCommit> {
        self.write(|t| {
            let current = t.opt(
                E::DIALECT.shard_epoch,
                &[Int(i64::from(write.shard))],
                |r| Ok(r.int(0)? as u64),
            )?;
            check_fence(write, current)?;
            t.between();
            let applied = t.opt(
                E::DIALECT.entity_applied,
                &[Text(write.kind), Text(write.key)],
                |r| Ok(r.int(0)? as u64),
            )?;
            if let Some(dup) = duplicate(write, applied) {
                return Ok(dup);
            }
            t.exec(
                ENTITY_PUT,
                &[
                    Text(write.kind),
                    Text(write.key),
                    Int(i64::from(write.shard)),
                    Int(write.epoch as i64),
                    Int(applied_after(write, applied) as i64),
                    Bytes(write.data),
                    Arg::OptInt(write.wake_at),
                    Int(now),
                ],
            )?;
            Ok(EntityCommit::Applied)
        })
    }

    fn entity_get(&self, kind: &str, key: &str) -> Result<Option<Entity>> {
        self.read(|t| {
            t.opt(ENTITY_GET, &[Text(kind), Text(key)], |r| {
                Ok(Entity {
                    kind: kind.into(),
                    key: key.into(),
                    shard: r.int(0)? as u32,
                    epoch: r.int(1)? as u64,
                    applied: r.int(2)? as u64,
                    data: r.bytes(3)?,
                    wake_at: r.opt_int(4)?,
                    updated_at: r.int(5)?,
                })
            })
        })
    }

    fn entities_due(&self, shard: u32, now: Millis, limit: usize) -> Result<Vec<DueEntity>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|t| {
            t.all(
                ENTITIES_DUE,
                &[Int(i64::from(shard)), Int(now), Int(limit)],
                |r| {
                    Ok(DueEntity {
                        kind: r.text(0)?,
                        key: r.text(1)?,
                        wake_at: r.int(2)?,
                    })
                },
            )
        })
    }

    fn forget(&self, owner: &str) -> Result<ForgetReport> {
        let mut report = self.write(|t| {
            let del = |t: &mut dyn Tx, sql| t.exec(sql, &[Text(owner)]);
            let snapshots = del(t, "DELETE FROM turno_snapshots WHERE owner = ?1")?;
            let drafts = del(t, "DELETE FROM turno_drafts WHERE owner = ?1")?;
            t.between();
            let keys = del(t, "DELETE FROM turno_keys WHERE owner = ?1")?;
            let queue_items = del(t, "DELETE FROM turno_queue WHERE owner = ?1")?
                + del(t, "DELETE FROM turno_dead WHERE owner = ?1")?;
            Ok(ForgetReport {
                snapshots,
                drafts,
                keys,
                queue_items,
                files_scrubbed: false,
            })
        })?;
        self.scrub(&mut report)?;
        Ok(report)
    }
}

/// One operation of [`Backend::key_claim_complete_batch`], inside its
/// transaction.
fn claim_complete<E: SqlEngine>(
    t: &mut dyn Tx,
    op: &ClaimPut<'_>,
    retention: Millis,
    now: Millis,
) -> Result<Claim> {
    match E::key_claim(t, op.owner, op.key, op.fingerprint, retention, now)? {
        Claim::New => {}
        other => return Ok(other),
    }
    for put in op.puts {
        t.between();
        E::put(t, put, now)?;
    }
    let args = [
        Text(op.owner),
        Text(op.key),
        Bytes(op.result),
        Int(now.saturating_add(retention)),
        Int(now),
    ];
    let n = t.exec(KEY_COMPLETE, &args)?;
    key_settled(t, n, op.owner, op.key, now)?;
    Ok(Claim::New)
}
