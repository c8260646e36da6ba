//! One host, then two sharing a store, on DetSystems and a manual clock:
//! activation, once per message, routing, fencing, passivation and
//! durable timers, each on its own.

mod common;

use std::time::Duration;

use common::*;
use turno::System;
use turno_entity::{Ack, HostConfig, Routed};
use turno_store::{shard_for, Clock, ManualClock, Store};

const SHARDS: u32 = 4;

fn config() -> HostConfig {
    HostConfig {
        shards: SHARDS,
        lease_ttl: Duration::from_millis(1_000),
        idle: Duration::from_millis(300),
        due_batch: 16,
    }
}

fn setup() -> (std::sync::Arc<ManualClock>, Store) {
    let clock = ManualClock::new(T0);
    let store = Store::memory().with_clock(clock.clone());
    (clock, store)
}

#[test]
fn a_message_activates_the_entity_and_commits_snapshot_sequence_and_wake_up_at_once() {
    let (_clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, false), Ok(Ack::Applied));
    let e = store.get_entity("log", "k1").unwrap().expect("committed");
    assert_eq!(e.applied, 1);
    assert_eq!(e.wake_at, None);
    assert_eq!(list(&stored_context(&store, "k1").unwrap(), "seqs"), [1]);

    assert_eq!(send(&mut a, "k1", 2, true), Ok(Ack::Applied));
    let e = store.get_entity("log", "k1").unwrap().unwrap();
    assert_eq!(e.applied, 2);
    // The ARM's timer, as an absolute wall-clock deadline.
    assert_eq!(e.wake_at, Some(T0 + TIMER_MS as i64));
    assert_eq!(a.stats().activations, 1);
}

#[test]
fn a_redelivered_message_is_acknowledged_and_skipped() {
    let (_clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    for seq in 1..=3 {
        assert_eq!(send(&mut a, "k1", seq, false), Ok(Ack::Applied));
    }
    assert_eq!(
        send(&mut a, "k1", 2, false),
        Ok(Ack::Duplicate { applied: 3 })
    );
    assert_eq!(
        send(&mut a, "k1", 3, false),
        Ok(Ack::Duplicate { applied: 3 })
    );
    assert_eq!(
        list(&stored_context(&store, "k1").unwrap(), "seqs"),
        [1, 2, 3]
    );
    assert_eq!(a.stats().duplicates, 2);

    // Skipped after a restore too: the applied sequence is the store's.
    let mut b = host(&store, "b/1", config());
    a.shutdown(Duration::from_secs(1)).unwrap();
    b.tick().unwrap();
    assert_eq!(
        send(&mut b, "k1", 3, false),
        Ok(Ack::Duplicate { applied: 3 })
    );
    assert_eq!(send(&mut b, "k1", 4, false), Ok(Ack::Applied));
    assert_eq!(
        list(&stored_context(&store, "k1").unwrap(), "seqs"),
        [1, 2, 3, 4]
    );
    assert_eq!(b.stats().restored, 1);
}

#[test]
fn a_message_for_a_shard_owned_elsewhere_is_answered_with_its_owner() {
    let (_clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    let mut b = host(&store, "b/1", config());
    a.tick().unwrap(); // a takes every shard
    b.tick().unwrap();
    assert!(b.held().is_empty());
    let shard = shard_for("k1", SHARDS);
    match send(&mut b, "k1", 1, false) {
        Err(Routed::NotOwner {
            shard: s,
            owner: Some(lease),
        }) => {
            assert_eq!(s, shard);
            assert_eq!(lease.owner, "a/1");
        }
        other => panic!("expected NotOwner with a's lease, got {other:?}"),
    }
    assert!(store.get_entity("log", "k1").unwrap().is_none());
    assert_eq!(b.stats().not_owner, 1);
    assert_eq!(b.system().actor_count(), 0);
}

#[test]
fn a_paused_owner_that_wakes_after_a_takeover_is_fenced_and_commits_nothing() {
    let (clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, true), Ok(Ack::Applied)); // a timer in 400 ms
                                                               // a pauses: its system does not run; the wall clock goes on past its
                                                               // lease, and b takes every shard over.
    clock.advance(Duration::from_millis(1_200));
    let mut b = host(&store, "b/1", config());
    let t = b.tick().unwrap();
    assert_eq!(t.acquired.len(), SHARDS as usize);
    // b's tick woke the entity: its timer was due, and fired once here.
    assert_eq!(t.woken, 1);
    b.system_mut().run_until_idle().unwrap();
    let ctx = stored_context(&store, "k1").unwrap();
    assert_eq!(list(&ctx, "fired"), [1]);
    let before = store.get_entity("log", "k1").unwrap().unwrap();

    // a wakes: its own timer fires and its commit is refused.
    a.system_mut()
        .advance(Duration::from_millis(1_200))
        .unwrap();
    assert_eq!(a.stats().fenced, 1);
    assert_eq!(store.get_entity("log", "k1").unwrap().unwrap(), before);
    // The activation ended, and the next tick marks the shard lost.
    assert_eq!(a.system().actor_count(), 0);
    let t = a.tick().unwrap();
    assert!(t.lost.contains(&shard_for("k1", SHARDS)), "{t:?}");
    // Nothing of it commits again: a message through a is routed to b.
    match send(&mut a, "k1", 2, false) {
        Err(Routed::NotOwner { owner: Some(l), .. }) => assert_eq!(l.owner, "b/1"),
        other => panic!("expected NotOwner, got {other:?}"),
    }
    assert_eq!(store.get_entity("log", "k1").unwrap().unwrap(), before);
}

#[test]
fn a_message_taken_by_a_paused_owner_is_fenced_and_answered_so() {
    let (clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, false), Ok(Ack::Applied));
    // a takes message 2 into its mailbox and pauses before its turn.
    let (reply, acks) = recorder();
    assert_eq!(
        a.deliver("k1", 2, msg(2, false), reply).unwrap(),
        Routed::Delivered
    );
    clock.advance(Duration::from_millis(1_200));
    let mut b = host(&store, "b/1", config());
    b.tick().unwrap();
    assert_eq!(send(&mut b, "k1", 2, false), Ok(Ack::Applied));
    assert_eq!(send(&mut b, "k1", 3, false), Ok(Ack::Applied));
    // a wakes and takes message 2: fenced, not acknowledged.
    a.system_mut().run_until_idle().unwrap();
    assert_eq!(*acks.lock().unwrap(), [Ack::Fenced]);
    assert_eq!(a.stats().fenced, 1);
    assert_eq!(
        list(&stored_context(&store, "k1").unwrap(), "seqs"),
        [1, 2, 3]
    );
}

