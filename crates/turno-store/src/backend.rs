//! The one interface every backend implements. [`Store`](crate::Store)
//! validates arguments, reads the clock and calls it; the backends only
//! translate each call into one transaction of their database.
//!
//! Every method is **one atomic transaction**: it takes effect whole or not
//! at all. That is the contract the conformance tests
//! (`tests/conformance.rs`) check on every backend.

use crate::error::{Result, StoreError};
use crate::model::{
    Claim, DeadLetter, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord, KeyState, Millis,
    NewItem, QueueCounts, QueueItem, Snapshot, SnapshotMeta, SweepReport,
};
use crate::shards::{DueEntity, Entity, EntityCommit, EntityWrite, LeaseOutcome, ShardLease};

/// A snapshot write, as the store hands it to a backend.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotPut<'a> {
    /// See [`Snapshot::owner`].
    pub owner: &'a str,
    /// See [`Snapshot::key`].
    pub key: &'a str,
    /// The version the caller read (`None`: it must not exist, or be expired).
    pub expected: Option<u64>,
    /// The payload.
    pub data: &'a [u8],
    /// The absolute expiry, if any.
    pub expires_at: Option<Millis>,
}

/// One operation of [`Backend::key_claim_complete_batch`]: a claim of one
/// key, with what it writes and completes with when it is new.
#[derive(Clone, Copy, Debug)]
pub struct ClaimPut<'a> {
    /// The key's owner.
    pub owner: &'a str,
    /// The idempotency key.
    pub key: &'a str,
    /// The request's fingerprint.
    pub fingerprint: &'a [u8],
    /// The result the key completes with.
    pub result: &'a [u8],
    /// The writes made when the claim is new.
    pub puts: &'a [SnapshotPut<'a>],
}

/// A storage engine for [`Store`](crate::Store). Implemented by
/// [`MemoryBackend`](crate::MemoryBackend),
/// [`SqliteBackend`](crate::SqliteBackend) and (feature `postgres`)
/// `PgBackend`. Every method is one atomic transaction; `now` is the
/// store's clock reading.
pub trait Backend: Send + Sync {
    /// A short name for messages and benchmarks (`"memory"`, `"sqlite"`...).
    fn name(&self) -> &'static str;

