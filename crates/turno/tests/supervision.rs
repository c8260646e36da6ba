//! Supervision: each strategy, restart counts, intensity and escalation,
//! panics contained, watch and terminated, dead letters.

#![cfg(not(turno_loom))]

use std::sync::Arc;
use std::time::Duration;
use turno::System;

mod common;

use common::tree::{CMsg, Child, Log, Parent, Watcher};
use parking_lot::Mutex;
use turno::{Actor, Addr, Context, DetSystem, Directive, ExitReason, Props, Strategy, Supervision};

struct Tree {
    sys: DetSystem,
    parent: Addr<()>,
    kids: Vec<Addr<CMsg>>,
    log: Log,
}

fn tree(supervision: Supervision) -> Tree {
    let mut sys = DetSystem::new(5);
    let log: Log = Default::default();
    let out = Arc::new(Mutex::new(Vec::new()));
    let (l, o) = (log.clone(), out.clone());
    let parent = sys
        .spawn(
            Props::new().name("parent").supervision(supervision),
            move || Parent {
                log: l.clone(),
                out: o.clone(),
            },
        )
        .unwrap();
    sys.run_until_idle().unwrap();
    let kids = out.lock().clone();
    log.lock().clear();
    Tree {
        sys,
        parent,
        kids,
        log,
    }
}

fn sorted(log: &Log) -> Vec<String> {
    let mut v = log.lock().clone();
    v.sort();
    v
}

#[test]
fn a_panic_fails_the_actor_not_the_process() {
    let mut t = tree(Supervision::new(Strategy::OneForOne));
    let _ = t.kids[1].try_send(CMsg::Crash);
    let _ = t.kids[1].try_send(CMsg::Ping);
    t.sys.run_until_idle().unwrap();
    // b restarted, and the message queued behind the crash was kept.
    assert_eq!(t.sys.restarts(t.kids[1].id()), 1);
    assert_eq!(*t.log.lock(), vec!["start b", "ping b"]);
}

#[test]
fn one_for_one_restarts_only_the_failed_child() {
    let mut t = tree(Supervision::new(Strategy::OneForOne));
    let _ = t.kids[0].try_send(CMsg::Crash);
    t.sys.run_until_idle().unwrap();
    let restarts: Vec<u32> = t.kids.iter().map(|k| t.sys.restarts(k.id())).collect();
    assert_eq!(restarts, vec![1, 0, 0]);
    assert_eq!(*t.log.lock(), vec!["start a"]);
}

#[test]
fn one_for_all_restarts_every_child_and_stops_the_healthy_ones_cleanly() {
    let mut t = tree(Supervision::new(Strategy::OneForAll));
    let _ = t.kids[1].try_send(CMsg::Crash);
    t.sys.run_until_idle().unwrap();
    let restarts: Vec<u32> = t.kids.iter().map(|k| t.sys.restarts(k.id())).collect();
    assert_eq!(restarts, vec![1, 1, 1]);
    // The failed instance's `stopped` hook does not run; the healthy ones' does.
    assert_eq!(
        sorted(&t.log),
        vec!["start a", "start b", "start c", "stop a", "stop c"]
    );
}

#[test]
fn rest_for_one_restarts_the_failed_child_and_the_younger_ones() {
    let mut t = tree(Supervision::new(Strategy::RestForOne));
    let _ = t.kids[1].try_send(CMsg::Crash);
    t.sys.run_until_idle().unwrap();
    let restarts: Vec<u32> = t.kids.iter().map(|k| t.sys.restarts(k.id())).collect();
    assert_eq!(restarts, vec![0, 1, 1]);
}

#[test]
fn the_decider_may_stop_the_child() {
    let mut t = tree(Supervision::new(Strategy::OneForOne).decider(|_| Directive::Stop));
    let _ = t.kids[2].try_send(CMsg::Crash);
    t.sys.run_until_idle().unwrap();
    assert!(!t.sys.is_alive(t.kids[2].id()));
    assert_eq!(
        t.sys.children(t.parent.id()),
        vec![t.kids[0].id(), t.kids[1].id()]
    );
}

#[test]
fn exceeding_the_restart_intensity_escalates_to_the_grandparent() {
    let mut t = tree(Supervision::new(Strategy::OneForOne).intensity(2, Duration::from_secs(10)));
    let b = t.kids[1].id();
    for round in 1..=2 {
        let _ = t.kids[1].try_send(CMsg::Crash);
        t.sys.run_until_idle().unwrap();
        assert_eq!(t.sys.restarts(b), round);
    }
    // A third failure within the period: the parent gives up and fails; its
    // supervisor (the root, one-for-one) restarts it, which stops b and its
    // siblings and starts fresh children.
    let _ = t.kids[1].try_send(CMsg::Crash);
    t.sys.run_until_idle().unwrap();
    assert_eq!(t.sys.restarts(t.parent.id()), 1);
    assert!(!t.sys.is_alive(b));
    assert_eq!(t.sys.children(t.parent.id()).len(), 3);
}

#[test]
fn restarts_outside_the_period_do_not_count() {
    let mut t = tree(Supervision::new(Strategy::OneForOne).intensity(1, Duration::from_secs(1)));
    let b = t.kids[1].id();
    for round in 1..=3 {
        let _ = t.kids[1].try_send(CMsg::Crash);
        t.sys.run_until_idle().unwrap();
        assert_eq!(t.sys.restarts(b), round);
        t.sys.advance(Duration::from_secs(2)).unwrap();
    }
    assert_eq!(t.sys.restarts(t.parent.id()), 0);
}

