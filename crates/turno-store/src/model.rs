//! The records the store keeps, shared by every backend.
//!
//! Times are milliseconds since the Unix epoch, read from the store's
//! [`Clock`](crate::Clock) by the client, never by the database: expiry,
//! leases and retention then behave the same on every backend and can be
//! tested on a manual clock. (With several machines on PostgreSQL, their
//! clocks must agree to within the lease and retention times.)

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// A stored snapshot: opaque, versioned bytes (the statechart persistence
/// format, or any serialized state) owned by someone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Whose it is (a user, a tenant, a session): `forget(owner)` removes it.
    pub owner: String,
    /// Its name within the owner.
    pub key: String,
    /// 1 for the first put, +1 per put: the optimistic-concurrency token.
    pub version: u64,
    /// The payload, opaque to the store.
    pub data: Vec<u8>,
    /// When this version was written.
    pub updated_at: Millis,
    /// When it expires (`None`: never). An expired snapshot reads as absent
    /// and is deleted by the next sweep.
    pub expires_at: Option<Millis>,
}

/// A snapshot without its payload, as listed by owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotMeta {
    /// See [`Snapshot::key`].
    pub key: String,
    /// See [`Snapshot::version`].
    pub version: u64,
    /// See [`Snapshot::updated_at`].
    pub updated_at: Millis,
    /// See [`Snapshot::expires_at`].
    pub expires_at: Option<Millis>,
}

/// A draft of a chart actor (or any work in progress): saved often, resumed
/// from the newest copy. Versions grow with every change; a save never
/// replaces a newer or equal version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draft {
    /// Whose it is.
    pub owner: String,
    /// Its name within the owner (for example the chart's id).
    pub key: String,
    /// The change counter of the draft; newer is larger.
    pub version: u64,
    /// The payload, opaque to the store.
    pub data: Vec<u8>,
    /// When it was saved.
    pub saved_at: Millis,
    /// When it expires (`None`: never).
    pub expires_at: Option<Millis>,
}

/// What a draft save did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DraftSaved {
    /// Stored: it is now the newest version.
    Saved,
    /// Not stored: the store already holds this version or a newer one.
    Stale {
        /// The version already stored.
        stored: u64,
    },
}

/// The answer to [`Store::claim`](crate::Store::claim), with the IETF
/// `Idempotency-Key` draft's meaning (the HTTP status a server would send).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The key was unused (or its retention had passed): the caller owns the
    /// operation now, must perform it once and then `complete` (or
    /// `abandon`) the key.
    New,
    /// Another request with this key is being processed (HTTP 409 Conflict).
    InProgress,
    /// The operation already ran: here is its stored result, to be replayed
    /// instead of running again.
    Completed(Vec<u8>),
    /// The key was used for a different request (its fingerprint differs):
    /// HTTP 422 Unprocessable Content.
    FingerprintMismatch,
}

/// Where an idempotency key stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyState {
    /// Claimed, not completed.
    InProgress,
    /// Completed; the result is stored.
    Completed,
}

/// An idempotency key as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// The key's owner (the client that sent it).
    pub owner: String,
    /// The key itself.
    pub key: String,
    /// The fingerprint of the request that claimed it.
    pub fingerprint: Vec<u8>,
    /// In progress or completed.
    pub state: KeyState,
    /// The stored result (completed keys only).
    pub result: Option<Vec<u8>>,
    /// When it was claimed.
    pub created_at: Millis,
    /// When the retention window ends: after it the key may be reused.
    pub expires_at: Millis,
}

/// An item to put on a durable queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewItem<'a> {
    /// The queue's name.
    pub queue: &'a str,
    /// Whose item it is (`forget(owner)` removes it).
    pub owner: &'a str,
    /// The deduplication key: a second enqueue with the same key on the same
    /// queue, while the first is queued or within the dedup window after its
    /// acknowledgement, is a [`Enqueued::Duplicate`].
    pub key: &'a str,
    /// The payload.
    pub payload: &'a [u8],
}

/// What an enqueue did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueued {
    /// A new item, with its id (ids grow in enqueue order).
    New(i64),
    /// An item with this key is already queued or was recently acknowledged:
    /// nothing was added. Its id.
    Duplicate(i64),
}

impl Enqueued {
    /// The item's id either way.
    pub fn id(self) -> i64 {
        match self {
            Enqueued::New(id) | Enqueued::Duplicate(id) => id,
        }
    }
}

