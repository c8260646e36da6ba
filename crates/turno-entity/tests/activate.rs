//! `EntityHost::activate`: an entity brought into memory without a
//! message, on the node that owns its shard, restored from its stored
//! snapshot with its overdue timers fired once.

mod common;

use std::time::Duration;

use common::*;
use turno_entity::{Ack, HostConfig, Routed};
use turno_store::{shard_for, ManualClock, Store};

const SHARDS: u32 = 4;

fn config(due_batch: usize) -> HostConfig {
    HostConfig {
        shards: SHARDS,
        lease_ttl: Duration::from_millis(1_000),
        idle: Duration::from_secs(60),
        due_batch,
    }
}

#[test]
fn activate_restores_an_entity_of_a_dead_owner_and_fires_its_overdue_timer_once() {
    let clock = ManualClock::new(T0);
    let store = Store::memory().with_clock(clock.clone());
    let mut a = host(&store, "a/1", config(16));
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, true), Ok(Ack::Applied));
    drop(a); // killed with its timer pending
    clock.advance(Duration::from_millis(2_000));
    // b's ticks wake no due entity (a batch of none): only `activate` can.
    let mut b = host(&store, "b/1", config(0));
    assert_eq!(b.tick().unwrap().acquired.len(), SHARDS as usize);
    assert_eq!(b.tick().unwrap().woken, 0);
    assert!(b.active_keys().is_empty());
    assert_eq!(
        list(&stored_context(&store, "k1").unwrap(), "fired"),
        Vec::<u64>::new()
    );

    assert_eq!(b.activate("k1").unwrap(), Routed::Delivered);
    b.system_mut().run_until_idle().unwrap();
    assert_eq!(b.active_keys(), ["k1"]);
    assert_eq!(b.stats().restored, 1);
    let ctx = stored_context(&store, "k1").unwrap();
    assert_eq!(list(&ctx, "fired"), [1], "the overdue timer fired on b");
    assert_eq!(ctx["spurious"], 0);

    // Again: the entity is in memory, nothing more happens.
    assert_eq!(b.activate("k1").unwrap(), Routed::Delivered);
    b.system_mut().run_until_idle().unwrap();
    assert_eq!(b.stats().activations, 1);
    assert_eq!(list(&stored_context(&store, "k1").unwrap(), "fired"), [1]);
    assert_eq!(store.get_entity("log", "k1").unwrap().unwrap().applied, 1);
}

#[test]
fn activate_leaves_an_unknown_key_alone_and_names_the_owner_of_a_shard_held_elsewhere() {
    let clock = ManualClock::new(T0);
    let store = Store::memory().with_clock(clock.clone());
    let mut a = host(&store, "a/1", config(16));
    a.tick().unwrap();
    assert_eq!(a.activate("never-sent").unwrap(), Routed::Delivered);
    assert!(a.active_keys().is_empty());
    assert_eq!(store.get_entity("log", "never-sent").unwrap(), None);

    let mut b = host(&store, "b/1", config(16));
    b.tick().unwrap();
    match b.activate("k1").unwrap() {
        Routed::NotOwner { shard, owner } => {
            assert_eq!(shard, shard_for("k1", SHARDS));
            assert_eq!(owner.map(|l| l.owner), Some("a/1".to_string()));
        }
        other => panic!("b owns no shard: {other:?}"),
    }
    assert_eq!(b.stats().not_owner, 1);
}
