//! Shard ownership and fenced entity state: what a cluster of nodes needs
//! from the database so that each entity has one active owner's writes.
//!
//! Entities (an actor, a statechart) are named by a kind and a key; a key
//! belongs to one of a fixed number of shards ([`shard_for`]); each shard is
//! owned by one node at a time through a **lease row** (owner, epoch, lease
//! until). Taking a shard over, when its lease has expired or was released,
//! increments its epoch.
//!
//! **Fencing.** Every write of an entity's state carries the epoch of the
//! lease its writer holds ([`EntityWrite::epoch`]), and commits only if that
//! epoch is still the shard's: a paused or partitioned old owner that wakes
//! up after a takeover cannot commit ([`StoreError::Fenced`]). The check is
//! made in the write's own transaction, against the lease row (locked where
//! the engine locks rows), so it does not rest on clocks: clocks decide only
//! when a lease may be taken over (liveness), never whose write counts
//! (safety).
//!
//! **Once per message.** An entity keeps the sequence of the last message
//! that changed it ([`Entity::applied`]), committed in the same transaction
//! as its state: a redelivered message at or below it is reported as a
//! [`EntityCommit::Duplicate`] and changes nothing.
//!
//! **Durable timers.** A write records the entity's next wake-up
//! ([`EntityWrite::wake_at`], the earliest absolute deadline of its pending
//! delayed events); [`Store::due_entities`] lists a shard's entities whose
//! wake-up is due, so the shard's owner (a new one after a takeover too)
//! reactivates them.
//!
//! ```
//! use std::time::Duration;
//! use turno_store::{shard_for, EntityCommit, EntityWrite, LeaseOutcome, Store, StoreError};
//!
//! let store = Store::memory();
//! let shard = shard_for("signup-42", 16);
//! let LeaseOutcome::Acquired(lease) =
//!     store.acquire_shard(shard, "node-a/1", Duration::from_secs(10)).unwrap()
//! else { unreachable!("the shard is free") };
//! let write = EntityWrite {
//!     kind: "signup", key: "signup-42", shard, epoch: lease.epoch,
//!     seq: Some(1), data: b"{...}", wake_at: None,
//! };
//! assert_eq!(store.commit_entity(&write).unwrap(), EntityCommit::Applied);
//! assert_eq!(store.commit_entity(&write).unwrap(), EntityCommit::Duplicate { applied: 1 });
//!
//! // Node a releases the shard; node b takes it over with a newer epoch.
//! assert!(store.release_shard(&lease).unwrap());
//! let LeaseOutcome::Acquired(newer) =
//!     store.acquire_shard(shard, "node-b/1", Duration::from_secs(10)).unwrap()
//! else { unreachable!("released") };
//! assert_eq!(newer.epoch, lease.epoch + 1);
//! // Node a's late write is refused: fenced.
//! let late = EntityWrite { seq: Some(2), ..write };
//! assert!(matches!(store.commit_entity(&late), Err(StoreError::Fenced { .. })));
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::model::Millis;
use crate::store::{check_name, ms, Store};

/// The shard of `key` among `shards` (at least 1): FNV-1a (64 bits) of the
/// key's UTF-8 bytes, modulo `shards`. Stable across processes, machines and
/// versions of turno, so every node agrees; changing the number of shards
/// moves keys between shards, so a cluster keeps one number for its life.
pub fn shard_for(key: &str, shards: u32) -> u32 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = key
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    (hash % u64::from(shards.max(1))) as u32
}

/// A node's ownership of a shard, as the lease row records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardLease {
    /// The shard.
    pub shard: u32,
    /// The owning node (its name and incarnation: a restarted node is a new
    /// owner).
    pub owner: String,
    /// Incremented by every takeover: the fencing token of the owner's
    /// writes.
    pub epoch: u64,
    /// Until when the lease holds unless renewed (the store's clock). After
    /// it, another node may take the shard over.
    pub until: Millis,
}

/// What [`Store::acquire_shard`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseOutcome {
    /// The shard was free (never owned, released, or its lease expired):
    /// it is the caller's now, with a new epoch.
    Acquired(ShardLease),
    /// Another owner's lease (or the caller's own: renew it instead) holds.
    Held(ShardLease),
}

/// A write of an entity's state, fenced by its writer's lease.
#[derive(Clone, Copy, Debug)]
pub struct EntityWrite<'a> {
    /// The entity's kind (a chart's id, an actor type).
    pub kind: &'a str,
    /// The entity's key within its kind.
    pub key: &'a str,
    /// The shard the key belongs to ([`shard_for`]).
    pub shard: u32,
    /// The epoch of the writer's lease on that shard.
    pub epoch: u64,
    /// The sequence of the message this write applies (`None`: a change no
    /// sequenced message caused, such as a timer's; it leaves
    /// [`Entity::applied`] as it is).
    pub seq: Option<u64>,
    /// The entity's state, opaque to the store (a chart snapshot).
    pub data: &'a [u8],
    /// The entity's next wake-up, if it has pending timers.
    pub wake_at: Option<Millis>,
}

