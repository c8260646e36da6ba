//! [`Store`]: the front door. It checks arguments, reads the clock, and
//! hands each call to its [`Backend`] as one transaction.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::backend::{Backend, ClaimPut, SnapshotPut};
use crate::error::{Result, StoreError};
use crate::memory::MemoryBackend;
use crate::model::{
    Claim, ClaimAndComplete, DeadLetter, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord,
    Millis, NewItem, QueueCounts, QueueItem, Snapshot, SnapshotMeta, SnapshotWrite, SweepReport,
};
use crate::sqlite::SqliteBackend;

/// Where the store reads the time. Every expiry, lease and retention
/// decision uses it, on every backend.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// The wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as Millis)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told: for tests of expiry and retention.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: Millis) -> Arc<Self> {
        Arc::new(ManualClock(AtomicI64::new(start_ms)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(ms(by), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}

pub(crate) fn ms(d: Duration) -> Millis {
    d.as_millis().min(Millis::MAX as u128) as Millis
}

/// The published retention window of idempotency keys, and the dedup window
/// of acknowledged queue items, unless configured: 24 hours (the IETF
/// draft's example value).
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// How many times a queue item is delivered without an acknowledgement
/// before it moves to the dead letters, unless configured
/// ([`Store::with_max_attempts`]).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;

/// Longest owner, key or queue name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 512;

/// Snapshots, drafts, idempotency keys and durable queues on one backend.
/// Cheap to clone (an `Arc` inside); share it between threads.
///
/// ```
/// use turno_store::{Claim, Store};
///
/// let store = Store::memory();
/// // optimistic concurrency: a put names the version it read
/// let v1 = store.put_snapshot("alice", "wizard", None, b"step 1", None).unwrap();
/// let v2 = store.put_snapshot("alice", "wizard", Some(v1), b"step 2", None).unwrap();
/// assert!(store.put_snapshot("alice", "wizard", Some(v1), b"stale", None).is_err());
/// assert_eq!(store.get_snapshot("alice", "wizard").unwrap().unwrap().version, v2);
///
/// // idempotency keys: the first claim wins, a replay gets the stored result
/// assert_eq!(store.claim("alice", "pay-1", b"POST /pay 10").unwrap(), Claim::New);
/// store.complete("alice", "pay-1", b"paid").unwrap();
/// assert_eq!(store.claim("alice", "pay-1", b"POST /pay 10").unwrap(), Claim::Completed(b"paid".to_vec()));
///
/// // forget: everything of the owner, gone
/// let gone = store.forget("alice").unwrap();
/// assert_eq!((gone.snapshots, gone.keys), (1, 1));
/// assert!(store.get_snapshot("alice", "wizard").unwrap().is_none());
/// ```
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    clock: Arc<dyn Clock>,
    retention: Duration,
    dedup_window: Duration,
    max_attempts: u32,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend.name())
            .field("retention", &self.retention)
            .field("dedup_window", &self.dedup_window)
            .field("max_attempts", &self.max_attempts)
            .finish()
    }
}

pub(crate) fn check_name(what: &'static str, s: &str) -> Result<()> {
    if s.is_empty() {
        return Err(StoreError::invalid(what, "must not be empty"));
    }
    if s.len() > MAX_NAME_LEN {
        return Err(StoreError::invalid(
            what,
            format!("{} bytes, at most {MAX_NAME_LEN}", s.len()),
        ));
    }
    if s.contains('\0') {
        return Err(StoreError::invalid(what, "contains a NUL character"));
    }
    Ok(())
}

