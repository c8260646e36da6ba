//! Stash order, stash overflow, and timer cancellation.

#![cfg(not(turno_loom))]

use std::sync::Arc;
use std::time::Duration;
use turno::System;

use parking_lot::Mutex;
use turno::testkit::TestKit;
use turno::{Actor, Context, DetSystem, Props, TimerId};

/// A door: while closed it stashes visitors; opening lets them in, in order,
/// ahead of anyone who arrives later.
struct Door {
    open: bool,
    entered: Arc<Mutex<Vec<u32>>>,
    refused: Arc<Mutex<Vec<u32>>>,
}

enum DMsg {
    Visitor(u32),
    Open,
    Close,
}

impl Actor for Door {
    type Msg = DMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: DMsg) {
        match m {
            DMsg::Visitor(v) if self.open => self.entered.lock().push(v),
            DMsg::Visitor(v) => {
                if let Err(full) = ctx.stash(DMsg::Visitor(v)) {
                    let DMsg::Visitor(v) = full.msg else {
                        unreachable!()
                    };
                    self.refused.lock().push(v);
                }
            }
            DMsg::Open => {
                self.open = true;
                ctx.unstash_all();
            }
            DMsg::Close => self.open = false,
        }
    }
}

type Log = Arc<Mutex<Vec<u32>>>;

fn door(stash: usize) -> (DetSystem, turno::Addr<DMsg>, Log, Log) {
    let mut sys = DetSystem::new(4);
    let entered = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(Mutex::new(Vec::new()));
    let (e, r) = (entered.clone(), refused.clone());
    let addr = sys
        .spawn(Props::new().stash_capacity(stash), move || Door {
            open: false,
            entered: e.clone(),
            refused: r.clone(),
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    (sys, addr, entered, refused)
}

#[test]
fn unstash_redelivers_in_original_order_ahead_of_newer_mail() {
    let (mut sys, door, entered, _) = door(100);
    for v in 1..=3 {
        let _ = door.try_send(DMsg::Visitor(v));
    }
    sys.run_until_idle().unwrap();
    assert!(entered.lock().is_empty());
    // Open, then more visitors queue behind the Open message.
    let _ = door.try_send(DMsg::Open);
    let _ = door.try_send(DMsg::Visitor(4));
    let _ = door.try_send(DMsg::Close);
    let _ = door.try_send(DMsg::Visitor(5));
    let _ = door.try_send(DMsg::Open);
    sys.run_until_idle().unwrap();
    assert_eq!(*entered.lock(), vec![1, 2, 3, 4, 5]);
}

#[test]
fn a_full_stash_hands_the_message_back() {
    let (mut sys, door, _, refused) = door(2);
    for v in 1..=4 {
        let _ = door.try_send(DMsg::Visitor(v));
    }
    sys.run_until_idle().unwrap();
    assert_eq!(*refused.lock(), vec![3, 4]);
}

#[test]
fn test_kit_shows_stash_effects_without_a_scheduler() {
    let mut kit = TestKit::new(|| Door {
        open: false,
        entered: Default::default(),
        refused: Default::default(),
    });
    assert_eq!(kit.handle(DMsg::Visitor(7)).stashed, 1);
    let fx = kit.handle(DMsg::Open);
    assert_eq!(fx.unstashed, 1);
    assert!(
        kit.run_next().is_some(),
        "the unstashed visitor is handled next"
    );
    assert_eq!(*kit.actor().entered.lock(), vec![7]);
}

/// Sets two timers, cancels one when told.
struct Alarm {
    rang: Arc<Mutex<Vec<&'static str>>>,
    snooze: Option<TimerId>,
}

enum AMsg {
    Ring(&'static str),
    Cancel,
}

impl Actor for Alarm {
    type Msg = AMsg;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_after(Duration::from_secs(2), AMsg::Ring("wake"));
        self.snooze = Some(ctx.send_after(Duration::from_secs(1), AMsg::Ring("snooze")));
    }
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: AMsg) {
        match m {
            AMsg::Ring(what) => self.rang.lock().push(what),
            AMsg::Cancel => {
                let id = self.snooze.take().unwrap();
                assert!(ctx.cancel_timer(id));
                assert!(!ctx.cancel_timer(id), "cancel is idempotent");
            }
        }
    }
}

#[test]
fn a_cancelled_timer_never_delivers_and_others_fire_at_their_deadline() {
    let mut sys = DetSystem::new(1);
    let rang = Arc::new(Mutex::new(Vec::new()));
    let r = rang.clone();
    let a = sys
        .spawn(Props::new(), move || Alarm {
            rang: r.clone(),
            snooze: None,
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = a.try_send(AMsg::Cancel);
    sys.advance(Duration::from_millis(1999)).unwrap();
    assert!(rang.lock().is_empty());
    sys.advance(Duration::from_millis(1)).unwrap();
    assert_eq!(*rang.lock(), vec!["wake"]);
}
