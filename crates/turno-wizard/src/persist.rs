//! Where a session outlives the process: its chart snapshot after every
//! macrostep, its draft at every completed step, and the draft-link index,
//! all in the wizard's SQLite file through turno-store.
//!
//! Writes go through one writer thread, in order, so a turn never waits on
//! the disk; a caller that must not act before a write is durable (the
//! charge, which must not leave before the snapshot holding its key and the
//! `sending` state) waits on the write's receipt off-turn.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;
use turno_store::{Store, StoreError};

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

fn writer(store: Store, ttl: Duration, rx: mpsc::Receiver<Job>) {
    let mut versions: HashMap<String, Option<u64>> = HashMap::new();
    while let Ok(job) = rx.recv() {
        match job {
            Job::Put {
                sid,
                data,
                draft,
                done,
            } => {
                let r = put(&store, &mut versions, &sid, &data, ttl).and_then(|()| match &draft {
                    Some((v, d)) => store.save_draft(&sid, DRAFT, *v, d, Some(ttl)).map(|_| ()),
                    None => Ok(()),
                });
                if let Some(done) = done {
                    let _ = done.send(r.map_err(|e| e.to_string()));
                }
            }
            Job::Link { sid, token } => {
                let _ =
                    store.put_snapshot(&link_owner(&token), "sid", None, sid.as_bytes(), Some(ttl));
            }
            Job::Forget { sid, token, done } => {
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
