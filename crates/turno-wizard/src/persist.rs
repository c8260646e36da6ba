//! Where a session outlives the process: its chart snapshot after every
//! macrostep, its draft at every completed step, and the draft-link index,
//! all in the wizard's SQLite file through turno-store.
//!
//! Writes go through one writer thread, in order, so a turn never waits on
//! the disk; a caller that must not act before a write is durable (the
//! charge, which must not leave before the snapshot holding its key and the
//! `sending` state) waits on the write's receipt off-turn.
//!
//! **Group commit.** The writer takes every snapshot queued while it was
//! busy and commits them in one transaction (one fsync for all of them):
//! many sessions' writes share the disk's wait, and each receipt is sent
//! only once its transaction is on disk. A session with several snapshots
//! in one group has its newest written (each snapshot is the whole state,
//! and a later one supersedes an earlier one); every one of its receipts
//! waits for that write. Links and forgets keep their place in the order:
//! the group before them is committed first.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;
use turno_store::{SnapshotWrite, Store, StoreError};

/// The key of a session's chart snapshot.
pub const CHART: &str = "chart";
/// The key of a session's draft.
pub const DRAFT: &str = "signup";

/// What is stored for one session: the chart snapshot (no volatile field
/// is ever in its context) and the session's own bookkeeping.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Persisted {
    /// Macrosteps taken: the anti-replay revision.
    pub rev: u64,
    /// The draft-link token.
    pub link: String,
    /// The chart, as `turno_chart::persist` writes it.
    pub chart: Value,
}

/// The owner under which a draft-link token is indexed.
pub fn link_owner(token: &str) -> String {
    format!("link-{token}")
}

enum Job {
    Put {
        sid: String,
        data: Vec<u8>,
        draft: Option<(u64, Vec<u8>)>,
        done: Option<oneshot::Sender<Result<(), String>>>,
    },
    Link {
        sid: String,
        token: String,
    },
    Forget {
        sid: String,
        token: String,
        done: oneshot::Sender<Result<(), String>>,
    },
}

/// The writer thread's handle (cheap to clone).
#[derive(Clone)]
pub struct Persister {
    tx: mpsc::Sender<Job>,
}

impl Persister {
    /// Starts the writer on `store`; entries expire after `ttl`.
    pub fn start(store: Store, ttl: Duration) -> Persister {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("turno-wizard-persist".into())
            .spawn(move || writer(store, ttl, rx))
            .expect("spawn the writer thread");
        Persister { tx }
    }

    /// Queues a snapshot (and a draft, at a completed step); the receiver
    /// says when it is durable.
    pub fn put(
        &self,
        sid: &str,
        p: &Persisted,
        draft: Option<Value>,
    ) -> oneshot::Receiver<Result<(), String>> {
        let (done, rx) = oneshot::channel();
        let data = serde_json::to_vec(p).expect("a snapshot serializes");
        let draft = draft.map(|d| (p.rev, d.to_string().into_bytes()));
        let _ = self.tx.send(Job::Put {
            sid: sid.into(),
            data,
            draft,
            done: Some(done),
        });
        rx
    }

    /// Indexes a draft-link token.
    pub fn link(&self, sid: &str, token: &str) {
        let _ = self.tx.send(Job::Link {
            sid: sid.into(),
            token: token.into(),
        });
    }

    /// Removes everything of a session (after the writes queued before).
    pub fn forget(&self, sid: &str, token: &str) -> oneshot::Receiver<Result<(), String>> {
        let (done, rx) = oneshot::channel();
        let _ = self.tx.send(Job::Forget {
            sid: sid.into(),
            token: token.into(),
            done,
        });
        rx
    }
}

/// The most jobs the writer takes at once: a bound on one transaction.
const MAX_GROUP: usize = 512;

/// Snapshot puts gathered for one transaction.
#[derive(Default)]
struct Group {
    /// Per session, in first-queued order: the newest snapshot, the newest
    /// draft, and every receipt waiting for them.
    sessions: Vec<Pending>,
    index: HashMap<String, usize>,
}

