//! The in-memory backend: the reference semantics, for tests. One mutex
//! makes every call atomic; nothing survives the process.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::backend::{
    check_delete, classify, draft_is_newer, is_poison, next_version, not_in_progress, Backend,
    ClaimPut, Committed, SnapshotPut,
};
use crate::error::Result;
use crate::model::{
    Claim, DeadLetter, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord, KeyState, Millis,
    NewItem, QueueCounts, QueueItem, Snapshot, SnapshotMeta, SweepReport,
};
use crate::shards::{
    applied_after, check_fence, duplicate, DueEntity, Entity, EntityCommit, EntityWrite,
    LeaseOutcome, ShardLease,
};

type Id = (String, String);

#[derive(Clone)]
struct Item {
    queue: String,
    owner: String,
    key: String,
    payload: Vec<u8>,
    acked_at: Option<Millis>,
    attempts: u32,
    not_before: Millis,
    lease_until: Option<Millis>,
    lease_token: i64,
    enqueued_at: Millis,
}

#[derive(Default)]
struct Inner {
    snapshots: BTreeMap<Id, Snapshot>,
    drafts: BTreeMap<Id, Draft>,
    keys: BTreeMap<Id, KeyRecord>,
    items: BTreeMap<i64, Item>,
    /// (queue, key) -> id, for deduplication (queued and dead items).
    item_keys: BTreeMap<Id, i64>,
    dead: BTreeMap<i64, DeadLetter>,
    next_id: i64,
    shards: BTreeMap<u32, ShardLease>,
    entities: BTreeMap<Id, Entity>,
}

/// Everything in one process's memory. See the [module docs](self).
#[derive(Default)]
pub struct MemoryBackend {
    inner: Mutex<Inner>,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-applied call:
        // every method checks first and mutates last.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    /// Checks every put first (a later put may build on an earlier one of
    /// the same snapshot), then writes them: all or nothing.
    fn put_all(&mut self, puts: &[SnapshotPut<'_>], now: Millis) -> Result<Vec<u64>> {
        let mut seen: BTreeMap<Id, Option<u64>> = BTreeMap::new();
        let mut versions = Vec::with_capacity(puts.len());
        for put in puts {
            let k = id(put.owner, put.key);
            let actual = match seen.get(&k) {
                Some(v) => *v,
                None => self.live_snapshot_version(&k, now),
            };
            let version = next_version(put, actual)?;
            seen.insert(k, Some(version));
            versions.push(version);
        }
        for (put, &version) in puts.iter().zip(&versions) {
            self.snapshots.insert(
                id(put.owner, put.key),
                Snapshot {
                    owner: put.owner.into(),
                    key: put.key.into(),
                    version,
                    data: put.data.to_vec(),
                    updated_at: now,
                    expires_at: put.expires_at,
                },
            );
        }
        Ok(versions)
    }

    /// One operation of [`Backend::key_claim_complete_batch`]: checks,
    /// then writes (all or nothing for the one operation).
    fn claim_complete(
        &mut self,
        op: &ClaimPut<'_>,
        retention: Millis,
        now: Millis,
    ) -> Result<Claim> {
        let k = id(op.owner, op.key);
        if let Some(r) = self.keys.get(&k).filter(|r| r.expires_at > now) {
            return Ok(classify(
                &r.fingerprint,
                r.state,
                r.result.as_deref(),
                op.fingerprint,
            ));
        }
        self.put_all(op.puts, now)?;
        self.keys.insert(
            k,
            KeyRecord {
                owner: op.owner.into(),
                key: op.key.into(),
                fingerprint: op.fingerprint.to_vec(),
                state: KeyState::Completed,
                result: Some(op.result.to_vec()),
                created_at: now,
                expires_at: now.saturating_add(retention),
            },
        );
        Ok(Claim::New)
    }

    fn live_snapshot_version(&self, k: &Id, now: Millis) -> Option<u64> {
        self.snapshots
            .get(k)
            .filter(|s| live(s.expires_at, now))
            .map(|s| s.version)
    }
}

/// Puts `old` back under `k` (absent when `None`).
fn restore<V>(map: &mut BTreeMap<Id, V>, k: Id, old: Option<V>) {
    match old {
        Some(v) => {
            map.insert(k, v);
        }
        None => {
            map.remove(&k);
        }
    }
}

fn id(owner: &str, key: &str) -> Id {
    (owner.to_owned(), key.to_owned())
}

fn live(expires_at: Option<Millis>, now: Millis) -> bool {
    expires_at.is_none_or(|e| e > now)
}

impl Backend for MemoryBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn snapshot_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Snapshot>> {
        let g = self.lock();
        Ok(g.snapshots
            .get(&id(owner, key))
            .filter(|s| live(s.expires_at, now))
            .cloned())
    }