/// A queue item delivered under a lease: no other consumer gets it until the
/// lease ends; acknowledge it (or release it) before then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueItem {
    /// Its id.
    pub id: i64,
    /// Its queue.
    pub queue: String,
    /// Its owner.
    pub owner: String,
    /// Its deduplication key.
    pub key: String,
    /// The payload.
    pub payload: Vec<u8>,
    /// How many times it has been delivered, this one included (1 = first).
    pub attempt: u32,
    /// This delivery's lease token (a release must present it).
    pub lease_token: i64,
    /// When the lease ends and the item becomes deliverable again.
    pub lease_until: Millis,
}

/// How many items a queue holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCounts {
    /// Waiting for delivery (never delivered, released, or lease expired).
    pub ready: u64,
    /// Delivered under a lease that has not ended.
    pub leased: u64,
    /// Acknowledged and still remembered for deduplication.
    pub acked: u64,
    /// Moved to the dead letters after too many deliveries (see
    /// [`Store::dead_letters`](crate::Store::dead_letters)).
    pub dead: u64,
}

/// A queue item that was delivered the store's maximum number of times
/// without an acknowledgement (a poison item: its handler fails on it
/// every time) and so is not delivered again. Kept, with its payload,
/// until requeued ([`Store::requeue_dead`](crate::Store::requeue_dead)) or
/// forgotten; a sweep never removes it. Its key stays taken: an enqueue of
/// the same key is a duplicate of the dead letter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// The item's id (the same as when it was queued).
    pub id: i64,
    /// Its queue.
    pub queue: String,
    /// Its owner.
    pub owner: String,
    /// Its deduplication key.
    pub key: String,
    /// The payload.
    pub payload: Vec<u8>,
    /// How many times it was delivered.
    pub attempts: u32,
    /// When it was enqueued.
    pub enqueued_at: Millis,
    /// When it was moved to the dead letters.
    pub dead_at: Millis,
}

/// One operation of [`Store::claim_and_complete_batch`](crate::Store::claim_and_complete_batch):
/// the arguments of [`Store::claim_and_complete`](crate::Store::claim_and_complete).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimAndComplete {
    /// The key's owner.
    pub owner: String,
    /// The idempotency key.
    pub key: String,
    /// The request's fingerprint (the same key with another is
    /// [`Claim::FingerprintMismatch`]).
    pub fingerprint: Vec<u8>,
    /// The result the key completes with when the claim is new.
    pub result: Vec<u8>,
    /// The writes made, with the completion, when the claim is new.
    pub writes: Vec<SnapshotWrite>,
}

/// A snapshot put to commit together with queue acknowledgements
/// ([`Store::commit`](crate::Store::commit),
/// [`Delivery::ack_with_snapshot`](crate::Delivery::ack_with_snapshot)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotWrite {
    /// See [`Snapshot::owner`].
    pub owner: String,
    /// See [`Snapshot::key`].
    pub key: String,
    /// The version the writer read (`None`: it must not exist). The new
    /// version is `expected + 1` (1 when `None`).
    pub expected: Option<u64>,
    /// The payload.
    pub data: Vec<u8>,
    /// A time to live from the commit, if any.
    pub ttl: Option<std::time::Duration>,
}

impl SnapshotWrite {
    /// A put of `data` over version `expected`, with no expiry.
    pub fn new(
        owner: impl Into<String>,
        key: impl Into<String>,
        expected: Option<u64>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        SnapshotWrite {
            owner: owner.into(),
            key: key.into(),
            expected,
            data: data.into(),
            ttl: None,
        }
    }

    /// The version this write creates.
    pub fn new_version(&self) -> u64 {
        self.expected.unwrap_or(0) + 1
    }
}

/// What a sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Expired snapshots.
    pub snapshots: u64,
    /// Expired drafts.
    pub drafts: u64,
    /// Idempotency keys past their retention window.
    pub keys: u64,
    /// Acknowledged queue items past the dedup window (never dead
    /// letters).
    pub queue_items: u64,
}

/// What `forget(owner)` removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgetReport {
    /// Snapshots removed.
    pub snapshots: u64,
    /// Drafts removed.
    pub drafts: u64,
    /// Idempotency keys removed.
    pub keys: u64,
    /// Queue items removed (queued, leased, acknowledged or dead letters).
    pub queue_items: u64,
    /// SQLite: the write-ahead log was checkpointed and truncated, so the
    /// owner's bytes are gone from every database file. `false` when another
    /// connection held a read transaction open the whole time (then the old
    /// pages stay in the `-wal` file until its next checkpoint). Always
    /// `true` for the memory backend; PostgreSQL: see `docs/store.md`.
    pub files_scrubbed: bool,
}
