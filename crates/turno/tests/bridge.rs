//! The tokio bridge: asking actors from async code, piping futures into
//! actors (correlated, cancelled when no longer awaited).

#![cfg(not(turno_loom))]
#![cfg(feature = "tokio")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use turno::System;

use parking_lot::Mutex;
use turno::bridge::{self, BridgeError};
use turno::ThreadedSystem;
use turno::{Actor, Context, Policy, Props, ReplyTo, RequestId, Response};

enum Msg {
    Square(u64, ReplyTo<u64>),
    Ignore(ReplyTo<u64>),
    Hold(ReplyTo<u64>),
}

struct Calc {
    held: Vec<ReplyTo<u64>>,
}

impl Actor for Calc {
    type Msg = Msg;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, m: Msg) {
        match m {
            Msg::Square(n, r) => {
                r.reply(n * n);
            }
            Msg::Ignore(_dropped) => {}
            Msg::Hold(r) => self.held.push(r),
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn async_code_asks_an_actor() {
    let rt = runtime();
    let sys = ThreadedSystem::builder().threads(1).build();
    let calc = sys.spawn(Props::new(), || Calc { held: vec![] }).unwrap();
    rt.block_on(async {
        let long = Duration::from_secs(5);
        assert_eq!(
            bridge::ask(&calc, |r| Msg::Square(7, r), long)
                .await
                .unwrap(),
            49
        );
        let no_reply = bridge::ask(&calc, Msg::Ignore, long).await.unwrap_err();
        assert!(matches!(no_reply, BridgeError::NoReply), "{no_reply:?}");
        let short = Duration::from_millis(50);
        let timed_out = bridge::ask(&calc, Msg::Hold, short).await.unwrap_err();
        assert_eq!(timed_out.to_string(), "ask timed out after 50ms");
    });
    sys.stop(calc.id());
    assert!(sys.wait_idle(Duration::from_secs(5)));
    rt.block_on(async {
        let closed = bridge::ask(&calc, |r| Msg::Square(1, r), Duration::from_secs(1)).await;
        assert!(matches!(closed, Err(BridgeError::Closed(_))));
    });
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn an_async_sender_waits_for_room_in_a_suspend_mailbox() {
    let rt = runtime();
    let sys = ThreadedSystem::builder().threads(1).build();
    let calc = sys
        .spawn(Props::new().mailbox(Policy::Suspend(1)), || Calc {
            held: vec![],
        })
        .unwrap();
    let results = rt.block_on(async {
        let asks = (0..20u64).map(|n| {
            let calc = calc.clone();
            tokio::spawn(async move {
                bridge::ask(&calc, |r| Msg::Square(n, r), Duration::from_secs(5)).await
            })
        });
        let mut out = Vec::new();
        for a in asks.collect::<Vec<_>>() {
            out.push(a.await.unwrap().unwrap());
        }
        out
    });
    assert_eq!(results, (0..20u64).map(|n| n * n).collect::<Vec<_>>());
    assert!(calc.stats().max_depth <= 1);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

/// Records what happened to one piped future.
#[derive(Default)]
struct Probe {
    finished: AtomicBool,
    dropped: AtomicBool,
}

struct DropFlag(Arc<Probe>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

fn slow_value(
    probe: Arc<Probe>,
    after: Duration,
    v: u64,
) -> impl std::future::Future<Output = u64> {
    // Created outside the async block: dropping the future, polled or not,
    // drops the flag.
    let flag = DropFlag(probe.clone());
    async move {
        let _flag = flag;
        tokio::time::sleep(after).await;
        probe.finished.store(true, Ordering::SeqCst);
        v
    }
}

enum PMsg {
    Start(Duration, Option<Duration>),
    Abandon,
    Done(Response<u64>),
}

struct Piper {
    probe: Arc<Probe>,
    last: Option<RequestId>,
    seen: Arc<Mutex<Vec<Option<u64>>>>,
}

impl Actor for Piper {
    type Msg = PMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: PMsg) {
        match m {
            PMsg::Start(after, timeout) => {
                let fut = slow_value(self.probe.clone(), after, 42);
                self.last = Some(ctx.pipe(fut, timeout, PMsg::Done).unwrap());
            }
            PMsg::Abandon => {
                assert!(ctx.abandon(self.last.unwrap()));
            }
            PMsg::Done(Response::Reply(v)) => self.seen.lock().push(Some(v)),
            PMsg::Done(Response::TimedOut) => self.seen.lock().push(None),
        }
    }
}

struct PipeSetup {
    rt: tokio::runtime::Runtime,
    sys: ThreadedSystem,
    piper: turno::Addr<PMsg>,
    probe: Arc<Probe>,
    seen: Arc<Mutex<Vec<Option<u64>>>>,
}

fn pipe_setup() -> PipeSetup {
    let rt = runtime();
    let sys = ThreadedSystem::builder()
        .threads(1)
        .tokio(rt.handle().clone())
        .build();
    let probe = Arc::new(Probe::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (p, s) = (probe.clone(), seen.clone());
    let piper = sys
        .spawn(Props::new(), move || Piper {
            probe: p.clone(),
            last: None,
            seen: s.clone(),
        })
        .unwrap();
    PipeSetup {
        rt,
        sys,
        piper,
        probe,
        seen,
    }
}

#[test]
fn a_piped_future_comes_back_as_a_message() {
    let t = pipe_setup();
    let _ = t
        .piper
        .try_send(PMsg::Start(Duration::from_millis(10), None));
    std::thread::sleep(Duration::from_millis(200));
    assert!(t.sys.wait_idle(Duration::from_secs(5)));
    assert_eq!(*t.seen.lock(), vec![Some(42)]);
    assert!(t.probe.finished.load(Ordering::SeqCst));
    t.sys.shutdown(Duration::from_secs(5)).unwrap();
    drop(t.rt);
}

#[test]
fn abandoning_a_piped_future_aborts_it() {
    let t = pipe_setup();
    let _ = t
        .piper
        .try_send(PMsg::Start(Duration::from_millis(200), None));
    let _ = t.piper.try_send(PMsg::Abandon);
    std::thread::sleep(Duration::from_millis(400));
    assert!(t.sys.wait_idle(Duration::from_secs(5)));
    assert!(t.seen.lock().is_empty());
    assert!(
        t.probe.dropped.load(Ordering::SeqCst),
        "the task was dropped"
    );
    assert!(
        !t.probe.finished.load(Ordering::SeqCst),
        "and never finished"
    );
    t.sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_piped_future_times_out_and_is_aborted() {
    let t = pipe_setup();
    let _ = t.piper.try_send(PMsg::Start(
        Duration::from_millis(500),
        Some(Duration::from_millis(50)),
    ));
    std::thread::sleep(Duration::from_millis(300));
    assert!(t.sys.wait_idle(Duration::from_secs(5)));
    assert_eq!(*t.seen.lock(), vec![None]);
    assert!(t.probe.dropped.load(Ordering::SeqCst));
    assert!(!t.probe.finished.load(Ordering::SeqCst));
    t.sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn stopping_the_actor_aborts_its_piped_futures() {
    let t = pipe_setup();
    let _ = t
        .piper
        .try_send(PMsg::Start(Duration::from_millis(300), None));
    assert!(t.sys.wait_idle(Duration::from_secs(5)));
    t.sys.stop(t.piper.id());
    std::thread::sleep(Duration::from_millis(100));
    assert!(t.probe.dropped.load(Ordering::SeqCst));
    assert!(!t.probe.finished.load(Ordering::SeqCst));
    t.sys.shutdown(Duration::from_secs(5)).unwrap();
}
