//! The gateway's books: a charge is taken at most once per idempotency key.
//!
//! The ledger lives in a turno-store [`Store`]: the claim of the key, the
//! ledger entry and the key's completion with the receipt are one
//! transaction ([`Store::claim_and_complete`]), so a charge is in the ledger
//! exactly when its key says so, and a process that dies between two
//! charges leaves nothing half done. The store is the gateway's database:
//! it outlives the gateway's actor (a crash) and its process (a restart on
//! the same file).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use turno_store::{Claim, ClaimAndComplete, KeyState, SnapshotWrite, Store, StoreError};

/// The client every key belongs to in the store's key table.
const OWNER: &str = "gateway";
/// The owner of the ledger's entries in the store's snapshot table.
const LEDGER: &str = "ledger";

/// The request fields a receipt repeats: what describes the charge, never a
/// payment token or the payer's contact details.
pub const RECEIPT_FIELDS: [&str; 5] = ["amount", "amount_cents", "currency", "plan", "last4"];

/// What a charge did.
#[derive(Clone, Debug, PartialEq)]
pub enum Charged {
    /// Charged now: the receipt.
    New(Value),
    /// Charged before with this key and the same request: the stored
    /// receipt, nothing taken again.
    Replayed(Value),
    /// Another request with this key is being charged right now.
    InProgress,
    /// This key was used for another request (another body).
    Mismatch,
    /// The gateway refused without charging (an injected decline).
    Declined,
    /// The gateway failed without charging: its store failed, or an
    /// injected server error.
    Failed(String),
}

impl Charged {
    /// Whether money was taken for this key (now or before).
    pub fn is_charged(&self) -> bool {
        matches!(self, Charged::New(_) | Charged::Replayed(_))
    }

    /// The outcome as an invoked service's result, the shape turno-chart's
    /// idempotent submit reads (`turno_chart::submit`): `Ok(receipt)` when
    /// charged, `Err({"rejected": ...})` for an explicit refusal (the user
    /// may change the request), `Err({"server_error": ...})` otherwise (the
    /// charge did not happen, or is happening under another request).
    pub fn into_result(self) -> Result<Value, Value> {
        match self {
            Charged::New(r) | Charged::Replayed(r) => Ok(r),
            Charged::Declined => Err(json!({"rejected": "declined"})),
            Charged::Mismatch => Err(json!({"rejected": "key used for another request"})),
            Charged::InProgress => Err(json!({"server_error": "in progress"})),
            Charged::Failed(why) => Err(json!({"server_error": why})),
        }
    }
}

/// What a lookup by key found.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// Charged: the receipt.
    Charged(Value),
    /// Claimed, not completed yet.
    InProgress,
    /// Never charged with this key (or past the store's retention).
    Unknown,
    /// The gateway failed to look: its store failed, or an injected fault.
    Failed(String),
}

impl Found {
    /// The answer as an invoked service's result, the shape turno-chart's
    /// idempotent submit reads: `Ok({"found": receipt})` or
    /// `Ok({"found": null})` when the gateway knows, `Err({"server_error":
    /// ...})` when it cannot say.
    pub fn into_result(self) -> Result<Value, Value> {
        match self {
            Found::Charged(r) => Ok(json!({ "found": r })),
            Found::Unknown => Ok(json!({ "found": null })),
            Found::InProgress => Err(json!({"server_error": "in progress"})),
            Found::Failed(why) => Err(json!({ "server_error": why })),
        }
    }
}

/// The gateway's books over a [`Store`]. Clones share the store.
///
/// One gateway process writes a ledger at a time (receipt ids are numbered
/// in the process, on from the highest the store holds when the ledger is
/// opened; a charge is numbered before the store says whether it is new,
/// so ids may skip, never repeat).
///
/// ```
/// use serde_json::json;
/// use turno_gateway::{Charged, Found, Ledger};
/// use turno_store::Store;
///
/// let ledger = Ledger::open(Store::memory()).unwrap();
/// let first = ledger.charge("key-1", &json!({"amount": 42}));
/// let Charged::New(receipt) = first else { panic!("{first:?}") };
/// assert_eq!(receipt, json!({"id": "ch_1", "key": "key-1", "amount": 42}));
/// // A retry with the key replays the receipt; nothing is taken twice.
/// assert_eq!(ledger.charge("key-1", &json!({"amount": 42})), Charged::Replayed(receipt.clone()));
/// assert_eq!(ledger.lookup("key-1"), Found::Charged(receipt));
/// assert_eq!(ledger.charges().unwrap().len(), 1);
/// ```
#[derive(Clone)]
pub struct Ledger {
    store: Store,
    taken: Arc<AtomicU64>,
}