struct Pending {
    sid: String,
    data: Vec<u8>,
    draft: Option<(u64, Vec<u8>)>,
    done: Vec<oneshot::Sender<Result<(), String>>>,
}

impl Group {
    fn add(
        &mut self,
        sid: String,
        data: Vec<u8>,
        draft: Option<(u64, Vec<u8>)>,
        done: Option<oneshot::Sender<Result<(), String>>>,
    ) {
        let i = *self.index.entry(sid.clone()).or_insert_with(|| {
            self.sessions.push(Pending {
                sid,
                data: Vec::new(),
                draft: None,
                done: Vec::new(),
            });
            self.sessions.len() - 1
        });
        let p = &mut self.sessions[i];
        p.data = data;
        if let Some((v, d)) = draft {
            if p.draft.as_ref().is_none_or(|(old, _)| *old < v) {
                p.draft = Some((v, d));
            }
        }
        p.done.extend(done);
    }

    /// Commits the group's snapshots in one transaction, then its drafts,
    /// and sends every receipt.
    fn flush(&mut self, store: &Store, versions: &mut HashMap<String, Option<u64>>, ttl: Duration) {
        if self.sessions.is_empty() {
            return;
        }
        let sessions = std::mem::take(&mut self.sessions);
        self.index.clear();
        let results = commit_group(store, versions, &sessions, ttl);
        for (p, r) in sessions.into_iter().zip(results) {
            let r = r.and_then(|()| match &p.draft {
                Some((v, d)) => store
                    .save_draft(&p.sid, DRAFT, *v, d, Some(ttl))
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                None => Ok(()),
            });
            for done in p.done {
                let _ = done.send(r.clone());
            }
        }
    }
}

/// One transaction for every session's snapshot; if another writer got in
/// the way (a conflict: an older server instance's last write), each
/// session is written alone, as [`put`] resolves it.
fn commit_group(
    store: &Store,
    versions: &mut HashMap<String, Option<u64>>,
    sessions: &[Pending],
    ttl: Duration,
) -> Vec<Result<(), String>> {
    let mut writes = Vec::with_capacity(sessions.len());
    for p in sessions {
        let expected = match versions.get(&p.sid) {
            Some(v) => *v,
            None => match store.get_snapshot(&p.sid, CHART) {
                Ok(s) => s.map(|s| s.version),
                Err(e) => return sessions.iter().map(|_| Err(e.to_string())).collect(),
            },
        };
        writes.push(SnapshotWrite {
            owner: p.sid.clone(),
            key: CHART.into(),
            expected,
            data: p.data.clone(),
            ttl: Some(ttl),
        });
    }
    match store.commit(&writes, &[]) {
        Ok(new) => {
            for (p, v) in sessions.iter().zip(new) {
                versions.insert(p.sid.clone(), Some(v));
            }
            sessions.iter().map(|_| Ok(())).collect()
        }
        Err(StoreError::Conflict { .. }) => sessions
            .iter()
            .map(|p| {
                versions.remove(&p.sid);
                put(store, versions, &p.sid, &p.data, ttl).map_err(|e| e.to_string())
            })
            .collect(),
        Err(e) => sessions.iter().map(|_| Err(e.to_string())).collect(),
    }
}

