//! Each mailbox policy's exact semantics, observed through real actors on the
//! deterministic scheduler.

#![cfg(not(turno_loom))]

use std::sync::Arc;
use std::time::Duration;
use turno::System;

use parking_lot::Mutex;
use turno::{Actor, Context, DetSystem, Policy, Props, Verdict};

/// Records every message it handles.
struct Recorder {
    log: Arc<Mutex<Vec<u32>>>,
}

impl Actor for Recorder {
    type Msg = u32;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, n: u32) {
        self.log.lock().push(n);
    }
}

fn recorder(sys: &mut DetSystem, policy: Policy) -> (turno::Addr<u32>, Arc<Mutex<Vec<u32>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let addr = sys
        .spawn(Props::new().mailbox(policy), move || Recorder {
            log: l.clone(),
        })
        .unwrap();
    sys.run_until_idle().unwrap(); // the started turn
    (addr, log)
}

#[test]
fn keep_newest_queues_and_the_receiver_evicts_the_oldest() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::KeepNewest(3));
    assert_eq!(a.try_send(1), Verdict::Enqueued { remaining: Some(2) });
    assert_eq!(a.try_send(2), Verdict::Enqueued { remaining: Some(1) });
    assert_eq!(a.try_send(3), Verdict::Enqueued { remaining: Some(0) });
    assert_eq!(a.try_send(4), Verdict::Evicting);
    assert_eq!(a.try_send(5), Verdict::Evicting);
    // Queued, the evictions owed: nothing is dropped until the receiver takes.
    assert_eq!(a.depth(), 5);
    assert_eq!(a.stats().dropped, 0);
    sys.run_until_idle().unwrap();
    assert_eq!(*log.lock(), vec![3, 4, 5]);
    let st = a.stats();
    assert_eq!((st.offered, st.taken, st.dropped), (5, 3, 2));
}

#[test]
fn keep_newest_evicts_what_is_owed_before_a_close_drains_the_rest() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::KeepNewest(2));
    for i in 1..=5 {
        assert!(a.try_send(i).is_enqueued());
    }
    sys.stop(a.id());
    sys.run_until_idle().unwrap();
    assert!(log.lock().is_empty());
    let st = a.stats();
    // Three evictions were owed (5 queued, capacity 2): dropped; the two
    // newest were drained as dead letters.
    assert_eq!((st.offered, st.taken, st.dropped, st.drained), (5, 0, 3, 2));
}

#[test]
fn keep_newest_of_one_is_the_last_known_value() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::KeepNewest(1));
    for i in 0..10 {
        let _ = a.try_send(i);
    }
    sys.run_until_idle().unwrap();
    assert_eq!(*log.lock(), vec![9]);
}

#[test]
fn keep_oldest_drops_the_incoming_message() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::KeepOldest(2));
    assert_eq!(a.try_send(1), Verdict::Enqueued { remaining: Some(1) });
    assert_eq!(a.try_send(2), Verdict::Enqueued { remaining: Some(0) });
    assert_eq!(a.try_send(3), Verdict::Dropped(3));
    sys.run_until_idle().unwrap();
    assert_eq!(a.try_send(4), Verdict::Enqueued { remaining: Some(1) });
    sys.run_until_idle().unwrap();
    assert_eq!(*log.lock(), vec![1, 2, 4]);
    assert_eq!(a.stats().dropped, 1);
}

#[test]
fn reject_hands_the_message_back() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::Reject(1));
    assert_eq!(a.try_send(1), Verdict::Enqueued { remaining: Some(0) });
    assert_eq!(a.try_send(2), Verdict::Rejected(2));
    sys.run_until_idle().unwrap();
    assert_eq!(*log.lock(), vec![1]);
    assert_eq!(a.stats().rejected, 1);
}

#[test]
fn suspend_refuses_a_non_waiting_outside_sender_with_full() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::Suspend(2));
    assert!(a.try_send(1).is_enqueued());
    assert!(a.try_send(2).is_enqueued());
    assert_eq!(a.try_send(3), Verdict::Full(3));
    sys.run_until_idle().unwrap();
    assert_eq!(*log.lock(), vec![1, 2]);
}

#[test]
fn suspend_blocking_sender_waits_for_room() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::Suspend(2));
    let sender = {
        let a = a.clone();
        std::thread::spawn(move || {
            for i in 0..20 {
                assert!(a.send_blocking(i).is_enqueued());
            }
        })
    };
    // Drive the actor until the sender is done and everything is handled.
    while log.lock().len() < 20 {
        sys.run_until_idle().unwrap();
        std::thread::yield_now();
    }
    sender.join().unwrap();
    assert_eq!(*log.lock(), (0..20).collect::<Vec<_>>());
    assert!(
        a.stats().max_depth <= 2,
        "never above capacity: {:?}",
        a.stats()
    );
}

/// Waits (polling, up to 10 s) until `cond` holds.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    cond()
}

/// Waits until `value` has stayed the same for 100 ms (up to 10 s), and
/// returns it.
fn settled(mut value: impl FnMut() -> u64) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut last = value();
    let mut since = std::time::Instant::now();
    while std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        let now = value();
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        } else if since.elapsed() >= Duration::from_millis(100) {
            break;
        }
    }
    last
}

