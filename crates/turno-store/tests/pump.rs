//! A durable queue delivered into turno actors by a `Pump`.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use turno::System;

use common::*;
use turno::{Actor, Context, Policy, Props, ThreadedSystem};
use turno_store::{Delivery, ManualClock, Pump, PumpConfig, Store, SystemClock};

type Seen = Arc<Mutex<Vec<(String, u32)>>>;

/// Records (key, attempt) of each delivery it handles, then acks it.
struct Consumer {
    seen: Seen,
    /// Panic in the first attempt of this key.
    fail_once: Option<String>,
    work: Duration,
}

impl Actor for Consumer {
    type Msg = Delivery;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, d: Delivery) {
        if self.fail_once.as_deref() == Some(d.key()) && d.attempt() == 1 {
            panic!("the turn fails before the ack");
        }
        if !self.work.is_zero() {
            std::thread::sleep(self.work);
        }
        self.seen
            .lock()
            .unwrap()
            .push((d.key().to_owned(), d.attempt()));
        d.ack();
    }
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("evt-{i:04}")).collect()
}

fn spawn_consumer(sys: &ThreadedSystem, cap: usize, c: Consumer) -> turno::Addr<Delivery> {
    let seen = c.seen.clone();
    let fail_once = c.fail_once.clone();
    let work = c.work;
    sys.spawn(Props::new().mailbox(Policy::Suspend(cap)), move || {
        Consumer {
            seen: seen.clone(),
            fail_once: fail_once.clone(),
            work,
        }
    })
    .unwrap()
}

fn sqlite_store(dir: &tempfile::TempDir) -> Store {
    Store::new(turno_store::SqliteBackend::open(dir.path().join("q.db")).unwrap())
        .with_clock(Arc::new(SystemClock))
}

