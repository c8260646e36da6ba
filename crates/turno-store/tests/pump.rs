//! A durable queue delivered into turno actors by a `Pump`.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use turno::{Actor, Addr, Context, Policy, Props, System, ThreadedSystem};
use turno_store::{Delivery, ManualClock, Pump, PumpConfig, SnapshotWrite, Store, SystemClock};

type Seen = Arc<Mutex<Vec<(String, u32)>>>;
/// Snapshots (version, data) an actor found when it reloaded.
type Found = Arc<Mutex<Vec<(u64, Vec<u8>)>>>;

/// How a [`Consumer`] treats a delivery.
#[derive(Clone, Default)]
struct Behaviour {
    /// Panic in the first attempt of this key.
    fail_once: Option<String>,
    /// Panic in every attempt of this key.
    fail_always: Option<String>,
    work: Duration,
    /// Acknowledge with a put of this snapshot (owner "ann"), tracking its
    /// version.
    snapshot: Option<&'static str>,
    /// With `snapshot`: on a redelivery (a commit of this actor may have
    /// been refused), reload the snapshot from this store first and record
    /// the (version, data) found, as an actor restoring its state would.
    reload: Option<(Store, Found)>,
}

/// Records (key, attempt) of each delivery it handles, then acks it.
struct Consumer {
    seen: Seen,
    how: Behaviour,
    version: Option<u64>,
}

impl Actor for Consumer {
    type Msg = Delivery;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, d: Delivery) {
        let key = Some(d.key());
        if self.how.fail_always.as_deref() == key
            || (self.how.fail_once.as_deref() == key && d.attempt() == 1)
        {
            panic!("the turn fails before the ack");
        }
        if !self.how.work.is_zero() {
            std::thread::sleep(self.how.work);
        }
        self.seen
            .lock()
            .unwrap()
            .push((d.key().to_owned(), d.attempt()));
        match self.how.snapshot {
            None => d.ack(),
            Some(name) => {
                if let (Some((store, found)), true) = (&self.how.reload, d.attempt() > 1) {
                    let s = store.get_snapshot("ann", name).unwrap().expect("written");
                    found.lock().unwrap().push((s.version, s.data.clone()));
                    self.version = Some(s.version);
                }
                let w = SnapshotWrite::new("ann", name, self.version, d.key().as_bytes().to_vec());
                self.version = Some(w.new_version());
                d.ack_with_snapshot(w);
            }
        }
    }
}

/// One actor system, one consumer and the pump feeding it.
struct Harness {
    sys: ThreadedSystem,
    seen: Seen,
    probe: Addr<Delivery>,
    pump: Option<Pump>,
}

impl Harness {
    fn start(store: &Store, queue: &str, cap: usize, how: Behaviour, cfg: PumpConfig) -> Self {
        let sys = ThreadedSystem::builder().threads(2).build();
        let seen = Seen::default();
        let addr = spawn_consumer(&sys, cap, &seen, how);
        let probe = addr.clone();
        let pump = Pump::spawn(store.clone(), queue, addr, |d| d, cfg).unwrap();
        Harness {
            sys,
            seen,
            probe,
            pump: Some(pump),
        }
    }

    fn pump(&self) -> &Pump {
        self.pump.as_ref().expect("running")
    }

    fn acked(&self) -> u64 {
        self.pump().stats().acked.load(Ordering::SeqCst)
    }

    fn wait_acked(&self, n: u64, timeout: Duration) {
        wait_for(&format!("{n} acks"), timeout, || self.acked() == n);
    }

    /// Stops the pump and the system; the keys handled, in order.
    fn finish(mut self) -> Vec<(String, u32)> {
        if let Some(p) = self.pump.take() {
            p.stop();
        }
        self.sys.shutdown(Duration::from_secs(5)).unwrap();
        self.seen.lock().unwrap().clone()
    }
}