#[test]
fn a_waiting_sender_is_woken_below_the_low_watermark_not_per_slot() {
    let mut sys = DetSystem::new(1);
    // Capacity 4, low watermark 2.
    let (a, log) = recorder(&mut sys, Policy::Suspend(4));
    for i in 0..4 {
        assert!(a.try_send(i).is_enqueued());
    }
    let sender = {
        let a = a.clone();
        std::thread::spawn(move || a.send_blocking(99).is_enqueued())
    };
    // Refused on the first try, on each retry of its brief spin, and on the
    // retry after registering as a waiter; then it is asleep: the count
    // stops growing.
    let parked = settled(|| a.stats().refused_full);
    assert!(parked >= 2, "{:?}", a.stats());
    assert!(sys.step());
    assert_eq!(a.depth(), 3);
    // One slot is free, but the depth is not below the watermark: the
    // sender is not woken for it (it would have retried: one more refusal
    // or a fifth message).
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(a.stats().refused_full, parked, "{:?}", a.stats());
    assert_eq!(a.depth(), 3);
    assert!(sys.step());
    assert!(sys.step());
    // Depth 1 < 2: woken, and in.
    assert!(eventually(|| a.depth() == 2));
    assert!(sender.join().unwrap());
    sys.run_until_idle().unwrap();
    assert_eq!(*log.lock(), vec![0, 1, 2, 3, 99]);
}

#[test]
fn unbounded_takes_everything() {
    let mut sys = DetSystem::new(1);
    let (a, log) = recorder(&mut sys, Policy::Unbounded);
    for i in 0..10_000 {
        assert_eq!(a.try_send(i), Verdict::Enqueued { remaining: None });
    }
    sys.run_until_idle().unwrap();
    assert_eq!(log.lock().len(), 10_000);
    assert_eq!(a.stats().max_depth, 10_000);
}

#[test]
fn meaningless_capacity_is_a_spawn_error() {
    let sys = DetSystem::new(1);
    let err = sys
        .spawn(
            Props::new().name("zero").mailbox(Policy::KeepNewest(0)),
            || Recorder {
                log: Default::default(),
            },
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("\"zero\"") && text.contains("keep-newest(0)"),
        "{text}"
    );
}

#[test]
fn send_to_a_stopped_actor_is_closed_and_a_dead_letter() {
    let mut sys = DetSystem::new(1);
    let (a, _log) = recorder(&mut sys, Policy::KeepOldest(4));
    let _ = a.try_send(1);
    let _ = a.try_send(2);
    sys.stop(a.id());
    sys.run_until_idle().unwrap();
    assert!(a.is_closed());
    // The stop travelled in the system lane, ahead of the two queued
    // messages: those became dead letters.
    assert_eq!(sys.dead_letters(), 2);
    assert_eq!(a.try_send(3), Verdict::Closed(3));
    assert_eq!(sys.dead_letters(), 3);
}

/// Sends `count` numbered messages to `to` when poked, one per sender id.
struct Burst {
    me: u32,
    to: turno::Addr<(u32, u32)>,
    count: u32,
}

impl Actor for Burst {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _: ()) {
        for i in 0..self.count {
            let _ = ctx.send(&self.to, (self.me, i));
        }
    }
}

struct PairLog(Arc<Mutex<Vec<(u32, u32)>>>);
impl Actor for PairLog {
    type Msg = (u32, u32);
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, m: (u32, u32)) {
        self.0.lock().push(m);
    }
}

#[test]
fn fifo_per_sender_receiver_pair_under_any_interleaving() {
    for seed in 0..20 {
        let mut sys = DetSystem::new(seed);
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let sink = sys
            .spawn(Props::new().mailbox(Policy::Unbounded), move || {
                PairLog(l.clone())
            })
            .unwrap();
        let senders: Vec<_> = (0..3)
            .map(|me| {
                let to = sink.clone();
                sys.spawn(Props::new(), move || Burst {
                    me,
                    to: to.clone(),
                    count: 50,
                })
                .unwrap()
            })
            .collect();
        for s in &senders {
            let _ = s.try_send(());
            let _ = s.try_send(());
        }
        sys.run_until_idle().unwrap();
        let log = log.lock();
        assert_eq!(log.len(), 300);
        for me in 0..3 {
            let seq: Vec<u32> = log
                .iter()
                .filter(|(s, _)| *s == me)
                .map(|(_, i)| *i)
                .collect();
            let expected: Vec<u32> = (0..50).chain(0..50).collect();
            assert_eq!(seq, expected, "seed {seed}, sender {me}");
        }
    }
}

/// A slow actor with a tiny keep-oldest mailbox that must still obey stop
/// and timers while its user lane overflows.
struct Overloaded {
    ticks: Arc<Mutex<u32>>,
}

#[derive(Debug)]
enum OMsg {
    Work,
    Tick,
}

impl Actor for Overloaded {
    type Msg = OMsg;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_after(Duration::from_millis(5), OMsg::Tick);
    }
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: OMsg) {
        match m {
            OMsg::Work => ctx.simulate_work(Duration::from_millis(100)),
            OMsg::Tick => *self.ticks.lock() += 1,
        }
    }
}

#[test]
fn the_system_lane_survives_overload() {
    let mut sys = DetSystem::new(3);
    let ticks = Arc::new(Mutex::new(0));
    let t = ticks.clone();
    let a = sys
        .spawn(Props::new().mailbox(Policy::KeepOldest(1)), move || {
            Overloaded { ticks: t.clone() }
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let mut dropped = 0;
    for _ in 0..1000 {
        if let Verdict::Dropped(_) = a.try_send(OMsg::Work) {
            dropped += 1;
        }
    }
    assert_eq!(dropped, 999);
    // The timer fires into the system lane even though the user lane is full
    // and the actor is busy with the first Work message.
    sys.advance(Duration::from_millis(200)).unwrap();
    assert_eq!(*ticks.lock(), 1);
    for _ in 0..10 {
        let _ = a.try_send(OMsg::Work);
    }
    sys.stop(a.id());
    sys.run_until_idle().unwrap();
    assert!(!sys.is_alive(a.id()), "stop overtakes a full user lane");
}
