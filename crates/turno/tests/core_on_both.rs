//! The core behaviours, run on every scheduler (deterministic, threaded,
//! local): FIFO per pair, supervision strategies and escalation, stop order,
//! watch, dead letters, stash order, request/reply with timeouts and stale
//! replies, saturated cycles.

#![cfg(not(turno_loom))]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::tree::{CMsg, Child, Log, Parent, Watcher};
use common::{settle, sleep, spawn};
use parking_lot::Mutex;
use turno::{
    Actor, Addr, Context, ExitReason, Policy, Props, ReplyTo, Response, Strategy, Supervision,
    System,
};

on_both! {
    fifo_per_pair => fifo_per_pair;
    one_for_one => one_for_one;
    one_for_all => one_for_all;
    rest_for_one => rest_for_one;
    escalation => escalation;
    stop_children_first => stop_children_first;
    watch_and_dead_letters => watch_and_dead_letters;
    stash_order => stash_order;
    ask_reply_timeout_and_stale => ask_reply_timeout_and_stale;
    saturated_cycle_progresses => saturated_cycle_progresses;
    saturated_ring_progresses => saturated_ring_progresses;
}

// ----- FIFO ---------------------------------------------------------------

struct Burst {
    me: u32,
    to: Addr<(u32, u32)>,
}
impl Actor for Burst {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, count: u32) {
        for i in 0..count {
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

fn fifo_per_pair(sys: &mut impl System) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let sink = spawn(sys, Props::new().mailbox(Policy::Suspend(16)), move || {
        PairLog(l.clone())
    });
    for me in 0..4 {
        let to = sink.clone();
        let s = spawn(sys, Props::new(), move || Burst { me, to: to.clone() });
        let _ = s.try_send(200);
    }
    settle(sys);
    let log = log.lock();
    assert_eq!(log.len(), 800);
    for me in 0..4 {
        let seq: Vec<u32> = log
            .iter()
            .filter(|(s, _)| *s == me)
            .map(|(_, i)| *i)
            .collect();
        assert_eq!(seq, (0..200).collect::<Vec<_>>(), "sender {me}");
    }
}

// ----- supervision --------------------------------------------------------

fn tree(sys: &mut impl System, s: Supervision) -> (Addr<()>, Vec<Addr<CMsg>>, Log) {
    let log: Log = Default::default();
    let out = Arc::new(Mutex::new(Vec::new()));
    let (l, o) = (log.clone(), out.clone());
    let parent = spawn(sys, Props::new().supervision(s), move || Parent {
        log: l.clone(),
        out: o.clone(),
    });
    settle(sys);
    let kids = out.lock().clone();
    log.lock().clear();
    (parent, kids, log)
}

fn restarts(sys: &impl System, kids: &[Addr<CMsg>]) -> Vec<u32> {
    kids.iter().map(|k| sys.restarts(k.id())).collect()
}

fn one_for_one(sys: &mut impl System) {
    let (_p, kids, _log) = tree(sys, Supervision::new(Strategy::OneForOne));
    let _ = kids[1].try_send(CMsg::Crash);
    settle(sys);
    assert_eq!(restarts(sys, &kids), vec![0, 1, 0]);
}

fn one_for_all(sys: &mut impl System) {
    let (_p, kids, log) = tree(sys, Supervision::new(Strategy::OneForAll));
    let _ = kids[1].try_send(CMsg::Crash);
    settle(sys);
    assert_eq!(restarts(sys, &kids), vec![1, 1, 1]);
    let mut log = log.lock().clone();
    log.sort();
    assert_eq!(
        log,
        vec!["start a", "start b", "start c", "stop a", "stop c"]
    );
}

fn rest_for_one(sys: &mut impl System) {
    let (_p, kids, _log) = tree(sys, Supervision::new(Strategy::RestForOne));
    let _ = kids[1].try_send(CMsg::Crash);
    settle(sys);
    assert_eq!(restarts(sys, &kids), vec![0, 1, 1]);
}

fn escalation(sys: &mut impl System) {
    let s = Supervision::new(Strategy::OneForOne).intensity(1, Duration::from_secs(60));
    let (parent, kids, _log) = tree(sys, s);
    let _ = kids[0].try_send(CMsg::Crash);
    settle(sys);
    assert_eq!(sys.restarts(kids[0].id()), 1);
    let _ = kids[0].try_send(CMsg::Crash);
    settle(sys);
    // The parent gave up and failed; the root restarted it with new children.
    assert_eq!(sys.restarts(parent.id()), 1);
    assert!(kids.iter().all(|k| k.is_closed()));
    assert_eq!(sys.children(parent.id()).len(), 3);
}

fn stop_children_first(sys: &mut impl System) {
    let (parent, kids, log) = tree(sys, Supervision::default());
    sys.stop(parent.id());
    settle(sys);
    assert!(kids.iter().all(|k| k.is_closed()) && parent.is_closed());
    let log = log.lock().clone();
    assert_eq!(log.len(), 4, "{log:?}");
    assert_eq!(log[3], "stop parent", "{log:?}");
}

// ----- watch and dead letters --------------------------------------------

fn watch_and_dead_letters(sys: &mut impl System) {
    let log: Log = Default::default();
    let l = log.clone();
    let target = spawn(
        sys,
        Props::new().mailbox(Policy::KeepOldest(8)),
        move || Child {
            name: "t",
            log: l.clone(),
        },
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (t, s) = (target.clone(), seen.clone());
    spawn(sys, Props::new(), move || Watcher {
        target: t.clone(),
        seen: s.clone(),
    });
    settle(sys);
    let before = sys.dead_letters();
    sys.stop(target.id());
    settle(sys);
    assert_eq!(*seen.lock(), vec![(target.id(), ExitReason::Stopped)]);
    assert!(target.try_send(CMsg::Crash).kind() == turno::VerdictKind::Closed);
    assert_eq!(sys.dead_letters(), before + 1);
}

// ----- stash --------------------------------------------------------------

struct Door {
    open: bool,
    entered: Arc<Mutex<Vec<u32>>>,
}
enum DMsg {
    Visitor(u32),
    Open,
}
impl Actor for Door {
    type Msg = DMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: DMsg) {
        match m {
            DMsg::Visitor(v) if self.open => self.entered.lock().push(v),
            m @ DMsg::Visitor(_) => ctx.stash(m).map_err(|_| ()).expect("room in the stash"),
            DMsg::Open => {
                self.open = true;
                ctx.unstash_all();
            }
        }
    }
}

fn stash_order(sys: &mut impl System) {
    let entered = Arc::new(Mutex::new(Vec::new()));
    let e = entered.clone();
    let door = spawn(sys, Props::new(), move || Door {
        open: false,
        entered: e.clone(),
    });
    for v in 0..50 {
        let _ = door.try_send(DMsg::Visitor(v));
    }
    let _ = door.try_send(DMsg::Open);
    for v in 50..60 {
        let _ = door.try_send(DMsg::Visitor(v));
    }
    settle(sys);
    assert_eq!(*entered.lock(), (0..60).collect::<Vec<_>>());
}

// ----- ask ----------------------------------------------------------------

struct Server {
    delay: Duration,
}
enum SMsg {
    Query(u32, ReplyTo<u32>),
    Answer(u32, ReplyTo<u32>),
}
impl Actor for Server {
    type Msg = SMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: SMsg) {
        match m {
            SMsg::Query(q, r) if self.delay.is_zero() => {
                r.reply(q * 10);
            }
            SMsg::Query(q, r) => {
                ctx.send_after(self.delay, SMsg::Answer(q * 10, r));
            }
            SMsg::Answer(a, r) => {
                r.reply(a);
            }
        }
    }
}