fn spawn_consumer(sys: &ThreadedSystem, cap: usize, seen: &Seen, how: Behaviour) -> Addr<Delivery> {
    let seen = seen.clone();
    sys.spawn(Props::new().mailbox(Policy::Suspend(cap)), move || {
        Consumer {
            seen: seen.clone(),
            how: how.clone(),
            version: None,
        }
    })
    .unwrap()
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

fn only_keys(seen: &[(String, u32)]) -> Vec<String> {
    seen.iter().map(|(k, _)| k.clone()).collect()
}

fn enqueue_all(store: &Store, queue: &str, n: usize) {
    for k in keys(n) {
        store.enqueue(queue, "ann", &k, k.as_bytes()).unwrap();
    }
}

fn sqlite_store(dir: &tempfile::TempDir) -> Store {
    Store::new(turno_store::SqliteBackend::open(dir.path().join("q.db")).unwrap())
        .with_clock(Arc::new(SystemClock))
}

#[test]
fn every_item_reaches_the_actor_once_and_is_acknowledged() {
    let dir = tempdir();
    let store = sqlite_store(&dir);
    enqueue_all(&store, "inbox", 200);
    let h = Harness::start(
        &store,
        "inbox",
        8,
        Behaviour::default(),
        PumpConfig::default(),
    );
    h.wait_acked(200, Duration::from_secs(30));
    assert_eq!(only_keys(&h.finish()), keys(200), "in order, each once");
    let c = store.queue_counts("inbox").unwrap();
    assert_eq!((c.ready, c.leased, c.acked), (0, 0, 200));
}

#[test]
fn a_failed_turn_releases_its_item_and_it_is_delivered_again() {
    let store = Store::memory();
    enqueue_all(&store, "inbox", 20);
    let how = Behaviour {
        fail_once: Some("evt-0005".into()),
        ..Behaviour::default()
    };
    let h = Harness::start(&store, "inbox", 4, how, PumpConfig::default());
    h.wait_acked(20, Duration::from_secs(30));
    assert!(h.pump().stats().released.load(Ordering::SeqCst) >= 1);
    let seen = h.finish();
    let by_key: BTreeMap<&str, Vec<u32>> = seen.iter().fold(BTreeMap::new(), |mut m, (k, a)| {
        m.entry(k.as_str()).or_insert_with(Vec::new).push(*a);
        m
    });
    assert_eq!(by_key.len(), 20);
    // handled once each; the failed one on its second delivery
    assert!(by_key.values().all(|a| a.len() == 1));
    assert_eq!(by_key["evt-0005"], [2]);
}

#[test]
fn a_poison_item_is_dead_lettered_after_the_cap_and_the_rest_flows() {
    let store = Store::memory().with_max_attempts(3);
    enqueue_all(&store, "inbox", 20);
    let how = Behaviour {
        fail_always: Some("evt-0007".into()),
        ..Behaviour::default()
    };
    let h = Harness::start(
        &store,
        "inbox",
        4,
        how,
        PumpConfig::default().poll(Duration::from_millis(5)),
    );
    h.wait_acked(19, Duration::from_secs(30));
    wait_for("the dead letter", Duration::from_secs(30), || {
        store.queue_counts("inbox").unwrap().dead == 1
    });
    // delivered exactly the cap's number of times, each released by its panic
    assert_eq!(h.pump().stats().released.load(Ordering::SeqCst), 3);
    let seen = h.finish();
    assert_eq!(seen.len(), 19);
    assert!(seen.iter().all(|(k, a)| k != "evt-0007" && *a == 1));
    let dead = store.dead_letters("inbox", 10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].key.as_str(), dead[0].attempts), ("evt-0007", 3));
    assert_eq!(dead[0].payload, b"evt-0007", "kept whole");
    let c = store.queue_counts("inbox").unwrap();
    assert_eq!((c.ready, c.leased, c.acked, c.dead), (0, 0, 19, 1));
}

#[test]
fn acks_with_snapshots_commit_the_state_and_a_second_writer_is_a_conflict() {
    let dir = tempdir();
    let store = sqlite_store(&dir);
    enqueue_all(&store, "inbox", 30);
    let found = Found::default();
    let how = Behaviour {
        snapshot: Some("state"),
        reload: Some((store.clone(), found.clone())),
        ..Behaviour::default()
    };
    let h = Harness::start(&store, "inbox", 4, how, PumpConfig::default());
    h.wait_acked(30, Duration::from_secs(30));
    // the stored state is the last item's, at one version per item
    let s = store.get_snapshot("ann", "state").unwrap().unwrap();
    assert_eq!((s.version, s.data.as_slice()), (30, &b"evt-0029"[..]));
    assert_eq!(h.pump().stats().conflicts.load(Ordering::SeqCst), 0);
    // someone else writes the snapshot: the actor's next commit (built on
    // version 30) conflicts, nothing of it is committed, and the item is
    // delivered again; the redelivery finds the other writer's state and
    // commits on top of it
    store
        .put_snapshot("ann", "state", Some(30), b"other writer", None)
        .unwrap();
    store.enqueue("inbox", "ann", "late", b"late").unwrap();
    h.wait_acked(31, Duration::from_secs(30));
    assert_eq!(h.pump().stats().conflicts.load(Ordering::SeqCst), 1);
    let seen = h.finish();
    let late: Vec<u32> = seen
        .iter()
        .filter(|(k, _)| k == "late")
        .map(|(_, a)| *a)
        .collect();
    assert_eq!(late, [1, 2], "refused once, then delivered again");
    assert_eq!(
        found.lock().unwrap().as_slice(),
        [(31, b"other writer".to_vec())],
        "the conflicting put was not written"
    );
    let s = store.get_snapshot("ann", "state").unwrap().unwrap();
    assert_eq!((s.version, s.data.as_slice()), (32, &b"late"[..]));
    assert_eq!(store.queue_counts("inbox").unwrap().acked, 31);
}