/// What [`Store::commit_entity`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityCommit {
    /// The state and the sequence were written.
    Applied,
    /// The message was applied before (its sequence is at or below the
    /// entity's `applied`): nothing was written; acknowledge it and go on.
    Duplicate {
        /// The entity's applied sequence.
        applied: u64,
    },
}

/// An entity's stored state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    /// See [`EntityWrite::kind`].
    pub kind: String,
    /// See [`EntityWrite::key`].
    pub key: String,
    /// The shard it was last written under.
    pub shard: u32,
    /// The epoch of its last write.
    pub epoch: u64,
    /// The sequence of the last message that changed it (0: none).
    pub applied: u64,
    /// Its state.
    pub data: Vec<u8>,
    /// Its next wake-up, if any.
    pub wake_at: Option<Millis>,
    /// When it was last written.
    pub updated_at: Millis,
}

/// An entity whose wake-up is due, as [`Store::due_entities`] lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueEntity {
    /// See [`Entity::kind`].
    pub kind: String,
    /// See [`Entity::key`].
    pub key: String,
    /// The wake-up that is due.
    pub wake_at: Millis,
}

// ---- what every backend decides the same way ------------------------------

/// The fence of an entity write: `Ok` when the writer's epoch is the
/// shard's current one (`current`: `None` when the shard was never owned).
pub(crate) fn check_fence(write: &EntityWrite<'_>, current: Option<u64>) -> Result<()> {
    if current == Some(write.epoch) {
        return Ok(());
    }
    Err(StoreError::Fenced {
        shard: write.shard,
        epoch: write.epoch,
        current,
    })
}

/// The once-per-message check: `Some(duplicate)` when the write's message
/// was applied already.
pub(crate) fn duplicate(write: &EntityWrite<'_>, applied: Option<u64>) -> Option<EntityCommit> {
    match (write.seq, applied) {
        (Some(seq), Some(applied)) if seq <= applied => Some(EntityCommit::Duplicate { applied }),
        _ => None,
    }
}

/// The applied sequence after a write that is not a duplicate.
pub(crate) fn applied_after(write: &EntityWrite<'_>, applied: Option<u64>) -> u64 {
    write.seq.unwrap_or(applied.unwrap_or(0))
}

impl Store {
    /// Takes shard `shard` for node `owner` for `ttl`, if it is free: never
    /// owned, released, or its lease expired at the store's clock. A
    /// takeover increments the shard's epoch, which fences every write of
    /// the previous owner.
    pub fn acquire_shard(&self, shard: u32, owner: &str, ttl: Duration) -> Result<LeaseOutcome> {
        check_name("owner", owner)?;
        let ttl = lease_ttl(ttl)?;
        let now = self.now();
        self.backend()
            .shard_acquire(shard, owner, now.saturating_add(ttl), now)
    }

    /// Extends a lease the caller holds to `ttl` from now. `None`: the
    /// lease is lost (another owner took the shard over, so the epoch
    /// changed); the caller must stop acting as the owner. A lease renewed
    /// after it expired but before anyone took it over is still the
    /// caller's: its epoch did not change, so no write of another owner
    /// happened meanwhile.
    pub fn renew_shard(&self, lease: &ShardLease, ttl: Duration) -> Result<Option<ShardLease>> {
        let ttl = lease_ttl(ttl)?;
        let now = self.now();
        self.backend().shard_renew(lease, now.saturating_add(ttl))
    }

    /// Gives a lease up at once (a clean shutdown: drain, then release), so
    /// the next node need not wait for it to expire. False when the lease
    /// was no longer the caller's.
    pub fn release_shard(&self, lease: &ShardLease) -> Result<bool> {
        self.backend().shard_release(lease)
    }

    /// The shard's live lease (owner and epoch), if one holds now: where to
    /// route a message for one of its keys.
    pub fn shard_owner(&self, shard: u32) -> Result<Option<ShardLease>> {
        let now = self.now();
        Ok(self
            .backend()
            .shard_get(shard)?
            .filter(|lease| lease.until > now && !lease.owner.is_empty()))
    }

    /// Writes an entity's state if the writer's epoch is still its shard's
    /// ([`StoreError::Fenced`] otherwise) and the message was not applied
    /// before ([`EntityCommit::Duplicate`]): one transaction. See the
    /// [module docs](self).
    pub fn commit_entity(&self, write: &EntityWrite<'_>) -> Result<EntityCommit> {
        check_name("kind", write.kind)?;
        check_name("key", write.key)?;
        let now = self.now();
        self.backend().entity_commit(write, now)
    }

    /// The entity's stored state, if any.
    pub fn get_entity(&self, kind: &str, key: &str) -> Result<Option<Entity>> {
        self.backend().entity_get(kind, key)
    }

    /// Up to `limit` entities of `shard` whose wake-up is due at the
    /// store's clock, earliest first.
    pub fn due_entities(&self, shard: u32, limit: usize) -> Result<Vec<DueEntity>> {
        let now = self.now();
        self.backend().entities_due(shard, now, limit)
    }
}

fn lease_ttl(ttl: Duration) -> Result<Millis> {
    let ms = ms(ttl);
    if ms <= 0 {
        return Err(StoreError::Invalid {
            what: "lease ttl",
            why: "must be at least 1 ms".into(),
        });
    }
    Ok(ms)
}