#[test]
fn the_root_stops_an_actor_it_cannot_restart() {
    let mut sys = DetSystem::builder()
        .seed(1)
        .root_supervision(
            Supervision::new(Strategy::OneForOne).intensity(1, Duration::from_secs(60)),
        )
        .build();
    let log: Log = Default::default();
    let l = log.clone();
    let a = sys
        .spawn(Props::new(), move || Child {
            name: "solo",
            log: l.clone(),
        })
        .unwrap();
    let _ = a.try_send(CMsg::Crash);
    sys.run_until_idle().unwrap();
    assert_eq!(sys.restarts(a.id()), 1);
    let _ = a.try_send(CMsg::Crash);
    sys.run_until_idle().unwrap();
    assert!(!sys.is_alive(a.id()));
    assert!(a.is_closed());
}

#[test]
fn watchers_get_a_terminated_message_with_the_reason() {
    let mut sys = DetSystem::builder()
        .seed(2)
        .root_supervision(Supervision::new(Strategy::OneForOne).decider(|_| Directive::Stop))
        .build();
    let log: Log = Default::default();
    let spawn_child = |sys: &mut DetSystem, name: &'static str| {
        let l = log.clone();
        sys.spawn(Props::new(), move || Child {
            name,
            log: l.clone(),
        })
        .unwrap()
    };
    let calm = spawn_child(&mut sys, "calm");
    let wild = spawn_child(&mut sys, "wild");
    let seen = Arc::new(Mutex::new(Vec::new()));
    for target in [&calm, &wild] {
        let (t, s) = (target.clone(), seen.clone());
        sys.spawn(Props::new(), move || Watcher {
            target: t.clone(),
            seen: s.clone(),
        })
        .unwrap();
    }
    sys.run_until_idle().unwrap();
    sys.stop(calm.id());
    let _ = wild.try_send(CMsg::Crash);
    sys.run_until_idle().unwrap();
    let mut seen = seen.lock().clone();
    seen.sort_by_key(|(id, _)| *id);
    assert_eq!(
        seen,
        vec![
            (calm.id(), ExitReason::Stopped),
            (wild.id(), ExitReason::Failed("wild crashed".into())),
        ]
    );
    // Watching an actor that is already gone delivers at once.
    let late = Arc::new(Mutex::new(Vec::new()));
    let (t, s) = (calm.clone(), late.clone());
    sys.spawn(Props::new(), move || Watcher {
        target: t.clone(),
        seen: s.clone(),
    })
    .unwrap();
    sys.run_until_idle().unwrap();
    assert_eq!(late.lock().len(), 1);
}

#[test]
fn stopping_a_parent_stops_the_subtree_children_first() {
    let mut t = tree(Supervision::default());
    t.sys.stop(t.parent.id());
    t.sys.run_until_idle().unwrap();
    assert!(t.kids.iter().all(|k| k.is_closed()));
    let log = t.log.lock().clone();
    // The children stop concurrently (in an order the seed picks), and the
    // parent's own `stopped` hook runs only after all of them.
    assert_eq!(log.len(), 4, "{log:?}");
    let mut children = log[..3].to_vec();
    children.sort();
    assert_eq!(children, vec!["stop a", "stop b", "stop c"]);
    assert_eq!(log[3], "stop parent");
    assert_eq!(t.sys.actor_count(), 0);
}

/// Spawns a child, sets a timer, then panics in the same turn.
struct Reckless {
    log: Log,
}

enum RMsg {
    Go,
    Ring,
}

impl Actor for Reckless {
    type Msg = RMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: RMsg) {
        match m {
            RMsg::Go => {
                let log = self.log.clone();
                ctx.spawn(Props::new(), move || Child {
                    name: "orphan",
                    log: log.clone(),
                })
                .unwrap();
                ctx.send_after(Duration::from_millis(10), RMsg::Ring);
                panic!("reckless");
            }
            RMsg::Ring => self.log.lock().push("ring".into()),
        }
    }
}

#[test]
fn a_panicking_turn_has_no_effects_but_its_sends() {
    let mut sys = DetSystem::new(3);
    let log: Log = Default::default();
    let l = log.clone();
    let a = sys
        .spawn(Props::new(), move || Reckless { log: l.clone() })
        .unwrap();
    let _ = a.try_send(RMsg::Go);
    sys.advance(Duration::from_secs(1)).unwrap();
    assert_eq!(sys.restarts(a.id()), 1);
    // The child it spawned never started; the timer it set never rang.
    assert!(sys.children(a.id()).is_empty());
    assert!(log.lock().is_empty(), "{:?}", log.lock());
}

struct Idle;

impl Actor for Idle {
    type Msg = ();
    fn handle(&mut self, _: &mut Context<'_, Self>, (): ()) {}
}

#[test]
fn the_roots_children_are_listed_in_start_order_without_the_stopped() {
    let mut sys = DetSystem::new(3);
    let addrs: Vec<_> = (0..40)
        .map(|_| sys.spawn(Props::new(), || Idle).unwrap())
        .collect();
    sys.run_until_idle().unwrap();
    sys.stop(addrs[7].id());
    sys.run_until_idle().unwrap();
    let expected: Vec<_> = (addrs.iter().enumerate())
        .filter(|(i, _)| *i != 7)
        .map(|(_, a)| a.id())
        .collect();
    assert_eq!(sys.children(turno::ROOT), expected);
}
