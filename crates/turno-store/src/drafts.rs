//! Drafts with the mixed policy of the signup wizard: saved **locally at
//! every change** (cheap, on this machine: SQLite) and **remotely at every
//! completed step** (shared: PostgreSQL, or any other store); resumed from
//! whichever copy is newer.
//!
//! A draft's version is its change counter, so "newest" is a comparison of
//! versions, not of clocks: two machines' clocks never decide. Neither copy
//! ever goes backwards (a save of an older or equal version is refused as
//! [`DraftSaved::Stale`]).

use std::time::Duration;

use crate::error::Result;
use crate::model::{Draft, DraftSaved};
use crate::store::Store;

/// Which copy a draft was resumed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The local store.
    Local,
    /// The remote store.
    Remote,
}

/// The local-and-remote draft policy. See the [module docs](self).
///
/// ```
/// use turno_store::{Drafts, Source, Store};
///
/// let drafts = Drafts::new(Store::memory(), Store::memory());
/// drafts.changed("alice", "signup", 1, b"email typed").unwrap();      // local only
/// drafts.step_completed("alice", "signup", 2, b"step 1 done").unwrap(); // local and remote
/// drafts.changed("alice", "signup", 3, b"name half typed").unwrap();
/// let (draft, from) = drafts.resume("alice", "signup").unwrap().unwrap();
/// assert_eq!((draft.version, from), (3, Source::Local));
/// ```
#[derive(Clone, Debug)]
pub struct Drafts {
    local: Store,
    remote: Store,
    ttl: Option<Duration>,
}

impl Drafts {
    /// Drafts kept in `local` at every change and in `remote` at every step.
    pub fn new(local: Store, remote: Store) -> Self {
        Drafts {
            local,
            remote,
            ttl: None,
        }
    }

    /// Every saved copy expires this long after its save (an abandoned
    /// wizard does not stay forever).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The local store.
    pub fn local(&self) -> &Store {
        &self.local
    }

    /// The remote store.
    pub fn remote(&self) -> &Store {
        &self.remote
    }

    /// A change: saved locally.
    pub fn changed(&self, owner: &str, key: &str, version: u64, data: &[u8]) -> Result<DraftSaved> {
        self.local.save_draft(owner, key, version, data, self.ttl)
    }

    /// A completed step: saved locally, then remotely. Returns the remote
    /// outcome; a remote error is returned after the local copy is saved, so
    /// the step is never lost on this machine.
    pub fn step_completed(
        &self,
        owner: &str,
        key: &str,
        version: u64,
        data: &[u8],
    ) -> Result<DraftSaved> {
        self.local.save_draft(owner, key, version, data, self.ttl)?;
        self.remote.save_draft(owner, key, version, data, self.ttl)
    }

    /// The newest live copy and where it came from (local wins a tie: it
    /// is the same version and closer). A failing remote is an error, not
    /// a silent fall-back to an older local copy.
    pub fn resume(&self, owner: &str, key: &str) -> Result<Option<(Draft, Source)>> {
        let local = self.local.get_draft(owner, key)?;
        let remote = self.remote.get_draft(owner, key)?;
        Ok(match (local, remote) {
            (Some(l), Some(r)) if r.version > l.version => Some((r, Source::Remote)),
            (Some(l), _) => Some((l, Source::Local)),
            (None, Some(r)) => Some((r, Source::Remote)),
            (None, None) => None,
        })
    }

    /// Deletes both copies of one draft; true when either existed.
    pub fn discard(&self, owner: &str, key: &str) -> Result<bool> {
        let l = self.local.delete_draft(owner, key)?;
        let r = self.remote.delete_draft(owner, key)?;
        Ok(l || r)
    }
}
