//! The deadline rule: a reply enqueued in the asker's mailbox before the
//! deadline wins over the timeout, even when the asker is busy past the
//! deadline and the timeout signal (system lane) is served first. A reply
//! enqueued at or after the deadline is stale.

#![cfg(not(turno_loom))]

use std::sync::Arc;
use std::time::Duration;
use turno::System;

use parking_lot::Mutex;
use turno::ThreadedSystem;
use turno::{
    Actor, Addr, Context, DetSystem, Instant, Policy, Props, ReplyTo, RequestId, Response,
};

/// Replies after `delay` of virtual time (a timer), or at once.
struct Responder {
    delay: Duration,
}

enum RMsg {
    Query(u32, ReplyTo<u32>),
    Answer(u32, ReplyTo<u32>),
}

impl Actor for Responder {
    type Msg = RMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: RMsg) {
        match m {
            RMsg::Query(q, r) if self.delay.is_zero() => {
                r.reply(q);
            }
            RMsg::Query(q, r) => {
                ctx.send_after(self.delay, RMsg::Answer(q, r));
            }
            RMsg::Answer(q, r) => {
                r.reply(q);
            }
        }
    }
}

#[derive(Debug, PartialEq)]
enum Seen {
    Reply(RequestId, u32),
    TimedOut(RequestId),
    Other,
}

enum AMsg {
    /// Ask, then stay busy for the given (virtual) time.
    AskThenWork(Duration),
    Other,
    Got(RequestId, Response<u32>),
}

struct Asker {
    to: Addr<RMsg>,
    timeout: Duration,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Actor for Asker {
    type Msg = AMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: AMsg) {
        match m {
            AMsg::AskThenWork(busy) => {
                ctx.ask_with_id(&self.to, |r| RMsg::Query(7, r), self.timeout, AMsg::Got)
                    .unwrap();
                ctx.simulate_work(busy);
            }
            AMsg::Other => self.seen.lock().push(Seen::Other),
            AMsg::Got(id, Response::Reply(v)) => self.seen.lock().push(Seen::Reply(id, v)),
            AMsg::Got(id, Response::TimedOut) => self.seen.lock().push(Seen::TimedOut(id)),
        }
    }
}