#[test]
fn an_idle_entity_is_passivated_and_the_next_message_reactivates_it() {
    let (clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, false), Ok(Ack::Applied));
    assert_eq!(send(&mut a, "k2", 1, false), Ok(Ack::Applied));
    assert_eq!(a.system().actor_count(), 2);
    advance(&mut a, &clock, Duration::from_millis(200));
    assert_eq!(send(&mut a, "k2", 2, false), Ok(Ack::Applied));
    advance(&mut a, &clock, Duration::from_millis(150));
    // k1 was idle for 350 ms, k2 for 150 ms.
    let t = a.tick().unwrap();
    assert_eq!(t.passivated, 1);
    a.system_mut().run_until_idle().unwrap();
    assert_eq!(a.active_keys(), ["k2"]);
    assert_eq!(a.system().actor_count(), 1);
    advance(&mut a, &clock, Duration::from_millis(300));
    a.tick().unwrap();
    a.system_mut().run_until_idle().unwrap();
    assert!(a.active_keys().is_empty());
    assert_eq!(
        a.system().actor_count(),
        0,
        "nothing of a passivated entity stays"
    );
    assert_eq!(a.stats().passivations, 2);

    assert_eq!(send(&mut a, "k1", 2, false), Ok(Ack::Applied));
    assert_eq!(list(&stored_context(&store, "k1").unwrap(), "seqs"), [1, 2]);
    assert_eq!(a.stats().restored, 1);
}

#[test]
fn a_timer_due_while_its_entity_was_passivated_fires_once() {
    let (clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, true), Ok(Ack::Applied));
    advance(&mut a, &clock, Duration::from_millis(300));
    assert_eq!(a.tick().unwrap().passivated, 1);
    a.system_mut().run_until_idle().unwrap();
    assert_eq!(a.system().actor_count(), 0);
    // The deadline passes with no actor for the entity.
    advance(&mut a, &clock, Duration::from_millis(200));
    assert_eq!(
        list(&stored_context(&store, "k1").unwrap(), "fired"),
        Vec::<u64>::new()
    );
    let t = a.tick().unwrap();
    assert_eq!(t.woken, 1);
    a.system_mut().run_until_idle().unwrap();
    let ctx = stored_context(&store, "k1").unwrap();
    assert_eq!(list(&ctx, "fired"), [1]);
    assert_eq!(ctx["spurious"], 0);
    assert_eq!(
        store.get_entity("log", "k1").unwrap().unwrap().wake_at,
        None
    );
    // Once: later ticks find nothing due.
    advance(&mut a, &clock, Duration::from_millis(500));
    assert_eq!(a.tick().unwrap().woken, 0);
    assert_eq!(list(&stored_context(&store, "k1").unwrap(), "fired"), [1]);
}

#[test]
fn a_timer_due_while_its_owner_was_down_fires_once_on_the_next_owner() {
    let (clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, true), Ok(Ack::Applied));
    drop(a); // killed: no release
    clock.advance(Duration::from_millis(2_000));
    let mut b = host(&store, "b/1", config());
    let t = b.tick().unwrap();
    assert_eq!(t.woken, 1);
    b.system_mut().run_until_idle().unwrap();
    let ctx = stored_context(&store, "k1").unwrap();
    assert_eq!(list(&ctx, "fired"), [1]);
    assert_eq!(ctx["spurious"], 0);
    assert_eq!(b.stats().timer_wakes, 1);
}