fn writer(store: Store, ttl: Duration, rx: mpsc::Receiver<Job>) {
    let mut versions: HashMap<String, Option<u64>> = HashMap::new();
    let mut group = Group::default();
    while let Ok(first) = rx.recv() {
        // Everything queued meanwhile joins this round.
        let round = std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok()));
        for job in round.take(MAX_GROUP) {
            match job {
                Job::Put {
                    sid,
                    data,
                    draft,
                    done,
                } => group.add(sid, data, draft, done),
                Job::Link { sid, token } => {
                    group.flush(&store, &mut versions, ttl);
                    let _ = store.put_snapshot(
                        &link_owner(&token),
                        "sid",
                        None,
                        sid.as_bytes(),
                        Some(ttl),
                    );
                }
                Job::Forget { sid, token, done } => {
                    group.flush(&store, &mut versions, ttl);
                    versions.remove(&sid);
                    let r = store
                        .forget(&sid)
                        .and_then(|_| store.forget(&link_owner(&token)))
                        .map(|_| ())
                        .map_err(|e| e.to_string());
                    let _ = done.send(r);
                }
            }
        }
        group.flush(&store, &mut versions, ttl);
    }
}

fn put(
    store: &Store,
    versions: &mut HashMap<String, Option<u64>>,
    sid: &str,
    data: &[u8],
    ttl: Duration,
) -> Result<(), StoreError> {
    let expected = match versions.get(sid) {
        Some(v) => *v,
        None => store.get_snapshot(sid, CHART)?.map(|s| s.version),
    };
    match store.put_snapshot(sid, CHART, expected, data, Some(ttl)) {
        Ok(v) => {
            versions.insert(sid.into(), Some(v));
            Ok(())
        }
        Err(StoreError::Conflict { .. }) => {
            // Someone else wrote (an older server instance's last write):
            // ours is newer, as this writer only ever goes forward.
            let now = store.get_snapshot(sid, CHART)?.map(|s| s.version);
            let v = store.put_snapshot(sid, CHART, now, data, Some(ttl))?;
            versions.insert(sid.into(), Some(v));
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Loads a session (None when absent, expired or forgotten).
pub fn load(store: &Store, sid: &str) -> Result<Option<Persisted>, StoreError> {
    Ok(store
        .get_snapshot_json::<Persisted>(sid, CHART)?
        .map(|(_, p)| p))
}

/// The session a draft-link token opens.
pub fn resolve_link(store: &Store, token: &str) -> Result<Option<String>, StoreError> {
    Ok(store
        .get_snapshot(&link_owner(token), "sid")?
        .and_then(|s| String::from_utf8(s.data).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(rev: u64) -> Persisted {
        Persisted {
            rev,
            link: "l".into(),
            chart: serde_json::json!({ "rev": rev }),
        }
    }

    #[test]
    fn a_group_commits_every_sessions_newest_snapshot_and_answers_every_receipt() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path().join("w.db")).unwrap();
        let p = Persister::start(store.clone(), Duration::from_secs(60));
        assert_eq!(
            p.put("s3", &snapshot(0), None).blocking_recv().unwrap(),
            Ok(())
        );
        // Another writer (an older server instance) writes behind the
        // persister's back: the next group's transaction conflicts, and each
        // session is written alone.
        let other = Store::sqlite(dir.path().join("w.db")).unwrap();
        other
            .put_snapshot("s3", CHART, Some(1), b"older", None)
            .unwrap();
        let mut receipts = Vec::new();
        for rev in 1..=20 {
            for s in 0..8 {
                let draft = (rev % 5 == 0).then(|| serde_json::json!({ "at": rev }));
                receipts.push(p.put(&format!("s{s}"), &snapshot(rev), draft));
            }
        }
        for r in receipts {
            assert_eq!(r.blocking_recv().unwrap(), Ok(()));
        }
        for s in 0..8 {
            let got = load(&store, &format!("s{s}")).unwrap().unwrap();
            assert_eq!(got.rev, 20, "session s{s} holds its newest snapshot");
            let draft = store.get_draft(&format!("s{s}"), DRAFT).unwrap().unwrap();
            assert_eq!(draft.version, 20);
        }
        // Later writes go on from the versions the group wrote.
        assert_eq!(
            p.put("s3", &snapshot(21), None).blocking_recv().unwrap(),
            Ok(())
        );
        assert_eq!(load(&store, "s3").unwrap().unwrap().rev, 21);
    }
}
