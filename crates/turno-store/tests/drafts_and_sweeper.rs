//! Drafts with the mixed policy (local at every change, remote at every
//! step, newest wins) and the background sweeper.

mod common;

use std::time::Duration;

use common::*;
use turno_store::{DraftSaved, Drafts, ManualClock, Source, Store, Sweeper};

/// The wizard's life on one machine, then a resume on another machine that
/// only sees the remote copy, then back on the first.
fn mixed_policy(local: Store, remote: Store, other_local: Store) {
    let here = Drafts::new(local, remote.clone());
    here.changed("ann", "signup", 1, b"email typed").unwrap();
    here.changed("ann", "signup", 2, b"email + name").unwrap();
    // a change is local only
    assert_eq!(remote.get_draft("ann", "signup").unwrap(), None);
    assert_eq!(
        here.step_completed("ann", "signup", 3, b"step 1 done")
            .unwrap(),
        DraftSaved::Saved
    );
    here.changed("ann", "signup", 4, b"typing step 2").unwrap();
    // here: the local copy is newer
    let (d, from) = here.resume("ann", "signup").unwrap().unwrap();
    assert_eq!(
        (d.version, from, d.data.as_slice()),
        (4, Source::Local, &b"typing step 2"[..])
    );
    // another machine has only the remote copy: resumes at the last step
    let there = Drafts::new(other_local, remote.clone());
    let (d, from) = there.resume("ann", "signup").unwrap().unwrap();
    assert_eq!((d.version, from), (3, Source::Remote));
    // it goes on and completes step 2 there
    there
        .step_completed("ann", "signup", 5, b"step 2 done (there)")
        .unwrap();
    // back here, the remote copy is now the newest and wins over local 4
    let (d, from) = here.resume("ann", "signup").unwrap().unwrap();
    assert_eq!(
        (d.version, from, d.data.as_slice()),
        (5, Source::Remote, &b"step 2 done (there)"[..])
    );
    // an old step never overwrites a newer remote copy
    assert_eq!(
        here.step_completed("ann", "signup", 4, b"late").unwrap(),
        DraftSaved::Stale { stored: 5 }
    );
    // forgetting the owner on both stores: nothing to resume
    here.local().forget("ann").unwrap();
    remote.forget("ann").unwrap();
    there.local().forget("ann").unwrap();
    assert_eq!(here.resume("ann", "signup").unwrap(), None);
    assert_eq!(there.resume("ann", "signup").unwrap(), None);
}

#[test]
fn drafts_local_sqlite_remote_memory() {
    let (d1, d2) = (tempdir(), tempdir());
    let c = ManualClock::new(T0);
    mixed_policy(
        sqlite_at(d1.path().join("a.db"), c.clone()),
        memory(c.clone()),
        sqlite_at(d2.path().join("b.db"), c),
    );
}

#[cfg(feature = "postgres")]
#[test]
fn drafts_local_sqlite_remote_postgres() {
    let c = ManualClock::new(T0);
    let Some(remote) = pg(c.clone()) else { return };
    let (d1, d2) = (tempdir(), tempdir());
    mixed_policy(
        sqlite_at(d1.path().join("a.db"), c.clone()),
        remote,
        sqlite_at(d2.path().join("b.db"), c),
    );
}

#[test]
fn drafts_expire_on_both_sides_and_discard_removes_both() {
    let c = ManualClock::new(T0);
    let d = Drafts::new(memory(c.clone()), memory(c.clone())).with_ttl(Duration::from_secs(60));
    d.step_completed("bob", "w", 1, b"x").unwrap();
    c.advance(Duration::from_secs(59));
    assert!(d.resume("bob", "w").unwrap().is_some());
    c.advance(Duration::from_secs(1));
    assert_eq!(d.resume("bob", "w").unwrap(), None);
    d.step_completed("bob", "w", 1, b"again").unwrap();
    assert!(d.discard("bob", "w").unwrap());
    assert_eq!(d.resume("bob", "w").unwrap(), None);
    assert!(!d.discard("bob", "w").unwrap());
}

#[test]
fn the_sweeper_removes_what_expired_in_the_background() {
    let dir = tempdir();
    let c = ManualClock::new(T0);
    let s = sqlite_at(dir.path().join("s.db"), c.clone()).with_retention(Duration::from_secs(10));
    s.put_snapshot("cy", "a", None, b"a", Some(Duration::from_secs(5)))
        .unwrap();
    s.put_snapshot("cy", "b", None, b"b", None).unwrap();
    s.save_draft("cy", "d", 1, b"d", Some(Duration::from_secs(5)))
        .unwrap();
    s.claim("cy", "k", b"fp").unwrap();
    c.advance(Duration::from_secs(11));
    let sweeper = Sweeper::spawn(s.clone(), Duration::from_millis(10)).unwrap();
    // the rows are really gone from the table, not only hidden
    let conn = rusqlite::Connection::open(dir.path().join("s.db")).unwrap();
    let count = |t: &str| -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    let start = std::time::Instant::now();
    while count("turno_snapshots") != 1 || count("turno_drafts") != 0 || count("turno_keys") != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sweeper did not sweep"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let totals = sweeper.stop();
    assert!(totals.runs >= 1);
    assert_eq!(totals.errors, 0);
    assert_eq!(
        (
            totals.removed.snapshots,
            totals.removed.drafts,
            totals.removed.keys
        ),
        (1, 1, 1)
    );
    assert!(s.get_snapshot("cy", "b").unwrap().is_some());
}
