//! # turno-store: persistence outside the process
//!
//! Where turno keeps what must outlive a process: **snapshots** of actors
//! and charts, **drafts** of work in progress, **idempotency keys** for
//! operations that must happen once, and **durable queues** for events that
//! must not be dropped. One [`Store`] API over three backends:
//!
//! | backend | for | |
//! |---|---|---|
//! | [`MemoryBackend`] | tests | the reference semantics |
//! | [`SqliteBackend`] | one process, the embedded default | WAL, `synchronous = FULL`, `secure_delete`; no server |
//! | `PgBackend` (feature `postgres`) | several processes or machines | `INSERT ... ON CONFLICT`, `FOR UPDATE SKIP LOCKED` |
//!
//! Every call is one transaction: it happens whole or not at all, and a
//! failure is a typed [`StoreError`] that says whether retrying is safe.
//!
//! - **Snapshots** ([`Store::put_snapshot`]): opaque versioned bytes (any
//!   serialized state; the statechart snapshot format is one) with an
//!   owner, a key, a version for optimistic concurrency (a put against a
//!   stale version is [`StoreError::Conflict`], never an overwrite), and an
//!   optional time to live, swept by a [`Sweeper`].
//! - **Drafts** ([`Drafts`]): saved locally at every change, remotely at
//!   every completed step; resumed from the newest copy.
//! - **Idempotency keys** ([`Store::claim`]): the IETF `Idempotency-Key`
//!   draft's semantics: [`Claim::New`], [`Claim::InProgress`] (409),
//!   [`Claim::Completed`] with the stored result, or
//!   [`Claim::FingerprintMismatch`] (422); a published retention window
//!   ([`Store::retention`]) after which a key may be reused.
//! - **Durable queues** ([`Store::enqueue`], [`Store::lease`],
//!   [`Store::ack`]) and a [`Pump`] that delivers one into an actor: at
//!   least once, acknowledged after the turn, deduplicated by key,
//!   backpressure through the actor's suspend mailbox; **effectively once**
//!   when the actor's state and the ack commit in one transaction
//!   ([`Store::commit`], [`Delivery::ack_with_snapshot`]); a poison item
//!   goes to the **dead letters** after [`Store::max_attempts`] deliveries
//!   ([`Store::dead_letters`]).
//! - **Forgetting** ([`Store::forget`]): every snapshot, draft, key and
//!   queued item of an owner, gone, including from the SQLite files.
//!
//! The API is synchronous on purpose: turns are synchronous, and a turn
//! must not wait on a disk. Call the store from a [`Pump`], a thread, or
//! async code's `spawn_blocking`; deliver its results to actors as messages.
//! The design note is `docs/store.md`.
//!
//! ```
//! use turno_store::Store;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::sqlite(dir.path().join("turno.db")).unwrap();
//! store.enqueue("payments", "alice", "evt-1", b"charge 10").unwrap();
//! store.enqueue("payments", "alice", "evt-1", b"charge 10").unwrap(); // a duplicate: ignored
//! let items = store.lease("payments", 10, std::time::Duration::from_secs(30)).unwrap();
//! assert_eq!(items.len(), 1);
//! store.ack(&[items[0].id]).unwrap();
//! assert!(store.lease("payments", 10, std::time::Duration::from_secs(30)).unwrap().is_empty());
//! ```

mod backend;
pub mod drafts;
mod error;
pub mod memory;
mod model;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod pump;
pub mod shard_keeper;
pub mod shards;
mod sql;
pub mod sqlite;
mod store;
pub mod sweep;

pub use backend::{Backend, ClaimPut, Committed, SnapshotPut};
pub use drafts::{Drafts, Source};
pub use error::{Result, StoreError};
pub use memory::MemoryBackend;
pub use model::{
    Claim, ClaimAndComplete, DeadLetter, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord,
    KeyState, Millis, NewItem, QueueCounts, QueueItem, Snapshot, SnapshotMeta, SnapshotWrite,
    SweepReport,
};
pub use pump::{Delivery, Pump, PumpConfig, PumpStats};
pub use shard_keeper::{KeeperTick, ShardKeeper};
pub use shards::{
    shard_for, DueEntity, Entity, EntityCommit, EntityWrite, LeaseOutcome, ShardLease,
};
pub use sqlite::{Durability, SqliteBackend, SqliteConfig};
pub use store::{
    Clock, ManualClock, Store, SystemClock, DEFAULT_MAX_ATTEMPTS, DEFAULT_RETENTION, MAX_NAME_LEN,
};
pub use sweep::{SweepTotals, Sweeper};
