//! The same host on the durable backends: SQLite (a file) and PostgreSQL
//! (turno-store's temporary cluster, feature `postgres`). One scenario:
//! once per message, passivation and a timer due meanwhile, a paused owner
//! fenced after a takeover, a timer due while its owner was down.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use turno::System;
use turno_entity::{Ack, HostConfig, Routed};
use turno_store::{ManualClock, Store};

fn config() -> HostConfig {
    HostConfig {
        shards: 4,
        lease_ttl: Duration::from_millis(1_000),
        idle: Duration::from_millis(300),
        due_batch: 16,
    }
}

fn scenario(store: Store, clock: Arc<ManualClock>) {
    let mut a = host(&store, "a/1", config());
    a.tick().unwrap();
    assert_eq!(send(&mut a, "k1", 1, true), Ok(Ack::Applied));
    assert_eq!(send(&mut a, "k1", 2, false), Ok(Ack::Applied));
    assert_eq!(
        send(&mut a, "k1", 2, false),
        Ok(Ack::Duplicate { applied: 2 })
    );

    // Passivated, then woken by the tick when its timer is due.
    advance(&mut a, &clock, Duration::from_millis(300));
    assert_eq!(a.tick().unwrap().passivated, 1);
    a.system_mut().run_until_idle().unwrap();
    assert_eq!(a.system().actor_count(), 0);
    advance(&mut a, &clock, Duration::from_millis(200));
    assert_eq!(a.tick().unwrap().woken, 1);
    a.system_mut().run_until_idle().unwrap();
    assert_eq!(list(&stored_context(&store, "k1").unwrap(), "fired"), [1]);

    // a takes message 3 and pauses past its lease; b takes over.
    let (reply, acks) = recorder();
    assert_eq!(
        a.deliver("k1", 3, msg(3, false), reply).unwrap(),
        Routed::Delivered
    );
    clock.advance(Duration::from_millis(1_200));
    let mut b = host(&store, "b/1", config());
    assert_eq!(b.tick().unwrap().acquired.len(), 4);
    assert_eq!(send(&mut b, "k1", 3, false), Ok(Ack::Applied));
    assert_eq!(send(&mut b, "k1", 4, true), Ok(Ack::Applied));
    a.system_mut()
        .advance(Duration::from_millis(1_200))
        .unwrap();
    assert_eq!(*acks.lock().unwrap(), [Ack::Fenced]);
    assert_eq!(a.stats().fenced, 1);

    // b dies with message 4's timer pending; c fires it, once.
    drop(b);
    clock.advance(Duration::from_millis(2_000));
    let mut c = host(&store, "c/1", config());
    assert_eq!(c.tick().unwrap().woken, 1);
    c.system_mut().run_until_idle().unwrap();
    let ctx = stored_context(&store, "k1").unwrap();
    assert_eq!(list(&ctx, "seqs"), [1, 2, 3, 4]);
    assert_eq!(list(&ctx, "fired"), [1, 4]);
    assert_eq!(ctx["spurious"], 0);
    let e = store.get_entity("log", "k1").unwrap().unwrap();
    assert_eq!((e.applied, e.wake_at), (4, None));
}

#[test]
fn the_host_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let store = Store::sqlite(dir.path().join("entities.db"))
        .unwrap()
        .with_clock(clock.clone());
    scenario(store, clock);
}

#[cfg(feature = "postgres")]
#[test]
fn the_host_on_postgres() {
    let url = match turno_store::postgres::TempCluster::shared() {
        Ok(cluster) => cluster.fresh_database().expect("create database"),
        Err(e) => {
            // Under CI a missing server is a failure, never a skip.
            if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
                panic!("CI: the PostgreSQL test server must start: {e}");
            }
            eprintln!("skipping the PostgreSQL run: {e}");
            return;
        }
    };
    let clock = ManualClock::new(T0);
    let store = Store::postgres(&url).unwrap().with_clock(clock.clone());
    scenario(store, clock);
}