    /// The snapshot, unless absent or expired at `now`.
    fn snapshot_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Snapshot>>;
    /// One transaction: every put in order (each written only if its
    /// `expected` is the stored version, absent and expired counting as
    /// `None`), then the acknowledgement of every id in `acks` (already
    /// acknowledged or forgotten ids are skipped). All of it or nothing: a
    /// version mismatch is [`StoreError::Conflict`] and nothing is written.
    /// Snapshot puts and acks are this call with one side empty; the pump
    /// uses both at once, so that an actor's state and the acknowledgement
    /// of the item that changed it commit together.
    fn commit(&self, puts: &[SnapshotPut<'_>], acks: &[i64], now: Millis) -> Result<Committed>;
    /// Deletes a snapshot if its version is `expected` (`None`: whatever it
    /// is). True when something was deleted; a version mismatch is a
    /// conflict.
    fn snapshot_delete(
        &self,
        owner: &str,
        key: &str,
        expected: Option<u64>,
        now: Millis,
    ) -> Result<bool>;
    /// The owner's live snapshots, by key.
    fn snapshot_list(&self, owner: &str, now: Millis) -> Result<Vec<SnapshotMeta>>;

    /// Stores the draft unless a version at least as new is stored.
    fn draft_save(&self, draft: &Draft, now: Millis) -> Result<DraftSaved>;
    /// The draft, unless absent or expired.
    fn draft_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Draft>>;
    /// Deletes a draft; true when there was one.
    fn draft_delete(&self, owner: &str, key: &str) -> Result<bool>;

    /// Claims an idempotency key for a request with this fingerprint. A new
    /// or reused claim lasts `retention` milliseconds.
    fn key_claim(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<Claim>;
    /// One transaction: for each operation in order, claims its key and,
    /// if the claim is new, writes every put (checked as [`Backend::commit`]
    /// checks them) and completes the key with its result; a claim that is
    /// not new writes nothing and answers as [`Backend::key_claim`]. A later
    /// operation sees an earlier one's claim. Any error (a put's version
    /// conflict among them) rolls the whole batch back: nothing of it is
    /// written.
    fn key_claim_complete_batch(
        &self,
        ops: &[ClaimPut<'_>],
        retention: Millis,
        now: Millis,
    ) -> Result<Vec<Claim>>;
    /// Stores the result of a claimed key; its retention restarts at `now`.
    fn key_complete(
        &self,
        owner: &str,
        key: &str,
        result: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<()>;
    /// Drops an in-progress claim (the operation did not happen), so the
    /// next claim is new.
    fn key_abandon(&self, owner: &str, key: &str, now: Millis) -> Result<()>;
    /// The key, unless absent or past retention.
    fn key_lookup(&self, owner: &str, key: &str, now: Millis) -> Result<Option<KeyRecord>>;

    /// Adds an item unless its key is already on the queue.
    fn enqueue(&self, item: NewItem<'_>, now: Millis) -> Result<Enqueued>;
    /// Leases up to `max` deliverable items of `queue`, oldest first, for
    /// `lease` milliseconds. Items leased by others are skipped, not waited
    /// for. A candidate already delivered `max_attempts` times is not
    /// delivered again: it moves to the dead letters in the same
    /// transaction (so a lease may return fewer than `max` items while
    /// more are ready).
    fn lease(
        &self,
        queue: &str,
        max: usize,
        lease: Millis,
        max_attempts: u32,
        now: Millis,
    ) -> Result<Vec<QueueItem>>;
    /// Ends a lease early, making the item deliverable at `not_before`. A
    /// token that is not the current lease's is ignored (false).
    fn release(&self, id: i64, lease_token: i64, not_before: Millis) -> Result<bool>;
    /// The queue's counts at `now`.
    fn queue_counts(&self, queue: &str, now: Millis) -> Result<QueueCounts>;
    /// The queue's dead letters, oldest first, at most `limit`.
    fn dead_letters(&self, queue: &str, limit: usize) -> Result<Vec<DeadLetter>>;
    /// Moves a dead letter back onto its queue with no attempts, ready at
    /// `now`; false when there is no dead letter with that id.
    fn requeue_dead(&self, id: i64, now: Millis) -> Result<bool>;

    /// Removes what expired before `now`, and acknowledged items older than
    /// `dedup_window`. Dead letters stay until requeued or forgotten.
    fn sweep(&self, now: Millis, dedup_window: Millis) -> Result<SweepReport>;
    /// Takes the shard for `owner` until `until` if it is free at `now`
    /// (no row, released, or expired), incrementing its epoch; else the
    /// lease that holds.
    fn shard_acquire(
        &self,
        shard: u32,
        owner: &str,
        until: Millis,
        now: Millis,
    ) -> Result<LeaseOutcome>;
    /// Extends `lease` to `until` if its epoch is still the shard's
    /// (`None`: lost).
    fn shard_renew(&self, lease: &ShardLease, until: Millis) -> Result<Option<ShardLease>>;
    /// Expires `lease` now, keeping its epoch, if it is still the shard's.
    fn shard_release(&self, lease: &ShardLease) -> Result<bool>;
    /// The shard's lease row, live or not.
    fn shard_get(&self, shard: u32) -> Result<Option<ShardLease>>;
    /// One transaction: the fence ([`shards`](crate::shards)) against
    /// the shard's lease row (locked against a takeover until the commit
    /// where the engine locks rows), the once-per-message check, then the
    /// write.
    fn entity_commit(&self, write: &EntityWrite<'_>, now: Millis) -> Result<EntityCommit>;
    /// The entity, if stored.
    fn entity_get(&self, kind: &str, key: &str) -> Result<Option<Entity>>;
    /// Up to `limit` of the shard's entities whose wake-up is at or before
    /// `now`, earliest first.
    fn entities_due(&self, shard: u32, now: Millis, limit: usize) -> Result<Vec<DueEntity>>;

    /// Removes every snapshot, draft, key and queue item of `owner`, and
    /// scrubs what the database files still hold of them where the engine
    /// allows it.
    fn forget(&self, owner: &str) -> Result<ForgetReport>;
}

/// What [`Backend::commit`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// The new version of each put, in order.
    pub versions: Vec<u64>,
    /// How many ids were newly acknowledged.
    pub acked: u64,
}

// ---- what every backend decides the same way ------------------------------
//
// The backends differ in how they read and write; the decisions below are
// the store's semantics, kept in one place so the three cannot drift.

/// The version check of a snapshot put: `Ok(new version)` when the caller's
/// `expected` is the stored live version (`actual`), else the conflict.
pub(crate) fn next_version(put: &SnapshotPut<'_>, actual: Option<u64>) -> Result<u64> {
    if actual != put.expected {
        return Err(conflict(put.owner, put.key, put.expected, actual));
    }
    Ok(actual.unwrap_or(0) + 1)
}

/// The version check of a delete: `None` deletes whatever is there.
pub(crate) fn check_delete(
    owner: &str,
    key: &str,
    expected: Option<u64>,
    actual: Option<u64>,
) -> Result<()> {
    if expected.is_some() && actual != expected {
        return Err(conflict(owner, key, expected, actual));
    }
    Ok(())
}

pub(crate) fn conflict(
    owner: &str,
    key: &str,
    expected: Option<u64>,
    actual: Option<u64>,
) -> StoreError {
    StoreError::Conflict {
        owner: owner.into(),
        key: key.into(),
        expected,
        actual,
    }
}

/// True when a draft of `version` may replace the stored live one.
pub(crate) fn draft_is_newer(stored: Option<u64>, version: u64) -> std::result::Result<(), u64> {
    match stored {
        Some(s) if s >= version => Err(s),
        _ => Ok(()),
    }
}

/// The IETF draft's decision for a key that is live: a different request
/// first (422), then in progress (409), else the stored result.
pub(crate) fn classify(
    stored_fp: &[u8],
    state: KeyState,
    result: Option<&[u8]>,
    fingerprint: &[u8],
) -> Claim {
    if stored_fp != fingerprint {
        Claim::FingerprintMismatch
    } else {
        match state {
            KeyState::InProgress => Claim::InProgress,
            KeyState::Completed => Claim::Completed(result.unwrap_or_default().to_vec()),
        }
    }
}

pub(crate) fn not_in_progress(owner: &str, key: &str, completed: bool) -> StoreError {
    StoreError::NotInProgress {
        owner: owner.into(),
        key: key.into(),
        state: if completed { "completed" } else { "absent" },
    }
}

/// How the SQL backends store [`KeyState`].
pub(crate) fn key_state(n: i64) -> Result<KeyState> {
    match n {
        0 => Ok(KeyState::InProgress),
        1 => Ok(KeyState::Completed),
        other => Err(StoreError::Corrupt(format!(
            "idempotency key state {other}"
        ))),
    }
}

/// A leased candidate past the attempt cap: its lease incremented the
/// attempt counter once more than it was delivered.
pub(crate) fn is_poison(attempt_after_lease: u32, max_attempts: u32) -> bool {
    attempt_after_lease > max_attempts
}
