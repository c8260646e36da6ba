//! The in-memory backend: the reference semantics, for tests. One mutex
//! makes every call atomic; nothing survives the process.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::backend::{Backend, SnapshotPut};
use crate::error::{Result, StoreError};
use crate::model::{
    Claim, Draft, DraftSaved, Enqueued, ForgetReport, KeyRecord, KeyState, Millis, NewItem,
    QueueCounts, QueueItem, Snapshot, SnapshotMeta, SweepReport,
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
}

#[derive(Default)]
struct Inner {
    snapshots: BTreeMap<Id, Snapshot>,
    drafts: BTreeMap<Id, Draft>,
    keys: BTreeMap<Id, KeyRecord>,
    items: BTreeMap<i64, Item>,
    /// (queue, key) -> id, for deduplication.
    item_keys: BTreeMap<Id, i64>,
    next_id: i64,
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

    fn snapshot_put(&self, put: SnapshotPut<'_>, now: Millis) -> Result<u64> {
        let mut g = self.lock();
        let k = id(put.owner, put.key);
        let actual = g
            .snapshots
            .get(&k)
            .filter(|s| live(s.expires_at, now))
            .map(|s| s.version);
        if actual != put.expected {
            return Err(StoreError::Conflict {
                owner: put.owner.into(),
                key: put.key.into(),
                expected: put.expected,
                actual,
            });
        }
        let version = actual.unwrap_or(0) + 1;
        g.snapshots.insert(
            k,
            Snapshot {
                owner: put.owner.into(),
                key: put.key.into(),
                version,
                data: put.data.to_vec(),
                updated_at: now,
                expires_at: put.expires_at,
            },
        );
        Ok(version)
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
        let actual = g
            .snapshots
            .get(&k)
            .filter(|s| live(s.expires_at, now))
            .map(|s| s.version);
        if let Some(e) = expected {
            if actual != Some(e) {
                return Err(StoreError::Conflict {
                    owner: owner.into(),
                    key: key.into(),
                    expected,
                    actual,
                });
            }
        }
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
        if let Some(old) = g.drafts.get(&k).filter(|d| live(d.expires_at, now)) {
            if old.version >= draft.version {
                return Ok(DraftSaved::Stale {
                    stored: old.version,
                });
            }
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
            },
        );
        Ok(Enqueued::New(new))
    }

    fn lease(&self, queue: &str, max: usize, lease: Millis, now: Millis) -> Result<Vec<QueueItem>> {
        let mut g = self.lock();
        let mut out = Vec::new();
        for (&item_id, it) in g.items.iter_mut() {
            if out.len() >= max {
                break;
            }
            let deliverable = it.queue == queue
                && it.acked_at.is_none()
                && it.not_before <= now
                && it.lease_until.is_none_or(|l| l <= now);
            if !deliverable {
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
        Ok(out)
    }

    fn ack(&self, ids: &[i64], now: Millis) -> Result<u64> {
        let mut g = self.lock();
        let mut n = 0;
        for i in ids {
            if let Some(it) = g.items.get_mut(i).filter(|it| it.acked_at.is_none()) {
                it.acked_at = Some(now);
                it.payload = Vec::new();
                it.lease_until = None;
                n += 1;
            }
        }
        Ok(n)
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
        let mut c = QueueCounts::default();
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
