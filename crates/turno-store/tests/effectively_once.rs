//! Effectively once across a real crash: a child process runs a pump into
//! an actor whose state (how many times it applied each key) lives in a
//! store snapshot, and is killed with SIGKILL **between the turn and the
//! ack's commit**: the pump's `before_commit` hook, which runs after the
//! actor handled a batch and before the store knows, makes a marker file
//! and waits to be killed. After each kill a new child restores the actor
//! from the snapshot and the items come back.
//!
//! With `Delivery::ack_with_snapshot` (state and ack in one transaction)
//! every key is applied exactly once in the stored state although items
//! were delivered again. The control runs the same kills with the snapshot
//! put in the turn and a plain `ack` after it, and finds keys applied twice:
//! the window is real and the test sees it.
//!
//! The child is this test binary again, running the ignored test
//! `once_child`.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use turno::{Actor, Context, Policy, Props, System, ThreadedSystem};
use turno_store::{Delivery, Pump, PumpConfig, SnapshotWrite, Store};

const QUEUE: &str = "once";
const OWNER: &str = "counter";
const SNAPSHOT: &str = "applied";
const ITEMS: usize = 40;

type Applied = BTreeMap<String, u32>;

fn open_store(dir: &Path, pg_url: Option<&str>) -> Store {
    common::shared_store(dir, "once.db", pg_url)
}

struct Counter {
    store: Store,
    atomic: bool,
    applied: Applied,
    version: Option<u64>,
    log: std::fs::File,
}

impl Actor for Counter {
    type Msg = Delivery;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, d: Delivery) {
        *self.applied.entry(d.key().to_owned()).or_default() += 1;
        self.log
            .write_all(format!("P {} {}\n", d.key(), d.attempt()).as_bytes())
            .unwrap();
        let data = serde_json::to_vec(&self.applied).unwrap();
        if self.atomic {
            let write = SnapshotWrite::new(OWNER, SNAPSHOT, self.version, data);
            self.version = Some(write.new_version());
            d.ack_with_snapshot(write);
        } else {
            // The control: state first, ack later, two transactions.
            let v = self
                .store
                .put_snapshot(OWNER, SNAPSHOT, self.version, &data, None)
                .unwrap();
            self.version = Some(v);
            d.ack();
        }
    }
}

#[test]
#[ignore = "the child process of the effectively-once tests; they run it"]
fn once_child() {
    let Some(dir) = std::env::var_os("TURNO_ONCE_DIR").map(PathBuf::from) else {
        return;
    };
    let pg_url = std::env::var("TURNO_ONCE_PG_URL").ok();
    let atomic = std::env::var("TURNO_ONCE_MODE").is_ok_and(|m| m == "atomic");
    let stall_at: Option<usize> = std::env::var("TURNO_ONCE_STALL_AT")
        .ok()
        .map(|s| s.parse().unwrap());
    let store = open_store(&dir, pg_url.as_deref());
    let (version, applied) = match store.get_snapshot_json::<Applied>(OWNER, SNAPSHOT).unwrap() {
        Some((v, a)) => (Some(v), a),
        None => (None, Applied::new()),
    };
    let sys = ThreadedSystem::builder().threads(2).build();
    let addr = sys
        .spawn(Props::new().mailbox(Policy::Suspend(4)), {
            let store = store.clone();
            let dir = dir.clone();
            move || Counter {
                store: store.clone(),
                atomic,
                applied: applied.clone(),
                version,
                log: std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join("deliveries.log"))
                    .unwrap(),
            }
        })
        .unwrap();
    let mut batches = 0;
    let marker = dir.join("stalled");
    let pump = Pump::spawn(
        store.clone(),
        QUEUE,
        addr,
        |d| d,
        PumpConfig::default()
            .lease(Duration::from_millis(400))
            .poll(Duration::from_millis(5))
            .batch(4)
            .before_commit(move |keys| {
                batches += 1;
                if Some(batches) == stall_at {
                    // The actor handled these; the store has not heard.
                    std::fs::write(&marker, keys.join("\n")).unwrap();
                    std::thread::sleep(Duration::from_secs(120));
                }
            }),
    )
    .unwrap();
    common::wait_drained(&store, QUEUE, Duration::from_secs(90));
    pump.stop();
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

