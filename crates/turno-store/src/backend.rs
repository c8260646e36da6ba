//! The one interface every backend implements. [`Store`](crate::Store)
//! validates arguments, reads the clock and calls it; the backends only
//! translate each call into one transaction of their database.
//!
//! Every method is **one atomic transaction**: it takes effect whole or not
//! at all. That is the contract the conformance tests
//! (`tests/conformance.rs`) check on every backend.

use crate::error::Result;
use crate::model::{
    Claim, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord, Millis, NewItem, QueueCounts,
    QueueItem, Snapshot, SnapshotMeta, SweepReport,
};

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
    /// Writes a snapshot if `put.expected` is the stored version (absent and
    /// expired count as `None`); returns the new version, or
    /// [`StoreError::Conflict`](crate::StoreError::Conflict).
    fn snapshot_put(&self, put: SnapshotPut<'_>, now: Millis) -> Result<u64>;
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
    /// for.
    fn lease(&self, queue: &str, max: usize, lease: Millis, now: Millis) -> Result<Vec<QueueItem>>;
    /// Acknowledges items by id: they are never delivered again. Returns how
    /// many were newly acknowledged (already acknowledged or forgotten ids
    /// are skipped).
    fn ack(&self, ids: &[i64], now: Millis) -> Result<u64>;
    /// Ends a lease early, making the item deliverable at `not_before`. A
    /// token that is not the current lease's is ignored (false).
    fn release(&self, id: i64, lease_token: i64, not_before: Millis) -> Result<bool>;
    /// The queue's counts at `now`.
    fn queue_counts(&self, queue: &str, now: Millis) -> Result<QueueCounts>;

    /// Removes what expired before `now`, and acknowledged items older than
    /// `dedup_window`.
    fn sweep(&self, now: Millis, dedup_window: Millis) -> Result<SweepReport>;
    /// Removes every snapshot, draft, key and queue item of `owner`, and
    /// scrubs what the database files still hold of them where the engine
    /// allows it.
    fn forget(&self, owner: &str) -> Result<ForgetReport>;
}