    fn commit(&self, puts: &[SnapshotPut<'_>], acks: &[i64], now: Millis) -> Result<Committed> {
        let mut g = self.lock();
        let versions = g.put_all(puts, now)?;
        let mut acked = 0;
        for i in acks {
            if let Some(it) = g.items.get_mut(i).filter(|it| it.acked_at.is_none()) {
                it.acked_at = Some(now);
                it.payload = Vec::new();
                it.lease_until = None;
                acked += 1;
            }
        }
        Ok(Committed { versions, acked })
    }

    fn key_claim_complete_batch(
        &self,
        ops: &[ClaimPut<'_>],
        retention: Millis,
        now: Millis,
    ) -> Result<Vec<Claim>> {
        let mut g = self.lock();
        // All or nothing: one operation writes nothing when it fails, and
        // what its predecessors wrote is put back from these undo logs.
        let mut old_snapshots: Vec<(Id, Option<Snapshot>)> = Vec::new();
        let mut old_keys: Vec<(Id, Option<KeyRecord>)> = Vec::new();
        let mut claims = Vec::with_capacity(ops.len());
        for op in ops {
            let (snapshots_before, key_before) = (old_snapshots.len(), old_keys.len());
            for p in op.puts {
                let k = id(p.owner, p.key);
                old_snapshots.push((k.clone(), g.snapshots.get(&k).cloned()));
            }
            let k = id(op.owner, op.key);
            old_keys.push((k.clone(), g.keys.get(&k).cloned()));
            match g.claim_complete(op, retention, now) {
                Ok(c) => claims.push(c),
                Err(e) => {
                    // This operation wrote nothing: only its predecessors'
                    // writes are undone, newest first.
                    old_snapshots.truncate(snapshots_before);
                    old_keys.truncate(key_before);
                    for (k, old) in old_snapshots.into_iter().rev() {
                        restore(&mut g.snapshots, k, old);
                    }
                    for (k, old) in old_keys.into_iter().rev() {
                        restore(&mut g.keys, k, old);
                    }
                    return Err(e);
                }
            }
        }
        Ok(claims)
    }

    fn snapshot_delete(
        &self,
        owner: &str,
        key: &str,
        expected: Option<u64>,
        now: Millis,
    ) -> Result<bool> {
        let mut g = self.lock();
        let k = id(owner, key);
        let actual = g.live_snapshot_version(&k, now);
        check_delete(owner, key, expected, actual)?;
        Ok(g.snapshots.remove(&k).is_some() && actual.is_some())
    }

    fn snapshot_list(&self, owner: &str, now: Millis) -> Result<Vec<SnapshotMeta>> {
        let g = self.lock();
        Ok(g.snapshots
            .values()
            .filter(|s| s.owner == owner && live(s.expires_at, now))
            .map(|s| SnapshotMeta {
                key: s.key.clone(),
                version: s.version,
                updated_at: s.updated_at,
                expires_at: s.expires_at,
            })
            .collect())
    }

    fn draft_save(&self, draft: &Draft, now: Millis) -> Result<DraftSaved> {
        let mut g = self.lock();
        let k = id(&draft.owner, &draft.key);
        let stored = g
            .drafts
            .get(&k)
            .filter(|d| live(d.expires_at, now))
            .map(|d| d.version);
        if let Err(stored) = draft_is_newer(stored, draft.version) {
            return Ok(DraftSaved::Stale { stored });
        }
        g.drafts.insert(k, draft.clone());
        Ok(DraftSaved::Saved)
    }

    fn draft_get(&self, owner: &str, key: &str, now: Millis) -> Result<Option<Draft>> {
        let g = self.lock();
        Ok(g.drafts
            .get(&id(owner, key))
            .filter(|d| live(d.expires_at, now))
            .cloned())
    }

    fn draft_delete(&self, owner: &str, key: &str) -> Result<bool> {
        Ok(self.lock().drafts.remove(&id(owner, key)).is_some())
    }

    fn key_claim(
        &self,
        owner: &str,
        key: &str,
        fingerprint: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<Claim> {
        let mut g = self.lock();
        let k = id(owner, key);
        if let Some(r) = g.keys.get(&k).filter(|r| r.expires_at > now) {
            return Ok(classify(
                &r.fingerprint,
                r.state,
                r.result.as_deref(),
                fingerprint,
            ));
        }
        g.keys.insert(
            k,
            KeyRecord {
                owner: owner.into(),
                key: key.into(),
                fingerprint: fingerprint.to_vec(),
                state: KeyState::InProgress,
                result: None,
                created_at: now,
                expires_at: now.saturating_add(retention),
            },
        );
        Ok(Claim::New)
    }

    fn key_complete(
        &self,
        owner: &str,
        key: &str,
        result: &[u8],
        retention: Millis,
        now: Millis,
    ) -> Result<()> {
        let mut g = self.lock();
        match g
            .keys
            .get_mut(&id(owner, key))
            .filter(|r| r.expires_at > now)
        {
            Some(r) if r.state == KeyState::InProgress => {
                r.state = KeyState::Completed;
                r.result = Some(result.to_vec());
                r.expires_at = now.saturating_add(retention);
                Ok(())
            }
            other => Err(not_in_progress(owner, key, other.is_some())),
        }
    }

    fn key_abandon(&self, owner: &str, key: &str, now: Millis) -> Result<()> {
        let mut g = self.lock();
        let k = id(owner, key);
        match g.keys.get(&k).filter(|r| r.expires_at > now) {
            Some(r) if r.state == KeyState::InProgress => {
                g.keys.remove(&k);
                Ok(())
            }
            other => Err(not_in_progress(owner, key, other.is_some())),
        }
    }

    fn key_lookup(&self, owner: &str, key: &str, now: Millis) -> Result<Option<KeyRecord>> {
        let g = self.lock();
        Ok(g.keys
            .get(&id(owner, key))
            .filter(|r| r.expires_at > now)
            .cloned())
    }

    fn enqueue(&self, item: NewItem<'_>, now: Millis) -> Result<Enqueued> {
        let mut g = self.lock();
        let k = id(item.queue, item.key);
        if let Some(&existing) = g.item_keys.get(&k) {
            return Ok(Enqueued::Duplicate(existing));
        }
        g.next_id += 1;
        let new = g.next_id;
        g.item_keys.insert(k, new);
        g.items.insert(
            new,
            Item {
                queue: item.queue.into(),
                owner: item.owner.into(),
                key: item.key.into(),
                payload: item.payload.to_vec(),
                acked_at: None,
                attempts: 0,
                not_before: now,
                lease_until: None,
                lease_token: 0,
                enqueued_at: now,
            },
        );
        Ok(Enqueued::New(new))
    }

    fn lease(
        &self,
        queue: &str,
        max: usize,
        lease: Millis,
        max_attempts: u32,
        now: Millis,
    ) -> Result<Vec<QueueItem>> {
        let mut g = self.lock();
        let mut out = Vec::new();
        let mut poison = Vec::new();
        for (&item_id, it) in g.items.iter_mut() {
            if out.len() + poison.len() >= max {
                break;
            }
            let deliverable = it.queue == queue
                && it.acked_at.is_none()
                && it.not_before <= now
                && it.lease_until.is_none_or(|l| l <= now);
            if !deliverable {
                continue;
            }
            if is_poison(it.attempts + 1, max_attempts) {
                poison.push(item_id);
                continue;
            }
            it.attempts += 1;
            it.lease_until = Some(now.saturating_add(lease));
            it.lease_token = fastrand::i64(..);
            out.push(QueueItem {
                id: item_id,
                queue: it.queue.clone(),
                owner: it.owner.clone(),
                key: it.key.clone(),
                payload: it.payload.clone(),
                attempt: it.attempts,
                lease_token: it.lease_token,
                lease_until: now.saturating_add(lease),
            });
        }
        for item_id in poison {
            if let Some(it) = g.items.remove(&item_id) {
                g.dead.insert(
                    item_id,
                    DeadLetter {
                        id: item_id,
                        queue: it.queue,
                        owner: it.owner,
                        key: it.key,
                        payload: it.payload,
                        attempts: it.attempts,
                        enqueued_at: it.enqueued_at,
                        dead_at: now,
                    },
                );
            }
        }
        Ok(out)
    }

    fn release(&self, item_id: i64, lease_token: i64, not_before: Millis) -> Result<bool> {
        let mut g = self.lock();
        match g.items.get_mut(&item_id) {
            Some(it)
                if it.acked_at.is_none()
                    && it.lease_until.is_some()
                    && it.lease_token == lease_token =>
            {
                it.lease_until = None;
                it.not_before = not_before;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn queue_counts(&self, queue: &str, now: Millis) -> Result<QueueCounts> {
        let g = self.lock();
        let mut c = QueueCounts {
            dead: g.dead.values().filter(|d| d.queue == queue).count() as u64,
            ..QueueCounts::default()
        };
        for it in g.items.values().filter(|it| it.queue == queue) {
            if it.acked_at.is_some() {
                c.acked += 1;
            } else if it.lease_until.is_some_and(|l| l > now) {
                c.leased += 1;
            } else {
                c.ready += 1;
            }
        }
        Ok(c)
    }

    fn dead_letters(&self, queue: &str, limit: usize) -> Result<Vec<DeadLetter>> {
        let g = self.lock();
        Ok(g.dead
            .values()
            .filter(|d| d.queue == queue)
            .take(limit)
            .cloned()
            .collect())
    }

    fn requeue_dead(&self, item_id: i64, now: Millis) -> Result<bool> {
        let mut g = self.lock();
        let Some(d) = g.dead.remove(&item_id) else {
            return Ok(false);
        };
        g.items.insert(
            item_id,
            Item {
                queue: d.queue,
                owner: d.owner,
                key: d.key,
                payload: d.payload,
                acked_at: None,
                attempts: 0,
                not_before: now,
                lease_until: None,
                lease_token: 0,
                enqueued_at: d.enqueued_at,
            },
        );
        Ok(true)
    }

    fn sweep(&self, now: Millis, dedup_window: Millis) -> Result<SweepReport> {
        let mut g = self.lock();
        let mut r = SweepReport::default();
        let before = g.snapshots.len();
        g.snapshots.retain(|_, s| live(s.expires_at, now));
        r.snapshots = (before - g.snapshots.len()) as u64;
        let before = g.drafts.len();
        g.drafts.retain(|_, d| live(d.expires_at, now));
        r.drafts = (before - g.drafts.len()) as u64;
        let before = g.keys.len();
        g.keys.retain(|_, k| k.expires_at > now);
        r.keys = (before - g.keys.len()) as u64;
        let old: Vec<i64> = g
            .items
            .iter()
            .filter(|(_, it)| {
                it.acked_at
                    .is_some_and(|a| a.saturating_add(dedup_window) <= now)
            })
            .map(|(&i, _)| i)
            .collect();
        r.queue_items = old.len() as u64;
        remove_items(&mut g, &old);
        Ok(r)
    }

    fn shard_acquire(
        &self,
        shard: u32,
        owner: &str,
        until: Millis,
        now: Millis,
    ) -> Result<LeaseOutcome> {
        let mut g = self.lock();
        let epoch = match g.shards.get(&shard) {
            Some(held) if held.until > now => return Ok(LeaseOutcome::Held(held.clone())),
            Some(expired) => expired.epoch + 1,
            None => 1,
        };
        let lease = ShardLease {
            shard,
            owner: owner.into(),
            epoch,
            until,
        };
        g.shards.insert(shard, lease.clone());
        Ok(LeaseOutcome::Acquired(lease))
    }

    fn shard_renew(&self, lease: &ShardLease, until: Millis) -> Result<Option<ShardLease>> {
        let mut g = self.lock();
        Ok(g.shards.get_mut(&lease.shard).and_then(|row| {
            (row.epoch == lease.epoch && row.owner == lease.owner).then(|| {
                row.until = until;
                row.clone()
            })
        }))
    }

    fn shard_release(&self, lease: &ShardLease) -> Result<bool> {
        let mut g = self.lock();
        Ok(g.shards.get_mut(&lease.shard).is_some_and(|row| {
            let mine = row.epoch == lease.epoch && row.owner == lease.owner;
            if mine {
                row.until = 0;
            }
            mine
        }))
    }

    fn shard_get(&self, shard: u32) -> Result<Option<ShardLease>> {
        Ok(self.lock().shards.get(&shard).cloned())
    }

    fn entity_commit(&self, write: &EntityWrite<'_>, now: Millis) -> Result<EntityCommit> {
        let mut g = self.lock();
        check_fence(write, g.shards.get(&write.shard).map(|l| l.epoch))?;
        let id = (write.kind.to_string(), write.key.to_string());
        let applied = g.entities.get(&id).map(|e| e.applied);
        if let Some(dup) = duplicate(write, applied) {
            return Ok(dup);
        }
        let entity = Entity {
            kind: write.kind.into(),
            key: write.key.into(),
            shard: write.shard,
            epoch: write.epoch,
            applied: applied_after(write, applied),
            data: write.data.to_vec(),
            wake_at: write.wake_at,
            updated_at: now,
        };
        g.entities.insert(id, entity);
        Ok(EntityCommit::Applied)
    }

    fn entity_get(&self, kind: &str, key: &str) -> Result<Option<Entity>> {
        let id = (kind.to_string(), key.to_string());
        Ok(self.lock().entities.get(&id).cloned())
    }

    fn entities_due(&self, shard: u32, now: Millis, limit: usize) -> Result<Vec<DueEntity>> {
        let g = self.lock();
        let mut due: Vec<DueEntity> = g
            .entities
            .values()
            .filter(|e| e.shard == shard && e.wake_at.is_some_and(|w| w <= now))
            .map(|e| DueEntity {
                kind: e.kind.clone(),
                key: e.key.clone(),
                wake_at: e.wake_at.unwrap_or(now),
            })
            .collect();
        due.sort_by(|a, b| (a.wake_at, &a.kind, &a.key).cmp(&(b.wake_at, &b.kind, &b.key)));
        due.truncate(limit);
        Ok(due)
    }

    fn forget(&self, owner: &str) -> Result<ForgetReport> {
        let mut g = self.lock();
        let mut r = ForgetReport {
            files_scrubbed: true,
            ..ForgetReport::default()
        };
        let before = g.snapshots.len();
        g.snapshots.retain(|(o, _), _| o != owner);
        r.snapshots = (before - g.snapshots.len()) as u64;
        let before = g.drafts.len();
        g.drafts.retain(|(o, _), _| o != owner);
        r.drafts = (before - g.drafts.len()) as u64;
        let before = g.keys.len();
        g.keys.retain(|(o, _), _| o != owner);
        r.keys = (before - g.keys.len()) as u64;
        let theirs: Vec<i64> = g
            .items
            .iter()
            .filter(|(_, it)| it.owner == owner)
            .map(|(&i, _)| i)
            .collect();
        r.queue_items = theirs.len() as u64;
        remove_items(&mut g, &theirs);
        let dead: Vec<i64> = g
            .dead
            .values()
            .filter(|d| d.owner == owner)
            .map(|d| d.id)
            .collect();
        for i in &dead {
            if let Some(d) = g.dead.remove(i) {
                g.item_keys.remove(&(d.queue, d.key));
            }
        }
        r.queue_items += dead.len() as u64;
        Ok(r)
    }
}

fn remove_items(g: &mut Inner, ids: &[i64]) {
    for i in ids {
        if let Some(it) = g.items.remove(i) {
            g.item_keys.remove(&(it.queue, it.key));
        }
    }
}