fn child(dir: &Path, pg_url: Option<&str>, atomic: bool, stall_at: Option<usize>) -> Command {
    let mut cmd = common::child_process("once_child");
    cmd.env("TURNO_ONCE_DIR", dir).env(
        "TURNO_ONCE_MODE",
        if atomic { "atomic" } else { "separate" },
    );
    if let Some(u) = pg_url {
        cmd.env("TURNO_ONCE_PG_URL", u);
    }
    if let Some(n) = stall_at {
        cmd.env("TURNO_ONCE_STALL_AT", n.to_string());
    }
    cmd
}

struct Outcome {
    applied: Applied,
    /// Deliveries with attempt > 1: items the kills made come back.
    redelivered: usize,
    acked: u64,
}

/// Enqueues the items, kills a child at the given commit batches, lets a
/// last child drain the queue, and reads the stored state.
fn kill_between_turn_and_ack(pg_url: Option<&str>, atomic: bool, kills: &[usize]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), pg_url);
    for i in 0..ITEMS {
        store
            .enqueue(QUEUE, OWNER, &format!("k{i:02}"), b"+1")
            .unwrap();
    }
    let marker = dir.path().join("stalled");
    for (round, &at) in kills.iter().enumerate() {
        let mut c = child(dir.path(), pg_url, atomic, Some(at)).spawn().unwrap();
        common::wait_for_child(
            &mut c,
            Duration::from_secs(90),
            &format!("reached batch {at} in round {round}"),
            || marker.exists(),
        );
        // SIGKILL, with the batch handled and not committed.
        common::kill(c);
        // What the killed child's actor had handled in that batch is not
        // acknowledged in the store.
        let batch = std::fs::read_to_string(&marker).unwrap();
        std::fs::remove_file(&marker).unwrap();
        let counts = store.queue_counts(QUEUE).unwrap();
        assert!(
            counts.acked < ITEMS as u64,
            "round {round}: the kill left items {batch:?} unacknowledged"
        );
    }
    let status = child(dir.path(), pg_url, atomic, None).status().unwrap();
    assert!(status.success(), "the draining child failed: {status}");
    let (_, applied) = store
        .get_snapshot_json::<Applied>(OWNER, SNAPSHOT)
        .unwrap()
        .expect("the state was stored");
    let log = std::fs::read_to_string(dir.path().join("deliveries.log")).unwrap();
    let redelivered = log
        .lines()
        .filter(|l| l.rsplit(' ').next().is_some_and(|a| a != "1"))
        .count();
    let counts = store.queue_counts(QUEUE).unwrap();
    assert_eq!((counts.ready, counts.leased, counts.dead), (0, 0, 0));
    Outcome {
        applied,
        redelivered,
        acked: counts.acked,
    }
}

const KILLS: [usize; 4] = [1, 2, 3, 2];

fn assert_exactly_once(o: &Outcome, backend: &str) {
    assert_eq!(o.acked, ITEMS as u64);
    assert_eq!(o.applied.len(), ITEMS, "{backend}: every key applied");
    let twice: Vec<_> = o.applied.iter().filter(|(_, &n)| n != 1).collect();
    assert!(
        twice.is_empty(),
        "{backend}: applied more than once: {twice:?}"
    );
    assert!(
        o.redelivered >= KILLS.len(),
        "{backend}: the kills made items come back ({} redeliveries)",
        o.redelivered
    );
    eprintln!(
        "{backend}: {} SIGKILLs between turn and ack, {} redeliveries, every key applied once",
        KILLS.len(),
        o.redelivered
    );
}

#[test]
fn sqlite_state_and_ack_commit_together_across_sigkill() {
    let o = kill_between_turn_and_ack(None, true, &KILLS);
    assert_exactly_once(&o, "sqlite");
}

#[test]
fn sqlite_control_separate_put_and_ack_applies_twice() {
    let o = kill_between_turn_and_ack(None, false, &KILLS);
    let twice = o.applied.values().filter(|&&n| n > 1).count();
    assert!(
        twice >= KILLS.len(),
        "with the put in the turn and the ack after it, each kill makes a key apply twice \
         ({twice} keys did)"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_state_and_ack_commit_together_across_sigkill() {
    let Some(url) = common::pg_url() else { return };
    let o = kill_between_turn_and_ack(Some(&url), true, &KILLS);
    assert_exactly_once(&o, "postgres");
}