struct Client {
    server: Addr<SMsg>,
    seen: Arc<Mutex<Vec<Option<u32>>>>,
}
enum QMsg {
    Ask(u32),
    Got(Response<u32>),
}
impl Actor for Client {
    type Msg = QMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: QMsg) {
        match m {
            QMsg::Ask(q) => {
                ctx.ask(
                    &self.server,
                    |r| SMsg::Query(q, r),
                    Duration::from_millis(100),
                    QMsg::Got,
                )
                .unwrap();
            }
            QMsg::Got(Response::Reply(v)) => self.seen.lock().push(Some(v)),
            QMsg::Got(Response::TimedOut) => self.seen.lock().push(None),
        }
    }
}

fn ask_reply_timeout_and_stale(sys: &mut impl System) {
    let fast = spawn(sys, Props::new(), || Server {
        delay: Duration::ZERO,
    });
    let slow = spawn(sys, Props::new(), || Server {
        delay: Duration::from_millis(300),
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = [fast, slow]
        .into_iter()
        .map(|server| {
            let s = seen.clone();
            spawn(sys, Props::new(), move || Client {
                server: server.clone(),
                seen: s.clone(),
            })
        })
        .collect();
    let _ = clients[0].try_send(QMsg::Ask(4));
    settle(sys);
    assert_eq!(*seen.lock(), vec![Some(40)]);
    let _ = clients[1].try_send(QMsg::Ask(5));
    sleep(sys, Duration::from_millis(500));
    // The timeout came as a message; the late reply was discarded.
    assert_eq!(*seen.lock(), vec![Some(40), None]);
    assert_eq!(clients[1].stale_replies(), 1);
}

// ----- backpressure in a cycle -------------------------------------------

struct Bouncer {
    peer: Arc<Mutex<Option<Addr<u64>>>>,
    hops: Arc<AtomicU64>,
}
impl Actor for Bouncer {
    type Msg = u64;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u64) {
        self.hops.fetch_add(1, Ordering::Relaxed);
        let peer = self.peer.lock().clone();
        if let Some(p) = peer {
            if n < 20_000 {
                let _ = ctx.send(&p, n + 1);
            }
        }
    }
}

/// A ring of `n` bouncers with suspend(`cap`) mailboxes, each filled to
/// capacity; every message hops until its counter reaches 20 000.
fn saturated_ring(sys: &mut impl System, n: usize, cap: u64) {
    let hops = Arc::new(AtomicU64::new(0));
    let slots: Vec<Arc<Mutex<Option<Addr<u64>>>>> = (0..n).map(|_| Default::default()).collect();
    let addrs: Vec<Addr<u64>> = (0..n)
        .map(|i| {
            let (peer, h) = (slots[(i + 1) % n].clone(), hops.clone());
            spawn(
                sys,
                Props::new().mailbox(Policy::Suspend(cap as usize)),
                move || Bouncer {
                    peer: peer.clone(),
                    hops: h.clone(),
                },
            )
        })
        .collect();
    for (slot, a) in slots.iter().zip(&addrs) {
        *slot.lock() = Some(a.clone());
    }
    // On the threaded scheduler the bouncing starts at once, so an outside
    // sender may meet a full mailbox: it waits for room.
    let starts: Vec<u64> = (0..cap).map(|k| k * (10_000 / cap)).collect();
    for a in &addrs {
        for &k in &starts {
            assert!(a.send_blocking(k).is_enqueued());
        }
    }
    settle(sys);
    // No deadlock (settle returned) and no loss: every hop happened.
    let per_actor: u64 = starts.iter().map(|k| 20_000 - k + 1).sum();
    assert_eq!(hops.load(Ordering::Relaxed), per_actor * n as u64);
}

fn saturated_cycle_progresses(sys: &mut impl System) {
    saturated_ring(sys, 2, 4);
}

fn saturated_ring_progresses(sys: &mut impl System) {
    saturated_ring(sys, 6, 2);
}