impl Ledger {
    /// The ledger kept in `store` (empty or as a previous gateway left it).
    pub fn open(store: Store) -> Result<Ledger, StoreError> {
        let taken = store
            .list_snapshots(LEDGER)?
            .iter()
            .filter_map(|m| m.key.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        Ok(Ledger {
            store,
            taken: Arc::new(AtomicU64::new(taken)),
        })
    }

    /// The store the ledger is kept in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Charges `request` under `key`, at most once per key. The request's
    /// JSON text is its fingerprint: the same key with another request is
    /// [`Charged::Mismatch`].
    pub fn charge(&self, key: &str, request: &Value) -> Charged {
        self.charge_batch(&[(key.to_string(), request.clone())])
            .pop()
            .unwrap_or_else(|| Charged::Failed("a batch of one charge answered none".into()))
    }

    /// Charges many requests in one transaction of the store (one wait for
    /// the disk for all of them), each as [`Ledger::charge`] would, in
    /// order: the same key twice is charged once and replayed once. If the
    /// transaction fails, every one is [`Charged::Failed`] and nothing was
    /// taken.
    pub fn charge_batch(&self, requests: &[(String, Value)]) -> Vec<Charged> {
        let first = self.taken.load(Ordering::Relaxed) + 1;
        let mut receipts = Vec::with_capacity(requests.len());
        let ops: Vec<ClaimAndComplete> = requests
            .iter()
            .enumerate()
            .map(|(i, (key, request))| {
                let n = first + i as u64;
                let r = receipt(n, key, request);
                let bytes = r.to_string().into_bytes();
                receipts.push(r);
                ClaimAndComplete {
                    owner: OWNER.into(),
                    key: key.clone(),
                    fingerprint: request.to_string().into_bytes(),
                    result: bytes.clone(),
                    writes: vec![SnapshotWrite::new(LEDGER, entry_name(n), None, bytes)],
                }
            })
            .collect();
        let claims = match self.store.claim_and_complete_batch(&ops) {
            Ok(c) => c,
            Err(e) => {
                let why = e.to_string();
                return requests
                    .iter()
                    .map(|_| Charged::Failed(why.clone()))
                    .collect();
            }
        };
        self.taken
            .store(first + requests.len() as u64 - 1, Ordering::Relaxed);
        claims
            .into_iter()
            .zip(receipts)
            .map(|(claim, r)| match claim {
                Claim::New => Charged::New(r),
                Claim::InProgress => Charged::InProgress,
                Claim::FingerprintMismatch => Charged::Mismatch,
                Claim::Completed(stored) => Charged::Replayed(parse(&stored)),
            })
            .collect()
    }

    /// What the gateway knows of `key`.
    pub fn lookup(&self, key: &str) -> Found {
        match self.store.lookup(OWNER, key) {
            Err(e) => Found::Failed(e.to_string()),
            Ok(None) => Found::Unknown,
            Ok(Some(r)) => match (r.state, r.result) {
                (KeyState::Completed, Some(bytes)) => Found::Charged(parse(&bytes)),
                _ => Found::InProgress,
            },
        }
    }

    /// Every charge taken, as receipts in the order taken: the money
    /// actually taken, read from the store (not a counter).
    pub fn charges(&self) -> Result<Vec<Value>, StoreError> {
        let mut numbered = Vec::new();
        for meta in self.store.list_snapshots(LEDGER)? {
            if let Some(s) = self.store.get_snapshot(LEDGER, &meta.key)? {
                let n = meta.key.parse::<u64>().unwrap_or(u64::MAX);
                numbered.push((n, parse(&s.data)));
            }
        }
        numbered.sort_by_key(|(n, _)| *n);
        Ok(numbered.into_iter().map(|(_, r)| r).collect())
    }

    /// How many charges were taken under `key` (0 or 1 when the gateway
    /// keeps its promise).
    pub fn charges_for(&self, key: &str) -> Result<usize, StoreError> {
        Ok(self.charges()?.iter().filter(|r| r["key"] == key).count())
    }
}

/// Ledger entries are named by their number, zero-padded so the store's
/// listing is in the order taken.
fn entry_name(n: u64) -> String {
    format!("{n:012}")
}

fn receipt(n: u64, key: &str, request: &Value) -> Value {
    let mut r = Map::new();
    r.insert("id".into(), Value::String(format!("ch_{n}")));
    r.insert("key".into(), Value::String(key.to_string()));
    for field in RECEIPT_FIELDS {
        if let Some(v) = request.get(field) {
            r.insert(field.into(), v.clone());
        }
    }
    Value::Object(r)
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_used_for_another_request_is_a_mismatch_and_takes_nothing() {
        let l = Ledger::open(Store::memory()).unwrap();
        assert!(l.charge("k", &json!({"amount": 1})).is_charged());
        assert_eq!(l.charge("k", &json!({"amount": 2})), Charged::Mismatch);
        assert_eq!(l.charges().unwrap().len(), 1);
        assert_eq!(l.charges_for("k").unwrap(), 1);
        assert_eq!(l.lookup("other"), Found::Unknown);
    }

    #[test]
    fn receipts_number_on_from_what_the_store_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.db");
        {
            let l = Ledger::open(Store::sqlite(&path).unwrap()).unwrap();
            l.charge("a", &json!({"amount": 1}));
            l.charge("b", &json!({"amount": 2, "token": "tok_secret"}));
        }
        let l = Ledger::open(Store::sqlite(&path).unwrap()).unwrap();
        let Charged::New(r) = l.charge("c", &json!({"amount": 3})) else {
            panic!("a new key charges")
        };
        assert_eq!(r["id"], "ch_3");
        let all = l.charges().unwrap();
        let keys: Vec<&str> = all.iter().map(|r| r["key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert!(
            all[1].get("token").is_none(),
            "a receipt never repeats a token"
        );
    }

    #[test]
    fn a_batch_charges_each_key_once_in_one_transaction() {
        let l = Ledger::open(Store::memory()).unwrap();
        let req = |k: &str, amount: u64| (k.to_string(), json!({"amount": amount}));
        let out = l.charge_batch(&[req("a", 1), req("b", 2), req("a", 1), req("a", 9)]);
        assert!(matches!(&out[0], Charged::New(r) if r["id"] == "ch_1"));
        assert!(matches!(&out[1], Charged::New(r) if r["id"] == "ch_2"));
        assert_eq!(
            out[2],
            Charged::Replayed(json!({"id": "ch_1", "key": "a", "amount": 1}))
        );
        assert_eq!(out[3], Charged::Mismatch);
        assert_eq!(l.charges().unwrap().len(), 2);
        // Numbers go on past the batch's (ids may skip, never repeat).
        let Charged::New(r) = l.charge("c", &json!({"amount": 3})) else {
            panic!("a new key charges")
        };
        assert_eq!(r["id"], "ch_5");
        let reopened = Ledger::open(l.store().clone()).unwrap();
        let Charged::New(r) = reopened.charge("d", &json!({"amount": 4})) else {
            panic!("a new key charges")
        };
        assert_eq!(r["id"], "ch_6", "numbered on from the highest stored");
        assert!(l.charge_batch(&[]).is_empty());
    }

    #[test]
    fn results_follow_the_submit_contract() {
        assert_eq!(
            Charged::Declined.into_result(),
            Err(json!({"rejected": "declined"}))
        );
        assert_eq!(Found::Unknown.into_result(), Ok(json!({"found": null})));
        assert!(Charged::Failed("disk".into())
            .into_result()
            .unwrap_err()
            .get("server_error")
            .is_some());
    }
}