fn det_setup(
    seed: u64,
    reply_delay: Duration,
    asker_policy: Policy,
) -> (DetSystem, Addr<AMsg>, Arc<Mutex<Vec<Seen>>>) {
    let mut sys = DetSystem::new(seed);
    let to = sys
        .spawn(Props::new(), move || Responder { delay: reply_delay })
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let asker = sys
        .spawn(Props::new().mailbox(asker_policy), move || Asker {
            to: to.clone(),
            timeout: Duration::from_millis(100),
            seen: s.clone(),
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    (sys, asker, seen)
}

#[test]
fn det_a_reply_queued_before_the_deadline_wins_though_the_asker_is_busy() {
    for seed in 0..8 {
        let (mut sys, asker, seen) = det_setup(seed, Duration::ZERO, Policy::Suspend(16));
        assert!(asker
            .try_send(AMsg::AskThenWork(Duration::from_millis(500)))
            .is_enqueued());
        sys.advance(Duration::from_secs(1)).unwrap();
        let seen = seen.lock();
        assert!(
            matches!(seen.as_slice(), [Seen::Reply(_, 7)]),
            "seed {seed}: {seen:?}"
        );
        assert_eq!(asker.stale_replies(), 0, "seed {seed}");
    }
}

#[test]
fn det_a_reply_queued_after_the_deadline_is_stale_though_the_asker_was_busy() {
    for seed in 0..8 {
        // The reply comes at 150 ms, the deadline is 100 ms, the asker is
        // busy until 500 ms: both wait in its mailbox, the timeout wins.
        let (mut sys, asker, seen) =
            det_setup(seed, Duration::from_millis(150), Policy::Suspend(16));
        let _ = asker.try_send(AMsg::AskThenWork(Duration::from_millis(500)));
        sys.advance(Duration::from_secs(1)).unwrap();
        let seen = seen.lock();
        assert!(
            matches!(seen.as_slice(), [Seen::TimedOut(_)]),
            "seed {seed}: {seen:?}"
        );
        assert_eq!(asker.stale_replies(), 1, "seed {seed}");
    }
}

#[test]
fn det_a_reply_at_the_deadline_instant_is_stale() {
    let (mut sys, asker, seen) = det_setup(3, Duration::from_millis(100), Policy::Suspend(16));
    let _ = asker.try_send(AMsg::AskThenWork(Duration::ZERO));
    sys.advance(Duration::from_secs(1)).unwrap();
    assert!(matches!(seen.lock().as_slice(), [Seen::TimedOut(_)]));
    assert_eq!(asker.stale_replies(), 1);
}

#[test]
fn det_an_evicted_reply_leaves_the_timeout_as_the_one_response() {
    // A keep-newest(1) asker: its queued reply is evicted by a later
    // message, so the request times out (exactly one response).
    let (mut sys, asker, seen) = det_setup(5, Duration::ZERO, Policy::KeepNewest(1));
    let _ = asker.try_send(AMsg::AskThenWork(Duration::from_millis(500)));
    sys.run_until_idle().unwrap();
    assert_eq!(asker.depth(), 1, "the reply waits");
    assert!(matches!(
        asker.try_send(AMsg::Other),
        turno::Verdict::Evicting
    ));
    // The receiver evicts the reply when it next takes.
    assert_eq!(asker.stats().dropped, 0);
    sys.advance(Duration::from_secs(1)).unwrap();
    let seen = seen.lock();
    assert!(
        matches!(seen.as_slice(), [Seen::TimedOut(_), Seen::Other]),
        "{seen:?}"
    );
    assert_eq!(asker.stale_replies(), 0);
    assert_eq!(asker.stats().dropped, 1);
}

#[test]
fn det_an_evicted_reply_after_the_deadline_times_out_at_once() {
    // The deadline passes first (the reply is queued, so no timeout yet);
    // then the reply is evicted: the timeout is delivered.
    let mut sys = DetSystem::new(2);
    let to = sys
        .spawn(Props::new(), || Responder {
            delay: Duration::ZERO,
        })
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let asker = sys
        .spawn(Props::new().mailbox(Policy::KeepNewest(1)), move || Asker {
            to: to.clone(),
            timeout: Duration::from_millis(100),
            seen: s.clone(),
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = asker.try_send(AMsg::AskThenWork(Duration::from_millis(500)));
    sys.advance(Duration::from_millis(200)).unwrap();
    assert!(seen.lock().is_empty());
    let _ = asker.try_send(AMsg::Other); // evicts the queued reply
    sys.advance(Duration::from_secs(1)).unwrap();
    let seen = seen.lock();
    assert!(
        matches!(seen.as_slice(), [Seen::TimedOut(_), Seen::Other]),
        "{seen:?}"
    );
}

/// Answers every request found in `probe` from a plain thread, at the
/// instant the request carries, noting the clock just before and just after
/// each reply. A reply from outside the workers is what makes the race real:
/// an actor responder woken by the asker would wait in the asker's worker
/// (hand-off) until the asker's busy turn ends.
fn outside_responder(
    probe: turno::testkit::Probe<(Instant, ReplyTo<u32>)>,
    clock: impl Fn() -> Instant + Send + 'static,
    expected: usize,
) -> std::thread::JoinHandle<Vec<(RequestId, Instant, Instant)>> {
    std::thread::spawn(move || {
        let mut log = Vec::new();
        let give_up = std::time::Instant::now() + Duration::from_secs(30);
        while log.len() < expected && std::time::Instant::now() < give_up {
            for (at, reply) in probe.drain() {
                while clock() < at {
                    std::hint::spin_loop();
                }
                let id = reply.request_id();
                let before = clock();
                reply.reply(1);
                log.push((id, before, clock()));
            }
            std::thread::yield_now();
        }
        log
    })
}

/// Asks once per message, aiming the reply at the deadline plus an offset,
/// then stays busy past the deadline.
struct RaceAsker {
    to: Addr<(Instant, ReplyTo<u32>)>,
    timeout: Duration,
    busy: Duration,
    asked: Arc<Mutex<Vec<(RequestId, Instant, Instant)>>>,
    got: Arc<Mutex<Vec<(RequestId, bool)>>>,
}

enum RaceMsg {
    Ask(i64),
    Got(RequestId, Response<u32>),
}

impl Actor for RaceAsker {
    type Msg = RaceMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: RaceMsg) {
        match m {
            RaceMsg::Ask(offset_us) => {
                let t0 = ctx.now();
                let target = t0 + self.timeout;
                let at = if offset_us >= 0 {
                    target + Duration::from_micros(offset_us as u64)
                } else {
                    Instant::from_nanos(
                        target
                            .as_nanos()
                            .saturating_sub(offset_us.unsigned_abs() * 1000),
                    )
                };
                let id = ctx
                    .ask_with_id(&self.to, |r| (at, r), self.timeout, RaceMsg::Got)
                    .unwrap();
                let t1 = ctx.now();
                self.asked.lock().push((id, t0, t1));
                // Busy past the deadline: the reply and the timeout both
                // wait in the mailbox, the timeout in the lane served first.
                let until = t1 + self.busy;
                while ctx.now() < until {
                    std::hint::spin_loop();
                }
            }
            RaceMsg::Got(id, r) => self.got.lock().push((id, matches!(r, Response::Reply(_)))),
        }
    }
}

type Logs = (
    Vec<(RequestId, Instant, Instant)>,
    Vec<(RequestId, Instant, Instant)>,
    Vec<(RequestId, bool)>,
    u64,
);

/// Runs `offsets.len()` asks against the outside responder.
fn race(threads: usize, timeout: Duration, busy: Duration, offsets: &[i64]) -> Logs {
    let sys = ThreadedSystem::builder().threads(threads).build();
    let probe = turno::testkit::Probe::<(Instant, ReplyTo<u32>)>::new();
    let to = probe.addr();
    // The system clock, read from the responder thread: `base` is read
    // between two std readings, retried until they are close, and the later
    // one is the origin, so the responder's clock never leads the system's
    // and lags it by at most the bracket (a preemption between the readings
    // on a loaded machine once made it lead by milliseconds).
    let (start, base) = loop {
        let before = std::time::Instant::now();
        let base = sys.now();
        let after = std::time::Instant::now();
        if after - before <= Duration::from_micros(10) {
            break (after, base);
        }
    };
    let clock = move || base + start.elapsed();
    let responder = outside_responder(probe, clock, offsets.len());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let got = Arc::new(Mutex::new(Vec::new()));
    let (a, g) = (asked.clone(), got.clone());
    let asker = sys
        .spawn(Props::new(), move || RaceAsker {
            to: to.clone(),
            timeout,
            busy,
            asked: a.clone(),
            got: g.clone(),
        })
        .unwrap();
    for &offset in offsets {
        let _ = asker.try_send(RaceMsg::Ask(offset));
    }
    let log = responder.join().unwrap();
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    while got.lock().len() < offsets.len() && std::time::Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(sys.wait_idle(Duration::from_secs(10)));
    let stale = asker.stale_replies();
    sys.shutdown(Duration::from_secs(10)).unwrap();
    let (asked, got) = (asked.lock().clone(), got.lock().clone());
    (asked, log, got, stale)
}

#[test]
fn threaded_a_reply_queued_before_the_deadline_wins_though_the_asker_is_busy() {
    for threads in [2, 1] {
        // The reply is enqueued at once; the deadline is 200 ms (room for
        // the responder thread on a loaded machine); the asker stays busy
        // 400 ms in its turn, so the timeout signal is queued long before
        // it runs again.
        let (_, _, got, stale) = race(
            threads,
            Duration::from_millis(200),
            Duration::from_millis(400),
            &[-200_000],
        );
        assert_eq!(got.len(), 1);
        assert!(got[0].1, "{threads} threads: the timeout won");
        assert_eq!(stale, 0);
    }
}

#[test]
fn threaded_reply_and_timeout_race_at_the_deadline() {
    let timeout = Duration::from_millis(1);
    // Replies from 200 us before to 200 us after the deadline.
    let offsets: Vec<i64> = (0..200).map(|i| (i % 21) as i64 * 20 - 200).collect();
    // Every run must keep the rules; the race must be real in at least one
    // of them: on a loaded machine the responder thread can be descheduled
    // for a whole run, so that all its replies fall on one side.
    let (mut early, mut late) = (0, 0);
    for _run in 0..5 {
        let (e, l) = race_at_the_deadline(timeout, &offsets);
        early += e;
        late += l;
        if early > 0 && late > 0 {
            break;
        }
    }
    assert!(early > 0 && late > 0, "early {early}, late {late}");
}

/// One race of `offsets.len()` asks, its rules asserted; returns how many
/// replies were clearly before and clearly after their deadline.
fn race_at_the_deadline(timeout: Duration, offsets: &[i64]) -> (u32, u32) {
    let (asked, log, got, stale) = race(2, timeout, timeout + Duration::from_micros(400), offsets);
    let n = offsets.len();
    assert_eq!(got.len(), n, "exactly one response per request");
    let mut ids: Vec<_> = got.iter().map(|(id, _)| *id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "no request answered twice");
    let (mut early, mut late, mut replies) = (0, 0, 0);
    for &(id, reply) in &got {
        let &(_, t0, t1) = asked.iter().find(|a| a.0 == id).unwrap();
        let &(_, before, after) = log.iter().find(|l| l.0 == id).unwrap();
        // The deadline lies in [t0 + timeout, t1 + timeout]; the responder's
        // clock may lag the system's by up to 10 us (see `race`), never lead.
        if after + Duration::from_micros(50) < t0 + timeout {
            early += 1;
            assert!(
                reply,
                "{id}: a reply enqueued before the deadline lost to the timeout"
            );
        }
        if before >= t1 + timeout {
            late += 1;
            assert!(
                !reply,
                "{id}: a reply enqueued after the deadline was delivered"
            );
        }
        replies += reply as u64;
    }
    assert_eq!(
        stale,
        n as u64 - replies,
        "every reply not delivered is counted stale"
    );
    (early, late)
}
