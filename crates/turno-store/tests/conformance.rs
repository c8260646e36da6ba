//! The same behaviour on every backend: each check below runs on memory,
//! SQLite and (feature `postgres`) a real PostgreSQL server.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::*;
use turno_store::{
    Claim, ClaimAndComplete, DraftSaved, Enqueued, EntityCommit, EntityWrite, KeyState,
    LeaseOutcome, ManualClock, ShardLease, SnapshotWrite, Store, StoreError,
};

struct Fixture {
    store: Store,
    clock: Arc<ManualClock>,
    /// Another handle on the same database (a new connection; for SQLite a
    /// new backend on the same file, as a second process would have).
    reopen: Box<dyn Fn() -> Store + Send + Sync>,
    _dir: Option<tempfile::TempDir>,
}

fn memory_fixture() -> Fixture {
    let clock = ManualClock::new(T0);
    let store = memory(clock.clone());
    let s2 = store.clone();
    Fixture {
        store,
        clock,
        reopen: Box::new(move || s2.clone()),
        _dir: None,
    }
}

fn sqlite_fixture() -> Fixture {
    let dir = tempdir();
    let path = dir.path().join("store.db");
    let clock = ManualClock::new(T0);
    let store = sqlite_at(path.clone(), clock.clone());
    let c2 = clock.clone();
    Fixture {
        store,
        clock,
        reopen: Box::new(move || sqlite_at(path.clone(), c2.clone())),
        _dir: Some(dir),
    }
}

#[cfg(feature = "postgres")]
fn pg_fixture() -> Option<Fixture> {
    let url = pg_url()?;
    let clock = ManualClock::new(T0);
    let open = {
        let clock = clock.clone();
        move || {
            Store::new(turno_store::postgres::PgBackend::connect(&url).expect("connect"))
                .with_clock(clock.clone())
        }
    };
    Some(Fixture {
        store: open(),
        clock,
        reopen: Box::new(open),
        _dir: None,
    })
}

