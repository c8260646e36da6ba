//! The `tracing` feature: a span per turn with the actor's name and id and
//! what the turn handles; failures, restarts, drops, stale replies and dead
//! letters as events at their documented levels, readable through
//! tracing-subscriber's fmt layer.

#![cfg(not(turno_loom))]
#![cfg(feature = "tracing")]

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use turno::System;

use parking_lot::Mutex;
use turno::{Actor, Context, DetSystem, Policy, Props, ReplyTo, Response};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

enum FMsg {
    Boom,
    Fine,
}

struct Flaky;

impl Actor for Flaky {
    type Msg = FMsg;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, m: FMsg) {
        if let FMsg::Boom = m {
            panic!("flaky went boom");
        }
    }
}

struct Late;

enum LMsg {
    Ask(ReplyTo<u8>),
    Answer(ReplyTo<u8>),
}

impl Actor for Late {
    type Msg = LMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: LMsg) {
        match m {
            // Reply long after the asker's 10 ms deadline.
            LMsg::Ask(r) => {
                ctx.send_after(Duration::from_millis(50), LMsg::Answer(r));
            }
            LMsg::Answer(r) => {
                r.reply(1);
            }
        }
    }
}

struct Asker(turno::Addr<LMsg>);

impl Actor for Asker {
    type Msg = Response<u8>;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.ask(&self.0, LMsg::Ask, Duration::from_millis(10), |r| r)
            .unwrap();
    }
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: Response<u8>) {}
}

fn run_scenario(level: tracing::Level) -> String {
    let out = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(out.clone())
        .with_max_level(level)
        .with_ansi(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let mut sys = DetSystem::new(4);
        let flaky = sys.spawn(Props::new().name("flaky"), || Flaky).unwrap();
        let full = sys
            .spawn(
                Props::new().name("full").mailbox(Policy::KeepOldest(1)),
                || Flaky,
            )
            .unwrap();
        let late = sys.spawn(Props::new().name("late"), || Late).unwrap();
        sys.spawn(Props::new().name("asker"), move || Asker(late.clone()))
            .unwrap();
        sys.run_until_idle().unwrap();
        let _ = flaky.try_send(FMsg::Boom);
        let _ = full.try_send(FMsg::Fine);
        let _ = full.try_send(FMsg::Fine); // dropped: keep-oldest(1) is full
        sys.advance(Duration::from_millis(100)).unwrap();
        sys.stop(full.id());
        sys.run_until_idle().unwrap();
        let _ = full.try_send(FMsg::Fine); // a dead letter
    });
    let text = String::from_utf8(out.0.lock().clone()).unwrap();
    text
}

#[test]
fn a_run_reads_as_a_log_with_spans_and_levelled_events() {
    let log = run_scenario(tracing::Level::DEBUG);
    let has = |needle: &str| log.lines().any(|l| l.contains(needle));
    let line = |pred: &dyn Fn(&str) -> bool| log.lines().find(|l| pred(l)).map(str::to_owned);
    // The failure, as an error inside the span of the turn that panicked.
    let fail = line(&|l| l.contains("turn panicked")).expect("a failure event");
    assert!(fail.contains("ERROR"), "{fail}");
    assert!(
        fail.contains("turn{actor=flaky id=1 kind=Message path=/flaky}"),
        "no turn span with name, id, kind and path: {fail}"
    );
    assert!(fail.contains("flaky went boom"), "{fail}");
    // A turn without any event inside shows no line: the asker's turns.
    assert!(!has("turn{actor=asker"), "{log}");
    let restart = line(&|l| l.contains("actor restarted")).expect("a restart event");
    assert!(
        restart.contains("WARN") && restart.contains("actor=1"),
        "{restart}"
    );
    let drop = line(&|l| l.contains("dropped by the mailbox policy")).expect("a drop event");
    assert!(
        drop.contains("DEBUG") && drop.contains("policy=\"keep_oldest\""),
        "{drop}"
    );
    let stale = line(&|l| l.contains("stale reply discarded")).expect("a stale reply event");
    assert!(
        stale.contains("DEBUG") && stale.contains("TimedOut"),
        "{stale}"
    );
    assert!(has("dead letter"), "{log}");
    // Turns are spans, not events.
    assert!(!has("TurnStart"), "{log}");
}

#[test]
fn levels_filter_as_documented() {
    let log = run_scenario(tracing::Level::WARN);
    assert!(log.contains("turn panicked"), "{log}");
    assert!(log.contains("actor restarted"), "{log}");
    assert!(!log.contains("dropped by the mailbox policy"), "{log}");
    assert!(!log.contains("stale reply"), "{log}");
    // Spans at DEBUG are filtered out with everything else below WARN.
    assert!(!log.contains("turn{"), "{log}");
}