#[test]
fn a_slow_actor_holds_the_queue_back_in_the_database() {
    let dir = tempdir();
    let store = sqlite_store(&dir);
    enqueue_all(&store, "inbox", 60);
    let how = Behaviour {
        work: Duration::from_millis(5),
        ..Behaviour::default()
    };
    let h = Harness::start(&store, "inbox", 4, how, PumpConfig::default());
    let (mut max_depth, mut max_leased, mut saw_waiting) = (0, 0, false);
    while h.acked() < 60 {
        max_depth = max_depth.max(h.probe.depth());
        let c = store.queue_counts("inbox").unwrap();
        max_leased = max_leased.max(c.leased);
        saw_waiting |= c.ready > 0 && c.leased > 0;
        std::thread::sleep(Duration::from_millis(2));
    }
    // never more in the mailbox, nor leased, than the mailbox holds; the
    // rest waited in the database
    assert!(max_depth <= 4, "mailbox depth {max_depth}");
    assert!(max_leased <= 4, "leased {max_leased}");
    assert!(saw_waiting);
    assert_eq!(h.finish().len(), 60);
}

#[test]
fn an_item_whose_lease_ran_out_in_the_mailbox_is_not_sent_twice() {
    // A lease far shorter than the work: the pump re-leases items that wait
    // in the mailbox, and must not deliver them a second time.
    let clock = ManualClock::new(T0);
    let store = memory(clock.clone());
    enqueue_all(&store, "inbox", 10);
    let how = Behaviour {
        work: Duration::from_millis(20),
        ..Behaviour::default()
    };
    let cfg = PumpConfig::default()
        .lease(Duration::from_millis(1))
        .poll(Duration::from_millis(1));
    let h = Harness::start(&store, "inbox", 10, how, cfg);
    let ticker = std::thread::spawn({
        let clock = clock.clone();
        move || {
            for _ in 0..400 {
                clock.advance(Duration::from_millis(5));
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    h.wait_acked(10, Duration::from_secs(30));
    ticker.join().unwrap();
    assert!(h.pump().stats().duplicates_skipped.load(Ordering::SeqCst) > 0);
    assert_eq!(only_keys(&h.finish()), keys(10));
}

#[cfg(feature = "postgres")]
#[test]
fn several_consumers_share_one_postgres_queue() {
    let Some(url) = pg_url() else { return };
    let open = || Store::new(turno_store::postgres::PgBackend::connect(&url).unwrap());
    let producer = open();
    enqueue_all(&producer, "shared", 300);
    let how = Behaviour {
        work: Duration::from_micros(500),
        ..Behaviour::default()
    };
    let consumers: Vec<Harness> = (0..3)
        .map(|_| {
            let cfg = PumpConfig::default().batch(4);
            Harness::start(&open(), "shared", 4, how.clone(), cfg)
        })
        .collect();
    wait_for("300 acks", Duration::from_secs(60), || {
        consumers.iter().map(Harness::acked).sum::<u64>() == 300
    });
    let mut all = Vec::new();
    for h in consumers {
        let mine = only_keys(&h.finish());
        assert!(!mine.is_empty(), "every consumer took part");
        all.extend(mine);
    }
    all.sort();
    assert_eq!(all, keys(300), "each item to exactly one consumer");
    let c = producer.queue_counts("shared").unwrap();
    assert_eq!((c.ready, c.leased, c.acked), (0, 0, 300));
}