macro_rules! on_every_backend {
    ($($check:ident),* $(,)?) => {
        mod memory_backend {
            $( #[test] fn $check() { super::$check(super::memory_fixture()) } )*
        }
        mod sqlite_backend {
            $( #[test] fn $check() { super::$check(super::sqlite_fixture()) } )*
        }
        #[cfg(feature = "postgres")]
        mod postgres_backend {
            $( #[test] fn $check() { if let Some(f) = super::pg_fixture() { super::$check(f) } } )*
        }
    };
}

on_every_backend!(
    snapshot_versions_and_conflicts,
    snapshot_list_expiry_and_sweep,
    drafts_never_go_backwards,
    idempotency_keys_follow_the_draft,
    idempotency_retention_window,
    concurrent_claimers_exactly_one_new,
    queue_dedup_lease_ack,
    queue_redelivery_after_lease_and_release,
    queue_concurrent_consumers_disjoint,
    forget_removes_only_that_owner,
    bad_input_is_typed,
    commit_puts_and_acks_all_or_nothing,
    poison_items_move_to_the_dead_letters,
    shard_leases_are_taken_over_only_when_free,
    concurrent_takeovers_have_one_winner,
    fencing_refuses_the_old_owner_and_applies_each_message_once,
    due_entities_are_listed_earliest_first,
    claim_and_complete_is_one_transaction,
    a_batch_of_claims_is_one_transaction,
);

fn conflict(r: Result<u64, StoreError>) -> (Option<u64>, Option<u64>) {
    match r {
        Err(StoreError::Conflict {
            expected, actual, ..
        }) => (expected, actual),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn snapshot_versions_and_conflicts(f: Fixture) {
    let s = &f.store;
    assert_eq!(s.get_snapshot("ann", "chart").unwrap(), None);
    let v1 = s.put_snapshot("ann", "chart", None, b"one", None).unwrap();
    assert_eq!(v1, 1);
    // creating again is a conflict: it exists at version 1
    assert_eq!(
        conflict(s.put_snapshot("ann", "chart", None, b"x", None)),
        (None, Some(1))
    );
    let v2 = s
        .put_snapshot("ann", "chart", Some(1), b"two", None)
        .unwrap();
    assert_eq!(v2, 2);
    // a put against the stale version 1 never overwrites
    assert_eq!(
        conflict(s.put_snapshot("ann", "chart", Some(1), b"stale", None)),
        (Some(1), Some(2))
    );
    let got = s.get_snapshot("ann", "chart").unwrap().unwrap();
    assert_eq!((got.version, got.data.as_slice()), (2, &b"two"[..]));
    assert_eq!(got.updated_at, T0);
    // updating what does not exist is a conflict too
    assert_eq!(
        conflict(s.put_snapshot("ann", "other", Some(3), b"x", None)),
        (Some(3), None)
    );
    // delete with the wrong version: conflict, nothing deleted
    assert!(matches!(
        s.delete_snapshot("ann", "chart", Some(1)),
        Err(StoreError::Conflict { .. })
    ));
    assert!(s.delete_snapshot("ann", "chart", Some(2)).unwrap());
    assert!(!s.delete_snapshot("ann", "chart", None).unwrap());
    // JSON helpers round-trip any serializable snapshot
    let v = s
        .put_snapshot_json(
            "ann",
            "json",
            None,
            &serde_json::json!({"state": "paying", "n": 3}),
            None,
        )
        .unwrap();
    let (rv, val): (u64, serde_json::Value) = s.get_snapshot_json("ann", "json").unwrap().unwrap();
    assert_eq!((rv, val["state"].as_str()), (v, Some("paying")));
}

fn snapshot_list_expiry_and_sweep(f: Fixture) {
    let s = &f.store;
    s.put_snapshot("bob", "b", None, b"b", None).unwrap();
    s.put_snapshot("bob", "a", None, b"a", Some(Duration::from_secs(10)))
        .unwrap();
    s.put_snapshot("cat", "a", None, b"c", None).unwrap();
    let keys: Vec<String> = s
        .list_snapshots("bob")
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    assert_eq!(keys, ["a", "b"]);
    let a = &s.list_snapshots("bob").unwrap()[0];
    assert_eq!(a.expires_at, Some(T0 + 10_000));
    f.clock.advance(Duration::from_secs(10));
    // expired: reads as absent, is not listed, and may be created anew
    assert_eq!(s.get_snapshot("bob", "a").unwrap(), None);
    assert_eq!(s.list_snapshots("bob").unwrap().len(), 1);
    let report = s.sweep().unwrap();
    assert_eq!(report.snapshots, 1);
    assert_eq!(s.put_snapshot("bob", "a", None, b"new", None).unwrap(), 1);
    // an expired snapshot that was not swept yet can also be re-created
    s.put_snapshot("bob", "c", None, b"c", Some(Duration::from_millis(1)))
        .unwrap();
    f.clock.advance(Duration::from_millis(1));
    assert_eq!(s.put_snapshot("bob", "c", None, b"c2", None).unwrap(), 1);
    assert_eq!(s.get_snapshot("bob", "c").unwrap().unwrap().data, b"c2");
}

fn drafts_never_go_backwards(f: Fixture) {
    let s = &f.store;
    assert_eq!(
        s.save_draft("dan", "wiz", 1, b"v1", None).unwrap(),
        DraftSaved::Saved
    );
    assert_eq!(
        s.save_draft("dan", "wiz", 3, b"v3", None).unwrap(),
        DraftSaved::Saved
    );
    assert_eq!(
        s.save_draft("dan", "wiz", 2, b"v2", None).unwrap(),
        DraftSaved::Stale { stored: 3 }
    );
    assert_eq!(
        s.save_draft("dan", "wiz", 3, b"again", None).unwrap(),
        DraftSaved::Stale { stored: 3 }
    );
    assert_eq!(s.get_draft("dan", "wiz").unwrap().unwrap().data, b"v3");
    s.save_draft("dan", "tmp", 5, b"t", Some(Duration::from_secs(1)))
        .unwrap();
    f.clock.advance(Duration::from_secs(1));
    assert_eq!(s.get_draft("dan", "tmp").unwrap(), None);
    // an expired draft does not block a lower version
    assert_eq!(
        s.save_draft("dan", "tmp", 1, b"t1", None).unwrap(),
        DraftSaved::Saved
    );
    assert!(s.delete_draft("dan", "wiz").unwrap());
    assert_eq!(s.get_draft("dan", "wiz").unwrap(), None);
    assert!(!s.delete_draft("dan", "wiz").unwrap());
}

fn idempotency_keys_follow_the_draft(f: Fixture) {
    let s = &f.store;
    assert_eq!(s.claim("eve", "k1", b"fp-a").unwrap(), Claim::New);
    assert_eq!(s.claim("eve", "k1", b"fp-a").unwrap(), Claim::InProgress); // 409
    assert_eq!(
        s.claim("eve", "k1", b"fp-b").unwrap(),
        Claim::FingerprintMismatch
    ); // 422
    let rec = s.lookup("eve", "k1").unwrap().unwrap();
    assert_eq!((rec.state, rec.result), (KeyState::InProgress, None));
    s.complete("eve", "k1", b"201 created").unwrap();
    assert_eq!(
        s.claim("eve", "k1", b"fp-a").unwrap(),
        Claim::Completed(b"201 created".to_vec())
    );
    assert_eq!(
        s.claim("eve", "k1", b"fp-b").unwrap(),
        Claim::FingerprintMismatch
    );
    // completing twice is an error that says so
    match s.complete("eve", "k1", b"again") {
        Err(StoreError::NotInProgress { state, .. }) => assert_eq!(state, "completed"),
        other => panic!("{other:?}"),
    }
    match s.complete("eve", "never", b"x") {
        Err(StoreError::NotInProgress { state, .. }) => assert_eq!(state, "absent"),
        other => panic!("{other:?}"),
    }
    // keys are per owner
    assert_eq!(s.claim("fay", "k1", b"fp-b").unwrap(), Claim::New);
    // abandon: the next claim is new again
    s.abandon("fay", "k1").unwrap();
    assert_eq!(s.lookup("fay", "k1").unwrap(), None);
    assert_eq!(s.claim("fay", "k1", b"fp-c").unwrap(), Claim::New);
    assert!(matches!(
        s.abandon("eve", "k1"),
        Err(StoreError::NotInProgress { .. })
    ));
}

fn idempotency_retention_window(f: Fixture) {
    let s = f.store.clone().with_retention(Duration::from_secs(60));
    assert_eq!(s.claim("gus", "k", b"fp").unwrap(), Claim::New);
    f.clock.advance(Duration::from_secs(30));
    s.complete("gus", "k", b"done").unwrap();
    let rec = s.lookup("gus", "k").unwrap().unwrap();
    // retention restarts at completion
    assert_eq!(rec.expires_at, T0 + 30_000 + 60_000);
    f.clock.advance(Duration::from_secs(59));
    assert!(matches!(
        s.claim("gus", "k", b"fp").unwrap(),
        Claim::Completed(_)
    ));
    f.clock.advance(Duration::from_secs(1));
    // past the window: gone, and the key may be reused for another request
    assert_eq!(s.lookup("gus", "k").unwrap(), None);
    assert_eq!(s.claim("gus", "k", b"other").unwrap(), Claim::New);
    // an abandoned-by-crash claim frees itself after the window too
    f.clock.advance(Duration::from_secs(60));
    assert_eq!(s.sweep().unwrap().keys, 1);
    assert_eq!(s.claim("gus", "k", b"third").unwrap(), Claim::New);
}

fn concurrent_claimers_exactly_one_new(f: Fixture) {
    const THREADS: usize = 16;
    const ROUNDS: usize = 5;
    let handles: Vec<Store> = (0..THREADS).map(|_| (f.reopen)()).collect();
    for round in 0..ROUNDS {
        let key = format!("race-{round}");
        let barrier = Arc::new(Barrier::new(THREADS));
        let outcomes: Vec<Claim> = std::thread::scope(|sc| {
            let joins: Vec<_> = handles
                .iter()
                .map(|s| {
                    let (barrier, key) = (barrier.clone(), key.clone());
                    sc.spawn(move || {
                        barrier.wait();
                        s.claim("hal", &key, b"same request").unwrap()
                    })
                })
                .collect();
            joins.into_iter().map(|j| j.join().unwrap()).collect()
        });
        let new = outcomes.iter().filter(|c| **c == Claim::New).count();
        let busy = outcomes.iter().filter(|c| **c == Claim::InProgress).count();
        assert_eq!((new, busy), (1, THREADS - 1), "round {round}: {outcomes:?}");
    }
}

fn queue_dedup_lease_ack(f: Fixture) {
    let s = &f.store;
    let lease = Duration::from_secs(30);
    let a = s.enqueue("q", "ida", "e1", b"one").unwrap();
    let b = s.enqueue("q", "ida", "e2", b"two").unwrap();
    assert!(matches!(a, Enqueued::New(_)) && matches!(b, Enqueued::New(_)));
    assert!(b.id() > a.id());
    assert_eq!(
        s.enqueue("q", "ida", "e1", b"one").unwrap(),
        Enqueued::Duplicate(a.id())
    );
    // the same key on another queue is another item
    assert!(matches!(
        s.enqueue("other", "ida", "e1", b"x").unwrap(),
        Enqueued::New(_)
    ));
    let got = s.lease("q", 10, lease).unwrap();
    assert_eq!(
        got.iter()
            .map(|i| (i.key.as_str(), i.payload.as_slice(), i.attempt))
            .collect::<Vec<_>>(),
        [("e1", &b"one"[..], 1), ("e2", &b"two"[..], 1)]
    );
    assert_eq!(got[0].owner, "ida");
    // leased items are not handed out twice
    assert!(s.lease("q", 10, lease).unwrap().is_empty());
    let c = s.queue_counts("q").unwrap();
    assert_eq!((c.ready, c.leased, c.acked), (0, 2, 0));
    assert_eq!(s.ack(&[got[0].id]).unwrap(), 1);
    assert_eq!(s.ack(&[got[0].id]).unwrap(), 0); // already acknowledged
                                                 // an acknowledged item is never delivered again, even after its lease
    f.clock.advance(Duration::from_secs(31));
    let again = s.lease("q", 10, lease).unwrap();
    assert_eq!(
        again.iter().map(|i| i.key.as_str()).collect::<Vec<_>>(),
        ["e2"]
    );
    assert_eq!(again[0].attempt, 2);
    // and its key still deduplicates within the dedup window
    assert_eq!(
        s.enqueue("q", "ida", "e1", b"one").unwrap(),
        Enqueued::Duplicate(a.id())
    );
    let s2 = s.clone().with_dedup_window(Duration::from_secs(60));
    f.clock.advance(Duration::from_secs(60));
    assert_eq!(s2.sweep().unwrap().queue_items, 1);
    assert!(matches!(
        s.enqueue("q", "ida", "e1", b"one").unwrap(),
        Enqueued::New(_)
    ));
    // max is respected
    for i in 0..5 {
        s.enqueue("m", "ida", &format!("m{i}"), b"").unwrap();
    }
    assert_eq!(s.lease("m", 3, lease).unwrap().len(), 3);
    assert_eq!(s.lease("m", 3, lease).unwrap().len(), 2);
}

fn queue_redelivery_after_lease_and_release(f: Fixture) {
    let s = &f.store;
    s.enqueue("r", "jo", "x", b"payload").unwrap();
    let first = s.lease("r", 1, Duration::from_secs(5)).unwrap().remove(0);
    // release: deliverable again after the delay
    assert!(s.release(&first, Duration::from_secs(2)).unwrap());
    assert!(!s.release(&first, Duration::ZERO).unwrap()); // no lease any more
    assert!(s.lease("r", 1, Duration::from_secs(5)).unwrap().is_empty());
    f.clock.advance(Duration::from_secs(2));
    let second = s.lease("r", 1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!((second.id, second.attempt), (first.id, 2));
    // the old lease's token does not release the new lease
    assert!(!s.release(&first, Duration::ZERO).unwrap());
    // a consumer that never acks: the lease runs out, the item comes back
    f.clock.advance(Duration::from_secs(5));
    let third = s.lease("r", 1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(third.attempt, 3);
    assert_ne!(third.lease_token, second.lease_token);
    assert_eq!(third.lease_until, f.clock_now() + 5_000);
    s.ack(&[third.id]).unwrap();
    let c = s.queue_counts("r").unwrap();
    assert_eq!((c.ready, c.leased, c.acked), (0, 0, 1));
}

impl Fixture {
    fn clock_now(&self) -> i64 {
        use turno_store::Clock;
        self.clock.now_ms()
    }
}

fn queue_concurrent_consumers_disjoint(f: Fixture) {
    const ITEMS: usize = 200;
    const CONSUMERS: usize = 4;
    for i in 0..ITEMS {
        f.store
            .enqueue("c", "kim", &format!("k{i:04}"), b"")
            .unwrap();
    }
    let handles: Vec<Store> = (0..CONSUMERS).map(|_| (f.reopen)()).collect();
    let taken: Vec<Vec<String>> = std::thread::scope(|sc| {
        let joins: Vec<_> = handles
            .iter()
            .map(|s| {
                sc.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let items = s.lease("c", 7, Duration::from_secs(600)).unwrap();
                        if items.is_empty() {
                            return mine;
                        }
                        s.ack(&items.iter().map(|i| i.id).collect::<Vec<_>>())
                            .unwrap();
                        mine.extend(items.into_iter().map(|i| i.key));
                    }
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    let mut all: Vec<String> = taken.concat();
    all.sort();
    let expected: Vec<String> = (0..ITEMS).map(|i| format!("k{i:04}")).collect();
    assert_eq!(all, expected, "every item exactly once across consumers");
}

fn forget_removes_only_that_owner(f: Fixture) {
    let s = &f.store;
    for owner in ["leo", "mia"] {
        s.put_snapshot(owner, "s1", None, b"snap", None).unwrap();
        s.put_snapshot(owner, "s2", None, b"snap", None).unwrap();
        s.save_draft(owner, "d", 1, b"draft", None).unwrap();
        s.claim(owner, "k", b"fp").unwrap();
        s.enqueue("fq", owner, &format!("{owner}-e1"), b"evt")
            .unwrap();
        s.enqueue("fq", owner, &format!("{owner}-e2"), b"evt")
            .unwrap();
    }
    // one of leo's items is leased, one acknowledged: both go too
    let leased = s.lease("fq", 1, Duration::from_secs(30)).unwrap();
    assert_eq!(leased[0].owner, "leo");
    let r = s.forget("leo").unwrap();
    assert_eq!((r.snapshots, r.drafts, r.keys, r.queue_items), (2, 1, 1, 2));
    assert!(s.list_snapshots("leo").unwrap().is_empty());
    assert_eq!(s.get_draft("leo", "d").unwrap(), None);
    assert_eq!(s.lookup("leo", "k").unwrap(), None);
    let left = s.lease("fq", 10, Duration::from_secs(30)).unwrap();
    assert!(left.iter().all(|i| i.owner == "mia") && left.len() == 2);
    assert_eq!(s.list_snapshots("mia").unwrap().len(), 2);
    assert!(s.get_draft("mia", "d").unwrap().is_some());
    assert!(s.lookup("mia", "k").unwrap().is_some());
    // forgetting nobody is not an error
    assert_eq!(s.forget("nobody").unwrap().snapshots, 0);
}

fn bad_input_is_typed(f: Fixture) {
    let s = &f.store;
    let what = |r: Result<_, StoreError>| match r {
        Err(StoreError::Invalid { what, .. }) => what,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert_eq!(
        what(s.put_snapshot("", "k", None, b"", None).map(|_| ())),
        "owner"
    );
    assert_eq!(what(s.get_snapshot("o", "").map(|_| ())), "key");
    assert_eq!(what(s.claim("o", &"k".repeat(600), b"").map(|_| ())), "key");
    assert_eq!(what(s.enqueue("", "o", "k", b"").map(|_| ())), "queue");
    assert_eq!(what(s.lease("q", 1, Duration::ZERO).map(|_| ())), "lease");
    assert_eq!(what(s.forget("nul\0byte").map(|_| ())), "owner");
    // nothing was written by any of them
    assert!(s.lease("q", 10, Duration::from_secs(1)).unwrap().is_empty());
}

fn commit_puts_and_acks_all_or_nothing(f: Fixture) {
    let s = &f.store;
    let lease = Duration::from_secs(30);
    for k in ["a", "b", "c"] {
        s.enqueue("cq", "ann", k, b"+1").unwrap();
    }
    let items = s.lease("cq", 3, lease).unwrap();
    let ids: Vec<i64> = items.iter().map(|i| i.id).collect();
    // two puts of one snapshot build on each other, one of another, and an ack
    let w1 = SnapshotWrite::new("ann", "state", None, b"1".to_vec());
    let w2 = SnapshotWrite::new("ann", "state", Some(1), b"2".to_vec());
    let other = SnapshotWrite::new("ann", "other", None, b"x".to_vec());
    assert_eq!(
        s.commit(&[w1, w2, other], &ids[..1]).unwrap(),
        vec![1, 2, 1]
    );
    assert_eq!(s.get_snapshot("ann", "state").unwrap().unwrap().data, b"2");
    assert_eq!(s.queue_counts("cq").unwrap().acked, 1);
    // a stale put anywhere in the batch: nothing of it is written
    let fresh = SnapshotWrite::new("ann", "state", Some(2), b"3".to_vec());
    let stale = SnapshotWrite::new("ann", "other", None, b"y".to_vec());
    let (expected, actual) = conflict(s.commit(&[fresh, stale], &ids[1..]).map(|_| 0));
    assert_eq!((expected, actual), (None, Some(1)));
    let state = s.get_snapshot("ann", "state").unwrap().unwrap();
    assert_eq!((state.version, state.data.as_slice()), (2, &b"2"[..]));
    assert_eq!(s.get_snapshot("ann", "other").unwrap().unwrap().data, b"x");
    let c = s.queue_counts("cq").unwrap();
    assert_eq!((c.acked, c.leased), (1, 2), "the acks rolled back too");
    // from another connection, the same
    let again = (f.reopen)();
    assert_eq!(
        again.get_snapshot("ann", "state").unwrap().unwrap().version,
        2
    );
    assert_eq!(again.queue_counts("cq").unwrap().acked, 1);
    // acknowledged ids are skipped, not an error
    assert_eq!(s.commit(&[], &ids).unwrap(), Vec::<u64>::new());
    assert_eq!(s.queue_counts("cq").unwrap().acked, 3);
    assert_eq!(s.ack(&ids).unwrap(), 0);
    // bad names are typed, before anything is written
    let bad = SnapshotWrite::new("", "state", Some(2), b"4".to_vec());
    assert!(matches!(
        s.commit(&[bad], &[]),
        Err(StoreError::Invalid { what: "owner", .. })
    ));
}

fn poison_items_move_to_the_dead_letters(f: Fixture) {
    let s = f.store.clone().with_max_attempts(3);
    let lease = Duration::from_secs(5);
    s.enqueue("pq", "ann", "poison", b"bad").unwrap();
    s.enqueue("pq", "bob", "fine", b"ok").unwrap();
    // delivered 3 times, never acknowledged (its handler fails every time)
    for attempt in 1..=3 {
        let got = s.lease("pq", 10, lease).unwrap();
        let p = got.iter().find(|i| i.key == "poison").expect("delivered");
        assert_eq!(p.attempt, attempt);
        if let Some(fine) = got.iter().find(|i| i.key == "fine") {
            s.ack(&[fine.id]).unwrap();
        }
        f.clock.advance(lease);
    }
    // the 4th lease does not deliver it: it is a dead letter now
    assert!(s.lease("pq", 10, lease).unwrap().is_empty());
    let c = s.queue_counts("pq").unwrap();
    assert_eq!((c.ready, c.leased, c.acked, c.dead), (0, 0, 1, 1));
    let dead = s.dead_letters("pq", 10).unwrap();
    assert_eq!(dead.len(), 1);
    let d = &dead[0];
    assert_eq!(
        (
            d.key.as_str(),
            d.owner.as_str(),
            d.payload.as_slice(),
            d.attempts
        ),
        ("poison", "ann", &b"bad"[..], 3)
    );
    assert!(d.dead_at >= d.enqueued_at);
    // its key stays taken, and sweeping never drops it
    assert_eq!(
        s.enqueue("pq", "ann", "poison", b"again").unwrap(),
        Enqueued::Duplicate(d.id)
    );
    f.clock.advance(Duration::from_secs(3 * 24 * 3600));
    s.sweep().unwrap();
    assert_eq!(s.queue_counts("pq").unwrap().dead, 1);
    // requeued, it is delivered again from attempt 1
    assert!(s.requeue_dead(d.id).unwrap());
    assert!(!s.requeue_dead(d.id).unwrap(), "only once");
    let back = s.lease("pq", 10, lease).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!((back[0].id, back[0].attempt), (d.id, 1));
    assert_eq!(back[0].payload, b"bad");
    assert_eq!(s.queue_counts("pq").unwrap().dead, 0);
    // forget takes dead letters too
    f.clock.advance(lease);
    for _ in 0..3 {
        s.lease("pq", 10, lease).unwrap();
        f.clock.advance(lease);
    }
    assert_eq!(s.queue_counts("pq").unwrap().dead, 1);
    assert_eq!(s.forget("ann").unwrap().queue_items, 1);
    assert_eq!(s.queue_counts("pq").unwrap().dead, 0);
    assert!(s.dead_letters("pq", 10).unwrap().is_empty());
    // and after that the key is free
    assert!(matches!(
        s.enqueue("pq", "ann", "poison", b"new").unwrap(),
        Enqueued::New(_)
    ));
}

// ---- shard leases and fenced entity writes ---------------------------------

/// A shard number no other test (nor an earlier run on the same PostgreSQL
/// database) uses.
fn fresh_shard() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u32;
    (run % 1_000_000) * 1_000 + NEXT.fetch_add(1, Ordering::Relaxed) % 1_000
}

const LEASE: Duration = Duration::from_secs(10);

fn acquired(outcome: LeaseOutcome) -> ShardLease {
    match outcome {
        LeaseOutcome::Acquired(lease) => lease,
        LeaseOutcome::Held(other) => panic!("the shard is held: {other:?}"),
    }
}

fn shard_leases_are_taken_over_only_when_free(f: Fixture) {
    let shard = fresh_shard();
    let a = acquired(f.store.acquire_shard(shard, "node-a/1", LEASE).unwrap());
    assert_eq!((a.shard, a.owner.as_str(), a.epoch), (shard, "node-a/1", 1));
    assert_eq!(a.until, T0 + 10_000);
    let b = (f.reopen)();
    match b.acquire_shard(shard, "node-b/1", LEASE).unwrap() {
        LeaseOutcome::Held(held) => assert_eq!(held, a),
        other => panic!("a live lease was taken over: {other:?}"),
    }
    assert_eq!(b.shard_owner(shard).unwrap(), Some(a.clone()));

    // Renewed before it expires, the lease holds on.
    f.clock.advance(Duration::from_secs(8));
    let a = f.store.renew_shard(&a, LEASE).unwrap().expect("still a's");
    assert_eq!(a.until, T0 + 18_000);
    f.clock.advance(Duration::from_secs(8));
    assert!(matches!(
        b.acquire_shard(shard, "node-b/1", LEASE).unwrap(),
        LeaseOutcome::Held(_)
    ));

    // Expired, it is taken over with a new epoch; the old owner's renewal
    // and release fail.
    f.clock.advance(Duration::from_secs(3));
    assert_eq!(b.shard_owner(shard).unwrap(), None, "expired");
    let bl = acquired(b.acquire_shard(shard, "node-b/1", LEASE).unwrap());
    assert_eq!(bl.epoch, 2);
    assert_eq!(f.store.renew_shard(&a, LEASE).unwrap(), None, "a lost it");
    assert!(!f.store.release_shard(&a).unwrap());

    // Released on a clean shutdown, it is free at once.
    assert!(b.release_shard(&bl).unwrap());
    assert_eq!(f.store.shard_owner(shard).unwrap(), None);
    let a3 = acquired(f.store.acquire_shard(shard, "node-a/2", LEASE).unwrap());
    assert_eq!(a3.epoch, 3);

    assert!(matches!(
        f.store.acquire_shard(shard, "", LEASE),
        Err(StoreError::Invalid { what: "owner", .. })
    ));
    assert!(matches!(
        f.store.acquire_shard(shard, "x", Duration::ZERO),
        Err(StoreError::Invalid {
            what: "lease ttl",
            ..
        })
    ));
}

fn concurrent_takeovers_have_one_winner(f: Fixture) {
    const THREADS: usize = 8;
    let handles: Vec<Store> = (0..THREADS).map(|_| (f.reopen)()).collect();
    for round in 0..4u64 {
        let shard = fresh_shard();
        if round > 0 {
            // An expired lease to take over, not a fresh row.
            acquired(f.store.acquire_shard(shard, "old", LEASE).unwrap());
            f.clock.advance(LEASE + Duration::from_millis(1));
        }
        let barrier = Arc::new(Barrier::new(THREADS));
        let outcomes: Vec<LeaseOutcome> = std::thread::scope(|sc| {
            let joins: Vec<_> = handles
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let barrier = barrier.clone();
                    sc.spawn(move || {
                        barrier.wait();
                        s.acquire_shard(shard, &format!("node-{i}"), LEASE).unwrap()
                    })
                })
                .collect();
            joins.into_iter().map(|j| j.join().unwrap()).collect()
        });
        let winners: Vec<&ShardLease> = outcomes
            .iter()
            .filter_map(|o| match o {
                LeaseOutcome::Acquired(l) => Some(l),
                LeaseOutcome::Held(_) => None,
            })
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let epoch = if round > 0 { 2 } else { 1 };
        assert_eq!(winners[0].epoch, epoch);
        for o in &outcomes {
            if let LeaseOutcome::Held(held) = o {
                assert_eq!(held, winners[0], "every loser sees the winner");
            }
        }
    }
}

/// The fencing scenario, with the entity writes made by `write` (the
/// store's own `commit_entity`, or a broken writer for the check of the
/// checker): `Err` names the first violation of the guarantees.
fn fencing_scenario(
    f: &Fixture,
    kind: &str,
    write: &dyn Fn(&Store, &EntityWrite<'_>) -> Result<EntityCommit, StoreError>,
) -> Result<(), String> {
    let shard = fresh_shard();
    let (a, b) = (&f.store, (f.reopen)());
    let old = acquired(a.acquire_shard(shard, "node-a/1", LEASE).unwrap());
    let w = |epoch, seq, data: &'static [u8]| EntityWrite {
        kind,
        key: "signup-7",
        shard,
        epoch,
        seq,
        data,
        wake_at: None,
    };
    if !matches!(
        write(a, &w(old.epoch, Some(1), b"one")),
        Ok(EntityCommit::Applied)
    ) {
        return Err("the owner's first write was not applied".into());
    }
    // The owner pauses past its lease; node b takes the shard over.
    f.clock.advance(LEASE + Duration::from_secs(1));
    let new = acquired(b.acquire_shard(shard, "node-b/1", LEASE).unwrap());
    // The old owner wakes up and writes the next message: refused.
    match write(a, &w(old.epoch, Some(2), b"stale")) {
        Err(StoreError::Fenced {
            shard: s,
            epoch,
            current,
        }) if s == shard && epoch == old.epoch && current == Some(new.epoch) => {}
        other => return Err(format!("the old owner's write was not fenced: {other:?}")),
    }
    let e = b.get_entity(kind, "signup-7").unwrap().expect("stored");
    if (e.applied, e.epoch, e.data.as_slice()) != (1, old.epoch, &b"one"[..]) {
        return Err(format!("a fenced write changed the entity: {e:?}"));
    }
    // The new owner applies message 2 once; its redelivery is a duplicate.
    if !matches!(
        write(&b, &w(new.epoch, Some(2), b"two")),
        Ok(EntityCommit::Applied)
    ) {
        return Err("the new owner's write was not applied".into());
    }
    if !matches!(
        write(&b, &w(new.epoch, Some(2), b"again")),
        Ok(EntityCommit::Duplicate { applied: 2 })
    ) {
        return Err("a redelivered message was applied twice".into());
    }
    if !matches!(
        write(&b, &w(new.epoch, Some(1), b"older")),
        Ok(EntityCommit::Duplicate { applied: 2 })
    ) {
        return Err("an older message was applied".into());
    }
    // A write no message caused (a timer) keeps the applied sequence.
    if !matches!(
        write(&b, &w(new.epoch, None, b"timer")),
        Ok(EntityCommit::Applied)
    ) {
        return Err("the new owner's timer write was not applied".into());
    }
    let e = b.get_entity(kind, "signup-7").unwrap().expect("stored");
    if (e.applied, e.epoch, e.data.as_slice(), e.shard) != (2, new.epoch, &b"timer"[..], shard) {
        return Err(format!(
            "unexpected entity after the new owner's writes: {e:?}"
        ));
    }
    Ok(())
}

fn fencing_refuses_the_old_owner_and_applies_each_message_once(f: Fixture) {
    fencing_scenario(&f, "signup", &|s, w| s.commit_entity(w)).unwrap();

    // A shard nobody ever owned fences every write.
    let never = fresh_shard();
    let w = EntityWrite {
        kind: "signup",
        key: "orphan",
        shard: never,
        epoch: 1,
        seq: Some(1),
        data: b"x",
        wake_at: None,
    };
    assert!(matches!(
        f.store.commit_entity(&w),
        Err(StoreError::Fenced { current: None, .. })
    ));
    assert_eq!(f.store.get_entity("signup", "orphan").unwrap(), None);

    // The check of the checker: a writer that does not carry its own
    // epoch (it writes with whatever epoch the shard has now) is caught.
    let fenceless = |s: &Store, w: &EntityWrite<'_>| {
        let now = s.shard_owner(w.shard)?.map_or(w.epoch, |l| l.epoch);
        s.commit_entity(&EntityWrite { epoch: now, ..*w })
    };
    let caught = fencing_scenario(&f, "signup-fenceless", &fenceless)
        .expect_err("a write without its epoch check must fail the scenario");
    assert!(caught.contains("not fenced"), "{caught}");
}

fn due_entities_are_listed_earliest_first(f: Fixture) {
    let (shard, other) = (fresh_shard(), fresh_shard());
    let lease = acquired(f.store.acquire_shard(shard, "n", LEASE).unwrap());
    let lease2 = acquired(f.store.acquire_shard(other, "n", LEASE).unwrap());
    let put = |shard: u32, epoch: u64, key: &str, wake_at: Option<i64>| {
        f.store
            .commit_entity(&EntityWrite {
                kind: "timers",
                key,
                shard,
                epoch,
                seq: None,
                data: b"s",
                wake_at,
            })
            .unwrap();
    };
    put(shard, lease.epoch, "late", Some(T0 + 5_000));
    put(shard, lease.epoch, "soon", Some(T0 + 1_000));
    put(shard, lease.epoch, "never", None);
    put(shard, lease.epoch, "due-now", Some(T0));
    put(other, lease2.epoch, "elsewhere", Some(T0));
    let keys = |limit| {
        f.store
            .due_entities(shard, limit)
            .unwrap()
            .into_iter()
            .map(|d| d.key)
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(10), ["due-now"]);
    f.clock.advance(Duration::from_secs(2));
    assert_eq!(keys(10), ["due-now", "soon"]);
    assert_eq!(keys(1), ["due-now"]);
    f.clock.advance(Duration::from_secs(10));
    assert_eq!(keys(10), ["due-now", "soon", "late"]);
    // Its timer fired and none is pending: no longer due.
    put(shard, lease.epoch, "soon", None);
    assert_eq!(keys(10), ["due-now", "late"]);
}

fn claim_and_complete_is_one_transaction(f: Fixture) {
    let s = &f.store;
    let entry = |id: &str| SnapshotWrite::new("ledger-cc", id, None, b"10 EUR".to_vec());
    assert_eq!(
        s.claim_and_complete("gw-cc", "k1", b"req", b"ch_1", &[entry("ch_1")])
            .unwrap(),
        Claim::New
    );
    let rec = s.lookup("gw-cc", "k1").unwrap().unwrap();
    assert_eq!(
        (rec.state, rec.result.as_deref()),
        (KeyState::Completed, Some(&b"ch_1"[..]))
    );
    // A replay is answered from the key and writes nothing.
    assert_eq!(
        s.claim_and_complete("gw-cc", "k1", b"req", b"ch_2", &[entry("ch_2")])
            .unwrap(),
        Claim::Completed(b"ch_1".to_vec())
    );
    assert_eq!(
        s.claim_and_complete("gw-cc", "k1", b"other", b"ch_3", &[entry("ch_3")])
            .unwrap(),
        Claim::FingerprintMismatch
    );
    // A key claimed the ordinary way is in progress: nothing written.
    assert_eq!(s.claim("gw-cc", "k2", b"req").unwrap(), Claim::New);
    assert_eq!(
        s.claim_and_complete("gw-cc", "k2", b"req", b"ch_4", &[entry("ch_4")])
            .unwrap(),
        Claim::InProgress
    );
    // A write that conflicts rolls the claim back too.
    let conflict = s.claim_and_complete("gw-cc", "k3", b"req", b"ch_1", &[entry("ch_1")]);
    assert!(
        matches!(conflict, Err(StoreError::Conflict { .. })),
        "{conflict:?}"
    );
    assert_eq!(
        s.lookup("gw-cc", "k3").unwrap(),
        None,
        "the claim was rolled back"
    );
    let keys: Vec<String> = s
        .list_snapshots("ledger-cc")
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    assert_eq!(keys, ["ch_1"]);
}

fn a_batch_of_claims_is_one_transaction(f: Fixture) {
    let s = &f.store;
    let op = |key: &str, req: &[u8], id: &str| ClaimAndComplete {
        owner: "gw-batch".into(),
        key: key.into(),
        fingerprint: req.to_vec(),
        result: id.as_bytes().to_vec(),
        writes: vec![SnapshotWrite::new(
            "ledger-batch",
            id,
            None,
            b"10 EUR".to_vec(),
        )],
    };
    // In order: a key twice in one batch is answered from its first claim,
    // another body with the key is a mismatch; only new claims write.
    let claims = s
        .claim_and_complete_batch(&[
            op("a", b"req", "ch_1"),
            op("b", b"req", "ch_2"),
            op("a", b"req", "ch_3"),
            op("a", b"other", "ch_4"),
        ])
        .unwrap();
    assert_eq!(
        claims,
        [
            Claim::New,
            Claim::New,
            Claim::Completed(b"ch_1".to_vec()),
            Claim::FingerprintMismatch
        ]
    );
    let ledger = |s: &turno_store::Store| -> Vec<String> {
        s.list_snapshots("ledger-batch")
            .unwrap()
            .into_iter()
            .map(|m| m.key)
            .collect()
    };
    assert_eq!(ledger(s), ["ch_1", "ch_2"]);
    // One failing operation (its ledger entry exists) fails the batch:
    // the new claim before it is rolled back with it.
    let failed = s.claim_and_complete_batch(&[op("c", b"req", "ch_5"), op("d", b"req", "ch_2")]);
    assert!(
        matches!(failed, Err(StoreError::Conflict { .. })),
        "{failed:?}"
    );
    assert_eq!(s.lookup("gw-batch", "c").unwrap(), None, "rolled back");
    assert_eq!(ledger(s), ["ch_1", "ch_2"]);
    assert_eq!(s.claim_and_complete_batch(&[]).unwrap(), []);
}