impl Store {
    /// A store on any backend, with the system clock.
    pub fn new(backend: impl Backend + 'static) -> Self {
        Store {
            backend: Arc::new(backend),
            clock: Arc::new(SystemClock),
            retention: DEFAULT_RETENTION,
            dedup_window: DEFAULT_RETENTION,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }

    /// An in-memory store (tests).
    pub fn memory() -> Self {
        Store::new(MemoryBackend::new())
    }

    /// The embedded default: a SQLite file (created if absent), WAL mode,
    /// `synchronous = FULL`, `secure_delete = ON`. For other settings build a
    /// [`SqliteConfig`](crate::SqliteConfig) and pass its backend to
    /// [`Store::new`].
    pub fn sqlite(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Ok(Store::new(SqliteBackend::open(path)?))
    }

    /// A PostgreSQL store at `url` (`postgres://user@host:port/db`), tables
    /// created if absent.
    #[cfg(feature = "postgres")]
    pub fn postgres(url: &str) -> Result<Self> {
        Ok(Store::new(crate::postgres::PgBackend::connect(url)?))
    }

    /// Replaces the clock (see [`ManualClock`]).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The idempotency keys' retention window: a claimed key is remembered
    /// this long after its claim, a completed one this long after its
    /// completion; after that it may be reused. Default
    /// [`DEFAULT_RETENTION`].
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// How long an acknowledged queue item's key is remembered, so that an
    /// enqueue of the same key is still a duplicate. Default
    /// [`DEFAULT_RETENTION`].
    pub fn with_dedup_window(mut self, window: Duration) -> Self {
        self.dedup_window = window;
        self
    }

    /// The dead-letter cap: an item delivered this many times without an
    /// acknowledgement is not delivered again but moved to the dead letters
    /// ([`Store::dead_letters`]), counted in [`QueueCounts::dead`]. Default
    /// [`DEFAULT_MAX_ATTEMPTS`]; at least 1.
    pub fn with_max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// The dead-letter cap (see [`Store::with_max_attempts`]).
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The published retention window.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// The backend every call goes to.
    pub(crate) fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// The backend's name (`"memory"`, `"sqlite"`, `"postgres"`).
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The clock's reading.
    pub fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    fn expiry(&self, ttl: Option<Duration>) -> Option<Millis> {
        ttl.map(|t| self.now().saturating_add(ms(t)))
    }

    // ---- snapshots -------------------------------------------------------

    /// The snapshot `owner`/`key`, unless absent or expired.
    pub fn get_snapshot(&self, owner: &str, key: &str) -> Result<Option<Snapshot>> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend.snapshot_get(owner, key, self.now())
    }