#[test]
fn a_clean_shutdown_hands_the_shards_over_at_once() {
    let (_clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, false), Ok(Ack::Applied));
    assert_eq!(a.shutdown(Duration::from_secs(1)).unwrap(), SHARDS as usize);
    assert_eq!(a.system().actor_count(), 0);
    let mut b = host(&store, "b/1", config());
    assert_eq!(b.tick().unwrap().acquired.len(), SHARDS as usize);
    assert_eq!(send(&mut b, "k1", 2, false), Ok(Ack::Applied));
    assert_eq!(list(&stored_context(&store, "k1").unwrap(), "seqs"), [1, 2]);
}

#[test]
fn a_message_for_a_done_entity_advances_its_sequence_and_changes_nothing() {
    let (_clock, store) = setup();
    let machine = std::sync::Arc::new(
        turno_chart::load_json::<serde_json::Value>(
            r#"{"id": "once", "initial": "open",
                "states": {"open": {"on": {"MSG": "closed"}}, "closed": {"type": "final"}}}"#,
            &turno_chart::stdlib::implementations(),
        )
        .unwrap(),
    );
    let mut a: Host = turno_entity::EntityHost::new(
        turno::DetSystem::new(1),
        store.clone(),
        "a/1",
        machine,
        config(),
    );
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, false), Ok(Ack::Applied));
    let done = store.get_entity("once", "k1").unwrap().unwrap();
    // The chart is done: its actor stopped.
    assert_eq!(a.system().actor_count(), 0);
    assert_eq!(send(&mut a, "k1", 2, false), Ok(Ack::Applied));
    let after = store.get_entity("once", "k1").unwrap().unwrap();
    assert_eq!(after.applied, 2);
    assert_eq!(after.data, done.data);
    assert_eq!(
        send(&mut a, "k1", 2, false),
        Ok(Ack::Duplicate { applied: 2 })
    );
    assert_eq!(a.system().actor_count(), 0);
}

#[test]
fn a_timer_whose_owner_died_fires_in_the_tick_at_which_its_lease_ends() {
    let (clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, true), Ok(Ack::Applied));
    let deadline = T0 + TIMER_MS as i64;
    drop(a); // killed, its lease held until T0 + 1 s
    let mut b = host(&store, "b/1", config());
    let tick = Duration::from_millis(100);
    let lateness = loop {
        advance(&mut b, &clock, tick);
        b.tick().unwrap();
        b.system_mut().run_until_idle().unwrap();
        if !list(&stored_context(&store, "k1").unwrap(), "fired").is_empty() {
            break clock.now_ms() - deadline;
        }
        assert!(clock.now_ms() < T0 + 10_000, "the timer never fired");
    };
    // b takes the shard in the tick at which a's lease ends and fires the
    // timer in that tick: late by the rest of the lease.
    assert_eq!(lateness, 1_000 - TIMER_MS as i64);
}

#[test]
fn a_due_entity_that_cannot_be_restored_is_reported_and_does_not_stop_the_others() {
    let (clock, store) = setup();
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    // Two entities on one shard, each with a timer; one's state is then
    // corrupted in the store.
    let shard = shard_for("k1", SHARDS);
    let other = (2..)
        .map(|i| format!("k{i}"))
        .find(|k| shard_for(k, SHARDS) == shard)
        .unwrap();
    assert_eq!(send(&mut a, "k1", 1, true), Ok(Ack::Applied));
    assert_eq!(send(&mut a, &other, 1, true), Ok(Ack::Applied));
    a.shutdown(Duration::from_secs(1)).unwrap();
    let lease = match store
        .acquire_shard(shard, "fixer/1", Duration::from_secs(1))
        .unwrap()
    {
        turno_store::LeaseOutcome::Acquired(l) => l,
        other => panic!("{other:?}"),
    };
    let write = turno_store::EntityWrite {
        kind: "log",
        key: "k1",
        shard,
        epoch: lease.epoch,
        seq: None,
        data: b"{not a snapshot",
        wake_at: Some(T0),
    };
    store.commit_entity(&write).unwrap();
    store.release_shard(&lease).unwrap();

    clock.advance(Duration::from_millis(500));
    let mut b = host(&store, "b/1", config());
    let t = b.tick().unwrap();
    assert_eq!(t.woken, 1);
    assert_eq!(t.unrestorable.len(), 1);
    assert_eq!(t.unrestorable[0].0, "k1");
    assert!(t.unrestorable[0].1.contains("restore"), "{t:?}");
    b.system_mut().run_until_idle().unwrap();
    assert_eq!(list(&stored_context(&store, &other).unwrap(), "fired"), [1]);
}
