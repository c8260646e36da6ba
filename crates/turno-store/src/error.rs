//! What can go wrong, as types: every fallible call of this crate returns a
//! [`StoreError`] that names the problem and the record it was about.

use thiserror::Error;

/// The result type of this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What went wrong. Variants say whether the operation took effect:
/// everything but [`StoreError::CommitUnknown`] means *it did not* (the
/// transaction was rolled back whole), so nothing is ever half-written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Optimistic concurrency: a snapshot put or delete named a version that
    /// is no longer the stored one. Read, merge, retry.
    #[error(
        "version conflict on snapshot {owner}/{key}: expected {expected:?}, stored {actual:?}"
    )]
    Conflict {
        /// The snapshot's owner.
        owner: String,
        /// The snapshot's key.
        key: String,
        /// The version the caller expected (`None`: "must not exist yet").
        expected: Option<u64>,
        /// The version actually stored (`None`: absent or expired).
        actual: Option<u64>,
    },
    /// An entity write whose writer's lease is no longer its shard's: a
    /// newer owner took the shard over (or it was never owned). Nothing was
    /// written; the writer must stop acting as the shard's owner.
    #[error("fenced: shard {shard} is at epoch {current:?}, the write carries epoch {epoch}")]
    Fenced {
        /// The shard.
        shard: u32,
        /// The epoch the write carried.
        epoch: u64,
        /// The shard's current epoch (`None`: never owned).
        current: Option<u64>,
    },
    /// `complete` or `abandon` on an idempotency key that has no claim in
    /// progress.
    #[error("idempotency key {owner}/{key} is not in progress ({state})")]
    NotInProgress {
        /// The key's owner.
        owner: String,
        /// The key.
        key: String,
        /// What it is instead: `"absent"` or `"completed"`.
        state: &'static str,
    },
    /// An argument the store cannot accept (an empty owner or key, a
    /// duration out of range, a queue name too long...).
    #[error("invalid {what}: {why}")]
    Invalid {
        /// Which argument.
        what: &'static str,
        /// Why it is refused.
        why: String,
    },
    /// The database (or its disk, or its size limit) is full. The
    /// transaction was rolled back; free space or raise the limit and retry.
    #[error("storage full: {0}")]
    Full(String),
    /// The database stayed locked by another connection or process for
    /// longer than the busy timeout (SQLite), or a lock wait timed out
    /// (PostgreSQL). Nothing was written; retrying later is safe.
    #[error("database busy (locked by another connection): {0}")]
    Busy(String),
    /// A concurrent transaction got in the way (a deadlock, a serialization
    /// failure, a row deleted between two statements): rolled back whole;
    /// the store already retried a few times. Retrying is safe.
    #[error("contention with a concurrent transaction (rolled back): {0}")]
    Contention(String),
    /// The connection to the server was lost before the transaction's
    /// commit was sent: the server rolled it back. Retrying is safe (the
    /// store already retried once on a fresh connection).
    #[error("connection lost (transaction rolled back): {0}")]
    ConnectionLost(String),
    /// The connection was lost while the commit was in flight: the
    /// transaction may or may not have committed. Resolve by reading (a
    /// snapshot's version, a key's state, a queue item by its key).
    #[error("connection lost during commit (outcome unknown): {0}")]
    CommitUnknown(String),
    /// The stored data does not match what this version of the store
    /// expects (a schema from the future, a corrupt row).
    #[error("corrupt or incompatible store: {0}")]
    Corrupt(String),
    /// Any other database error, with the database's own message.
    #[error("database error: {0}")]
    Database(String),
    /// A file-system error around the database (creating its directory).
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

impl StoreError {
    /// True when the operation certainly did not take effect and trying it
    /// again later may succeed (busy, full, connection lost before commit).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Busy(_)
                | StoreError::Full(_)
                | StoreError::Contention(_)
                | StoreError::ConnectionLost(_)
        )
    }

    pub(crate) fn invalid(what: &'static str, why: impl Into<String>) -> Self {
        StoreError::Invalid {
            what,
            why: why.into(),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => StoreError::Full(e.to_string()),
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
                StoreError::Busy(e.to_string())
            }
            Some(ErrorCode::DatabaseCorrupt) | Some(ErrorCode::NotADatabase) => {
                StoreError::Corrupt(e.to_string())
            }
            _ => StoreError::Database(e.to_string()),
        }
    }
}