    /// Writes a snapshot. `expected` is the version the caller read (`None`
    /// to create): if the stored version differs the put fails with
    /// [`StoreError::Conflict`] and nothing is written. Returns the new
    /// version (1 for a new snapshot). `ttl`: it expires that long from now.
    pub fn put_snapshot(
        &self,
        owner: &str,
        key: &str,
        expected: Option<u64>,
        data: &[u8],
        ttl: Option<Duration>,
    ) -> Result<u64> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        let now = self.now();
        let put = SnapshotPut {
            owner,
            key,
            expected,
            data,
            expires_at: ttl.map(|t| now.saturating_add(ms(t))),
        };
        let done = self.backend.commit(&[put], &[], now)?;
        done.versions
            .first()
            .copied()
            .ok_or_else(|| StoreError::Database("the backend returned no version".into()))
    }

    /// Snapshot puts and queue acknowledgements in **one transaction**: all
    /// of it commits, or (on any error, such as a [`StoreError::Conflict`]
    /// of one put) none of it. Returns the new version of each write, in
    /// order. This is how an actor fed by a durable queue is effectively
    /// once across crashes: the state that an item changed and the item's
    /// acknowledgement are on disk together or not at all (see
    /// [`Delivery::ack_with_snapshot`](crate::Delivery::ack_with_snapshot)).
    ///
    /// ```
    /// use turno_store::{SnapshotWrite, Store};
    ///
    /// let store = Store::memory();
    /// store.enqueue("q", "ann", "evt-1", b"+1").unwrap();
    /// let item = store.lease("q", 1, std::time::Duration::from_secs(30)).unwrap().remove(0);
    /// let write = SnapshotWrite::new("ann", "counter", None, b"1".to_vec());
    /// assert_eq!(store.commit(&[write], &[item.id]).unwrap(), vec![1]);
    /// assert_eq!(store.queue_counts("q").unwrap().acked, 1);
    /// ```
    pub fn commit(&self, writes: &[SnapshotWrite], acks: &[i64]) -> Result<Vec<u64>> {
        for w in writes {
            check_name("owner", &w.owner)?;
            check_name("key", &w.key)?;
        }
        if writes.is_empty() && acks.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now();
        let puts = snapshot_puts(writes, now);
        Ok(self.backend.commit(&puts, acks, now)?.versions)
    }

    /// [`put_snapshot`](Self::put_snapshot) of a value serialized as JSON.
    pub fn put_snapshot_json<T: serde::Serialize>(
        &self,
        owner: &str,
        key: &str,
        expected: Option<u64>,
        value: &T,
        ttl: Option<Duration>,
    ) -> Result<u64> {
        let data = serde_json::to_vec(value)
            .map_err(|e| StoreError::invalid("snapshot value", e.to_string()))?;
        self.put_snapshot(owner, key, expected, &data, ttl)
    }

    /// A snapshot's payload read back as JSON, with its version.
    pub fn get_snapshot_json<T: serde::de::DeserializeOwned>(
        &self,
        owner: &str,
        key: &str,
    ) -> Result<Option<(u64, T)>> {
        match self.get_snapshot(owner, key)? {
            None => Ok(None),
            Some(s) => serde_json::from_slice(&s.data)
                .map(|v| Some((s.version, v)))
                .map_err(|e| {
                    StoreError::Corrupt(format!("snapshot {owner}/{key} is not this JSON: {e}"))
                }),
        }
    }

    /// Deletes a snapshot; with `Some(version)` only if that is the stored
    /// version (else a conflict). True when one was deleted.
    pub fn delete_snapshot(&self, owner: &str, key: &str, expected: Option<u64>) -> Result<bool> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend
            .snapshot_delete(owner, key, expected, self.now())
    }

    /// The owner's live snapshots, by key.
    pub fn list_snapshots(&self, owner: &str) -> Result<Vec<SnapshotMeta>> {
        check_name("owner", owner)?;
        self.backend.snapshot_list(owner, self.now())
    }

    // ---- drafts ----------------------------------------------------------

    /// Saves a draft unless the store holds this version or a newer one
    /// ([`DraftSaved::Stale`]). For the local-and-remote policy see
    /// [`Drafts`](crate::Drafts).
    pub fn save_draft(
        &self,
        owner: &str,
        key: &str,
        version: u64,
        data: &[u8],
        ttl: Option<Duration>,
    ) -> Result<DraftSaved> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        let now = self.now();
        let draft = Draft {
            owner: owner.into(),
            key: key.into(),
            version,
            data: data.to_vec(),
            saved_at: now,
            expires_at: self.expiry(ttl),
        };
        self.backend.draft_save(&draft, now)
    }

    /// The draft, unless absent or expired.
    pub fn get_draft(&self, owner: &str, key: &str) -> Result<Option<Draft>> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend.draft_get(owner, key, self.now())
    }

    /// Deletes one draft; true when there was one.
    pub fn delete_draft(&self, owner: &str, key: &str) -> Result<bool> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend.draft_delete(owner, key)
    }

    // ---- idempotency keys ------------------------------------------------

    /// Claims an idempotency key for a request. `fingerprint` identifies the
    /// request (a hash of its method, path and body, say): the same key with
    /// another fingerprint is [`Claim::FingerprintMismatch`]. Atomic: of any
    /// number of concurrent claimers of a fresh key, exactly one gets
    /// [`Claim::New`].
    pub fn claim(&self, owner: &str, key: &str, fingerprint: &[u8]) -> Result<Claim> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend
            .key_claim(owner, key, fingerprint, ms(self.retention), self.now())
    }

    /// For an operation that is itself a write in this store (a ledger
    /// entry, say): claims the key and, if the claim is new, writes
    /// `writes` and completes the key with `result`, all in one
    /// transaction, so the operation and its key never disagree and one
    /// commit waits for the disk instead of three. A claim that is not new
    /// writes nothing and answers as [`Store::claim`] does
    /// ([`Claim::Completed`] with the stored result for a replay); a
    /// version conflict in `writes` is [`StoreError::Conflict`] and leaves
    /// the key unclaimed.
    ///
    /// ```
    /// use turno_store::{Claim, SnapshotWrite, Store};
    ///
    /// let store = Store::memory();
    /// let entry = SnapshotWrite::new("ledger", "ch_1", None, b"10 EUR".to_vec());
    /// let first = store.claim_and_complete("gw", "key-1", b"req", b"ch_1", &[entry.clone()]).unwrap();
    /// assert_eq!(first, Claim::New);
    /// // A retry with the same key is answered from the key; nothing is written twice.
    /// let again = store.claim_and_complete("gw", "key-1", b"req", b"ch_2", &[entry]).unwrap();
    /// assert_eq!(again, Claim::Completed(b"ch_1".to_vec()));
    /// assert_eq!(store.list_snapshots("ledger").unwrap().len(), 1);
    /// ```
    pub fn claim_and_complete(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        result: &[u8],
        writes: &[SnapshotWrite],
    ) -> Result<Claim> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        for w in writes {
            check_name("owner", &w.owner)?;
            check_name("key", &w.key)?;
        }
        let now = self.now();
        let puts = snapshot_puts(writes, now);
        let op = ClaimPut {
            owner,
            key,
            fingerprint,
            result,
            puts: &puts,
        };
        let mut claims = self
            .backend
            .key_claim_complete_batch(&[op], ms(self.retention), now)?;
        claims
            .pop()
            .ok_or_else(|| StoreError::Database("a batch of one claim answered none".into()))
    }

    /// Many [`Store::claim_and_complete`]s in one transaction: one commit,
    /// one wait for the disk, for all of them (group commit). Each operation
    /// is claimed and, when new, written and completed in order, a later one
    /// seeing an earlier one's claim (the same key twice: the second is
    /// answered from the first). Any error (a bad name, a write's version
    /// conflict, the disk) fails the whole batch, and nothing of it is
    /// written.
    ///
    /// ```
    /// use turno_store::{Claim, ClaimAndComplete, SnapshotWrite, Store};
    ///
    /// let store = Store::memory();
    /// let op = |key: &str, entry: &str| ClaimAndComplete {
    ///     owner: "gw".into(),
    ///     key: key.into(),
    ///     fingerprint: b"req".to_vec(),
    ///     result: entry.as_bytes().to_vec(),
    ///     writes: vec![SnapshotWrite::new("ledger", entry, None, b"10 EUR".to_vec())],
    /// };
    /// let claims = store
    ///     .claim_and_complete_batch(&[op("a", "ch_1"), op("b", "ch_2"), op("a", "ch_3")])
    ///     .unwrap();
    /// assert_eq!(claims, [Claim::New, Claim::New, Claim::Completed(b"ch_1".to_vec())]);
    /// assert_eq!(store.list_snapshots("ledger").unwrap().len(), 2);
    /// ```
    pub fn claim_and_complete_batch(&self, ops: &[ClaimAndComplete]) -> Result<Vec<Claim>> {
        for op in ops {
            check_name("owner", &op.owner)?;
            check_name("key", &op.key)?;
            for w in &op.writes {
                check_name("owner", &w.owner)?;
                check_name("key", &w.key)?;
            }
        }
        let now = self.now();
        let puts: Vec<Vec<SnapshotPut<'_>>> = ops
            .iter()
            .map(|op| snapshot_puts(&op.writes, now))
            .collect();
        let claims: Vec<ClaimPut<'_>> = ops
            .iter()
            .zip(&puts)
            .map(|(op, puts)| ClaimPut {
                owner: &op.owner,
                key: &op.key,
                fingerprint: &op.fingerprint,
                result: &op.result,
                puts,
            })
            .collect();
        self.backend
            .key_claim_complete_batch(&claims, ms(self.retention), now)
    }

    /// Stores the result of the claimed operation; later claims with the same
    /// fingerprint get [`Claim::Completed`] with it, for the retention window
    /// from now. Fails with [`StoreError::NotInProgress`] when the key is not
    /// claimed (never, expired, abandoned or already completed).
    pub fn complete(&self, owner: &str, key: &str, result: &[u8]) -> Result<()> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend
            .key_complete(owner, key, result, ms(self.retention), self.now())
    }

    /// Gives up an in-progress claim (the operation was not performed, or
    /// failed in a way that is safe to retry): the next claim is new.
    pub fn abandon(&self, owner: &str, key: &str) -> Result<()> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend.key_abandon(owner, key, self.now())
    }

    /// The key as stored, unless absent or past its retention window.
    pub fn lookup(&self, owner: &str, key: &str) -> Result<Option<KeyRecord>> {
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend.key_lookup(owner, key, self.now())
    }

    // ---- durable queues --------------------------------------------------

    /// Puts an item on `queue`, unless an item with the same `key` is queued
    /// or was acknowledged within the dedup window ([`Enqueued::Duplicate`]).
    /// Durable when it returns.
    pub fn enqueue(&self, queue: &str, owner: &str, key: &str, payload: &[u8]) -> Result<Enqueued> {
        check_name("queue", queue)?;
        check_name("owner", owner)?;
        check_name("key", key)?;
        self.backend.enqueue(
            NewItem {
                queue,
                owner,
                key,
                payload,
            },
            self.now(),
        )
    }

    /// Leases up to `max` items of `queue`, oldest first: nobody else gets
    /// them for `lease`. Acknowledge each after handling it; an item whose
    /// lease ends unacknowledged (its consumer crashed) is delivered again,
    /// with a higher [`QueueItem::attempt`], up to the dead-letter cap
    /// ([`Store::with_max_attempts`]): an item delivered that many times
    /// moves to the dead letters instead. Consumers on other connections
    /// skip each other's leased items rather than wait (PostgreSQL: `FOR
    /// UPDATE SKIP LOCKED`). For delivery into an actor, see
    /// [`Pump`](crate::Pump).
    pub fn lease(&self, queue: &str, max: usize, lease: Duration) -> Result<Vec<QueueItem>> {
        check_name("queue", queue)?;
        if lease.is_zero() {
            return Err(StoreError::invalid("lease", "must be longer than zero"));
        }
        if max == 0 {
            return Ok(Vec::new());
        }
        self.backend
            .lease(queue, max, ms(lease), self.max_attempts, self.now())
    }

    /// Acknowledges handled items: they will never be delivered again.
    /// Returns how many were newly acknowledged.
    pub fn ack(&self, ids: &[i64]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(self.backend.commit(&[], ids, self.now())?.acked)
    }

    /// Hands a leased item back before its lease ends, deliverable again
    /// after `delay`. False when the lease is no longer this one (it ended
    /// and the item went to someone else, or it was acknowledged).
    pub fn release(&self, item: &QueueItem, delay: Duration) -> Result<bool> {
        self.backend.release(
            item.id,
            item.lease_token,
            self.now().saturating_add(ms(delay)),
        )
    }

    /// The dead letters of `queue` (items delivered
    /// [`max_attempts`](Self::with_max_attempts) times unacknowledged),
    /// oldest first, at most `limit`. They are never delivered, swept or
    /// dropped on their own: requeue them ([`Store::requeue_dead`]) once the
    /// handler is fixed, or `forget` their owner.
    pub fn dead_letters(&self, queue: &str, limit: usize) -> Result<Vec<DeadLetter>> {
        check_name("queue", queue)?;
        self.backend.dead_letters(queue, limit)
    }

    /// Puts a dead letter back on its queue, ready now, with its attempts
    /// reset. False when no dead letter has this id.
    pub fn requeue_dead(&self, id: i64) -> Result<bool> {
        self.backend.requeue_dead(id, self.now())
    }

    /// How many items `queue` holds, by state.
    pub fn queue_counts(&self, queue: &str) -> Result<QueueCounts> {
        check_name("queue", queue)?;
        self.backend.queue_counts(queue, self.now())
    }

    // ---- maintenance -----------------------------------------------------

    /// Deletes expired snapshots and drafts, keys past retention, and
    /// acknowledged items past the dedup window. Run it periodically with a
    /// [`Sweeper`](crate::Sweeper).
    pub fn sweep(&self) -> Result<SweepReport> {
        self.backend.sweep(self.now(), ms(self.dedup_window))
    }

    /// Removes every snapshot, draft, idempotency key and queue item of
    /// `owner`, and scrubs the database files where the engine allows (see
    /// [`ForgetReport::files_scrubbed`] and `docs/store.md`).
    pub fn forget(&self, owner: &str) -> Result<ForgetReport> {
        check_name("owner", owner)?;
        self.backend.forget(owner)
    }
}

/// The writes as a backend takes them: expiry made absolute from `now`.
fn snapshot_puts(writes: &[SnapshotWrite], now: Millis) -> Vec<SnapshotPut<'_>> {
    writes
        .iter()
        .map(|w| SnapshotPut {
            owner: &w.owner,
            key: &w.key,
            expected: w.expected,
            data: &w.data,
            expires_at: w.ttl.map(|t| now.saturating_add(ms(t))),
        })
        .collect()
}