#[test]
fn every_item_reaches_the_actor_once_and_is_acknowledged() {
    let dir = tempdir();
    let store = sqlite_store(&dir);
    for k in keys(200) {
        store.enqueue("inbox", "ann", &k, k.as_bytes()).unwrap();
    }
    let sys = ThreadedSystem::builder().threads(2).build();
    let seen = Seen::default();
    let addr = spawn_consumer(
        &sys,
        8,
        Consumer {
            seen: seen.clone(),
            fail_once: None,
            work: Duration::ZERO,
        },
    );
    let pump = Pump::spawn(store.clone(), "inbox", addr, |d| d, PumpConfig::default()).unwrap();
    wait_for("200 acks", Duration::from_secs(30), || {
        pump.stats().acked.load(Ordering::SeqCst) == 200
    });
    pump.stop();
    let got: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(got, keys(200), "in order, each once");
    let c = store.queue_counts("inbox").unwrap();
    assert_eq!((c.ready, c.leased, c.acked), (0, 0, 200));
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_failed_turn_releases_its_item_and_it_is_delivered_again() {
    let store = Store::memory();
    for k in keys(20) {
        store.enqueue("inbox", "ann", &k, b"").unwrap();
    }
    let sys = ThreadedSystem::builder().threads(2).build();
    let seen = Seen::default();
    let addr = spawn_consumer(
        &sys,
        4,
        Consumer {
            seen: seen.clone(),
            fail_once: Some("evt-0005".into()),
            work: Duration::ZERO,
        },
    );
    let pump = Pump::spawn(store.clone(), "inbox", addr, |d| d, PumpConfig::default()).unwrap();
    wait_for("20 acks", Duration::from_secs(30), || {
        pump.stats().acked.load(Ordering::SeqCst) == 20
    });
    assert!(pump.stats().released.load(Ordering::SeqCst) >= 1);
    pump.stop();
    let seen = seen.lock().unwrap().clone();
    let by_key: BTreeMap<&str, Vec<u32>> = seen.iter().fold(BTreeMap::new(), |mut m, (k, a)| {
        m.entry(k.as_str()).or_insert_with(Vec::new).push(*a);
        m
    });
    assert_eq!(by_key.len(), 20);
    // handled once each; the failed one on its second delivery
    assert!(by_key.values().all(|a| a.len() == 1));
    assert_eq!(by_key["evt-0005"], [2]);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_slow_actor_holds_the_queue_back_in_the_database() {
    let dir = tempdir();
    let store = sqlite_store(&dir);
    for k in keys(60) {
        store.enqueue("inbox", "ann", &k, b"").unwrap();
    }
    let sys = ThreadedSystem::builder().threads(2).build();
    let seen = Seen::default();
    let addr = spawn_consumer(
        &sys,
        4,
        Consumer {
            seen: seen.clone(),
            fail_once: None,
            work: Duration::from_millis(5),
        },
    );
    let probe = addr.clone();
    let pump = Pump::spawn(store.clone(), "inbox", addr, |d| d, PumpConfig::default()).unwrap();
    let (mut max_depth, mut max_leased, mut saw_waiting) = (0, 0, false);
    while pump.stats().acked.load(Ordering::SeqCst) < 60 {
        max_depth = max_depth.max(probe.depth());
        let c = store.queue_counts("inbox").unwrap();
        max_leased = max_leased.max(c.leased);
        saw_waiting |= c.ready > 0 && c.leased > 0;
        std::thread::sleep(Duration::from_millis(2));
    }
    pump.stop();
    // never more in the mailbox, nor leased, than the mailbox holds; the
    // rest waited in the database
    assert!(max_depth <= 4, "mailbox depth {max_depth}");
    assert!(max_leased <= 4, "leased {max_leased}");
    assert!(saw_waiting);
    assert_eq!(seen.lock().unwrap().len(), 60);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn an_item_whose_lease_ran_out_in_the_mailbox_is_not_sent_twice() {
    // A lease far shorter than the work: the pump re-leases items that wait
    // in the mailbox, and must not deliver them a second time.
    let clock = ManualClock::new(T0);
    let store = memory(clock.clone());
    for k in keys(10) {
        store.enqueue("inbox", "ann", &k, b"").unwrap();
    }
    let sys = ThreadedSystem::builder().threads(2).build();
    let seen = Seen::default();
    let addr = spawn_consumer(
        &sys,
        10,
        Consumer {
            seen: seen.clone(),
            fail_once: None,
            work: Duration::from_millis(20),
        },
    );
    let pump = Pump::spawn(
        store.clone(),
        "inbox",
        addr,
        |d| d,
        PumpConfig::default()
            .lease(Duration::from_millis(1))
            .poll(Duration::from_millis(1)),
    )
    .unwrap();
    let ticker = std::thread::spawn({
        let clock = clock.clone();
        let stats_done = Arc::new(());
        move || {
            let _keep = stats_done;
            for _ in 0..400 {
                clock.advance(Duration::from_millis(5));
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    wait_for("10 acks", Duration::from_secs(30), || {
        pump.stats().acked.load(Ordering::SeqCst) == 10
    });
    ticker.join().unwrap();
    assert!(pump.stats().duplicates_skipped.load(Ordering::SeqCst) > 0);
    pump.stop();
    let got: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(got, keys(10));
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[cfg(feature = "postgres")]
#[test]
fn several_consumers_share_one_postgres_queue() {
    let Some(url) = pg_url() else { return };
    let open = || Store::new(turno_store::postgres::PgBackend::connect(&url).unwrap());
    let producer = open();
    for k in keys(300) {
        producer.enqueue("shared", "ann", &k, b"").unwrap();
    }
    let sys = ThreadedSystem::builder().threads(2).build();
    let consumers: Vec<(Seen, Pump)> = (0..3)
        .map(|_| {
            let seen = Seen::default();
            let addr = spawn_consumer(
                &sys,
                4,
                Consumer {
                    seen: seen.clone(),
                    fail_once: None,
                    work: Duration::from_micros(500),
                },
            );
            let pump = Pump::spawn(
                open(),
                "shared",
                addr,
                |d| d,
                PumpConfig::default().batch(4),
            )
            .unwrap();
            (seen, pump)
        })
        .collect();
    wait_for("300 acks", Duration::from_secs(60), || {
        consumers
            .iter()
            .map(|(_, p)| p.stats().acked.load(Ordering::SeqCst))
            .sum::<u64>()
            == 300
    });
    let mut all = Vec::new();
    for (seen, pump) in consumers {
        pump.stop();
        let mine: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|(k, _)| k.clone())
            .collect();
        assert!(!mine.is_empty(), "every consumer took part");
        all.extend(mine);
    }
    all.sort();
    assert_eq!(all, keys(300), "each item to exactly one consumer");
    let c = producer.queue_counts("shared").unwrap();
    assert_eq!((c.ready, c.leased, c.acked), (0, 0, 300));
    sys.shutdown(Duration::from_secs(5)).unwrap();
}
