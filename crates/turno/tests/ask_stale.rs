//! Request/reply: correlation, timeouts as messages, stale replies discarded
//! and counted (superseded, timed out, abandoned, restarted).

#![cfg(not(turno_loom))]

use std::sync::Arc;
use std::time::Duration;
use turno::System;

use parking_lot::Mutex;
use turno::trace::{ActorEvent, RingSink};
use turno::{Actor, Addr, Context, DetSystem, Props, ReplyTo, RequestId, Response, StaleReason};

/// Replies after a configurable delay (a timer), so replies can race timeouts.
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
            SMsg::Query(q, reply) => {
                ctx.send_after(self.delay, SMsg::Answer(q * 10, reply));
            }
            SMsg::Answer(a, reply) => {
                reply.reply(a);
            }
        }
    }
}

#[derive(Debug, PartialEq)]
enum Seen {
    Reply(u32),
    TimedOut,
}

enum CMsg {
    Ask(u32),
    Supersede(u32),
    AbandonAll,
    Got(Response<u32>),
}

struct Client {
    server: Addr<SMsg>,
    timeout: Duration,
    last: Option<RequestId>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Actor for Client {
    type Msg = CMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: CMsg) {
        match m {
            CMsg::Ask(q) => {
                self.last = Some(
                    ctx.ask(&self.server, |r| SMsg::Query(q, r), self.timeout, CMsg::Got)
                        .unwrap(),
                );
            }
            CMsg::Supersede(q) => {
                let prev = self.last.expect("asked before");
                self.last = Some(
                    ctx.supersede(
                        prev,
                        &self.server,
                        |r| SMsg::Query(q, r),
                        self.timeout,
                        CMsg::Got,
                    )
                    .unwrap(),
                );
            }
            CMsg::AbandonAll => {
                ctx.abandon_all();
            }
            CMsg::Got(Response::Reply(v)) => self.seen.lock().push(Seen::Reply(v)),
            CMsg::Got(Response::TimedOut) => self.seen.lock().push(Seen::TimedOut),
        }
    }
}

struct Setup {
    sys: DetSystem,
    client: Addr<CMsg>,
    seen: Arc<Mutex<Vec<Seen>>>,
    ring: RingSink,
}

fn setup(server_delay_ms: u64, timeout_ms: u64) -> Setup {
    let ring = RingSink::new(10_000);
    let mut sys = DetSystem::builder().seed(9).trace(ring.clone()).build();
    let delay = Duration::from_millis(server_delay_ms);
    let server = sys
        .spawn(Props::new().name("server"), move || Server { delay })
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let timeout = Duration::from_millis(timeout_ms);
    let client = sys
        .spawn(Props::new().name("client"), move || Client {
            server: server.clone(),
            timeout,
            last: None,
            seen: s.clone(),
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    Setup {
        sys,
        client,
        seen,
        ring,
    }
}

fn stale_reasons(ring: &RingSink) -> Vec<StaleReason> {
    ring.events()
        .into_iter()
        .filter_map(|e| match e.kind {
            ActorEvent::StaleReply { reason, .. } => Some(reason),
            _ => None,
        })
        .collect()
}

#[test]
fn a_fresh_reply_arrives_once_and_cancels_the_timeout() {
    let mut t = setup(10, 100);
    let _ = t.client.try_send(CMsg::Ask(4));
    t.sys.advance(Duration::from_secs(1)).unwrap();
    assert_eq!(*t.seen.lock(), vec![Seen::Reply(40)]);
    assert_eq!(t.client.stale_replies(), 0);
}

#[test]
fn a_reply_to_a_superseded_request_is_stale() {
    let mut t = setup(10, 100);
    let _ = t.client.try_send(CMsg::Ask(1));
    t.sys.run_until_idle().unwrap();
    t.sys.advance(Duration::from_millis(5)).unwrap();
    let _ = t.client.try_send(CMsg::Supersede(2));
    t.sys.advance(Duration::from_secs(1)).unwrap();
    // The reply to query 1 came at 10 ms, after it was superseded at 5 ms.
    assert_eq!(*t.seen.lock(), vec![Seen::Reply(20)]);
    assert_eq!(t.client.stale_replies(), 1);
    assert_eq!(stale_reasons(&t.ring), vec![StaleReason::Superseded]);
}

#[test]
fn a_reply_after_the_timeout_is_stale_and_the_timeout_is_a_message() {
    let mut t = setup(50, 20);
    let _ = t.client.try_send(CMsg::Ask(3));
    t.sys.advance(Duration::from_millis(30)).unwrap();
    assert_eq!(*t.seen.lock(), vec![Seen::TimedOut]);
    t.sys.advance(Duration::from_millis(100)).unwrap();
    // The late reply (at 50 ms) never reaches the handler.
    assert_eq!(*t.seen.lock(), vec![Seen::TimedOut]);
    assert_eq!(t.client.stale_replies(), 1);
    assert_eq!(stale_reasons(&t.ring), vec![StaleReason::TimedOut]);
}

#[test]
fn leaving_the_state_abandons_the_request() {
    let mut t = setup(10, 100);
    let _ = t.client.try_send(CMsg::Ask(5));
    t.sys.run_until_idle().unwrap();
    let _ = t.client.try_send(CMsg::AbandonAll);
    t.sys.advance(Duration::from_secs(1)).unwrap();
    // Neither the reply nor a timeout: the request is no longer wanted.
    assert!(t.seen.lock().is_empty());
    assert_eq!(stale_reasons(&t.ring), vec![StaleReason::Abandoned]);
}

#[test]
fn asking_a_stopped_actor_fails_at_once() {
    struct Asker(Addr<SMsg>, Arc<Mutex<Option<String>>>);
    impl Actor for Asker {
        type Msg = Response<u32>;
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            let e = ctx
                .ask(
                    &self.0,
                    |r| SMsg::Query(1, r),
                    Duration::from_secs(1),
                    |r| r,
                )
                .unwrap_err();
            *self.1.lock() = Some(e.to_string());
            assert_eq!(ctx.pending_requests(), 0);
        }
        fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: Response<u32>) {}
    }
    let mut sys = DetSystem::new(1);
    let server = sys
        .spawn(Props::new(), || Server {
            delay: Duration::ZERO,
        })
        .unwrap();
    sys.stop(server.id());
    sys.run_until_idle().unwrap();
    let err = Arc::new(Mutex::new(None));
    let e = err.clone();
    sys.spawn(Props::new(), move || Asker(server.clone(), e.clone()))
        .unwrap();
    sys.run_until_idle().unwrap();
    assert_eq!(
        err.lock().as_deref(),
        Some("ask failed: the addressee has stopped")
    );
}
