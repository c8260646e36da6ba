//! Metrics reach the `metrics` facade; the test kit runs asks and timers one
//! turn at a time; pressure propagates along a chain.

#![cfg(not(turno_loom))]

use std::sync::Arc;
use std::time::Duration;
use turno::System;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use parking_lot::Mutex;
use turno::testkit::TestKit;
use turno::{Actor, Addr, Context, DetSystem, Policy, Props, ReplyTo, Response, VerdictKind};

struct Slow;
impl Actor for Slow {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _n: u32) {
        ctx.simulate_work(Duration::from_millis(1));
    }
}

fn metric(
    snapshot: &[(
        metrics_util::CompositeKey,
        Option<metrics::Unit>,
        Option<metrics::SharedString>,
        DebugValue,
    )],
    kind: MetricKind,
    name: &str,
) -> Vec<(Vec<(String, String)>, String)> {
    snapshot
        .iter()
        .filter(|(k, ..)| k.kind() == kind && k.key().name() == name)
        .map(|(k, _, _, v)| {
            let labels = k
                .key()
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            (labels, format!("{v:?}"))
        })
        .collect()
}

#[test]
fn depth_drops_and_turn_time_are_exported() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let id = metrics::with_local_recorder(&recorder, || {
        let mut sys = DetSystem::new(1);
        let a = sys
            .spawn(
                Props::new().name("gauge").mailbox(Policy::KeepOldest(2)),
                || Slow,
            )
            .unwrap();
        sys.run_until_idle().unwrap();
        for i in 0..5 {
            let _ = a.try_send(i);
        }
        sys.advance(Duration::from_millis(10)).unwrap();
        a.id().as_u64()
    });
    let snap: Vec<_> = snapshotter.snapshot().into_vec();
    let dropped = metric(&snap, MetricKind::Counter, "turno_mailbox_dropped_total");
    assert_eq!(
        dropped,
        vec![(
            vec![
                ("actor".into(), "gauge".into()),
                ("policy".into(), "keep_oldest".into())
            ],
            format!("{:?}", DebugValue::Counter(3))
        )]
    );
    let depth = metric(&snap, MetricKind::Gauge, "turno_mailbox_depth");
    assert_eq!(depth.len(), 1);
    assert_eq!(depth[0].1, format!("{:?}", DebugValue::Gauge(0.0.into())));
    // Two message turns (k = 0, 1): turn k is sampled when
    // (k + id) % TURN_SAMPLE == 0; the started hook never is.
    let expected = (0..2u64).filter(|k| (k + id) % 64 == 0).count();
    assert_eq!(turn_samples(&snap, "gauge"), expected);
}

/// How many turn-time samples the histogram of `actor` holds.
fn turn_samples(
    snap: &[(
        metrics_util::CompositeKey,
        Option<metrics::Unit>,
        Option<metrics::SharedString>,
        DebugValue,
    )],
    actor: &str,
) -> usize {
    let turns = metric(snap, MetricKind::Histogram, "turno_turn_seconds");
    let Some((_, value)) = turns
        .iter()
        .find(|(labels, _)| labels.contains(&("actor".into(), actor.into())))
    else {
        return 0;
    };
    let inner = value
        .trim_start_matches("Histogram([")
        .trim_end_matches("])");
    inner
        .split(", ")
        .filter(|s| s.parse::<f64>().is_ok_and(|x| x >= 0.0))
        .count()
}

struct Quiet;
impl Actor for Quiet {
    type Msg = u32;
    fn handle(&mut self, _: &mut Context<'_, Self>, _: u32) {}
}

#[test]
fn turn_time_is_sampled_one_message_turn_in_64_at_the_phase_of_the_id() {
    assert_eq!(turno::metrics::TURN_SAMPLE, 64);
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let busy_id = metrics::with_local_recorder(&recorder, || {
        let mut sys = DetSystem::new(1);
        let busy = sys
            .spawn(Props::new().name("busy").mailbox(Policy::Unbounded), || {
                Quiet
            })
            .unwrap();
        // Started, never sent anything: no handle registered, no sample.
        let _idle = sys.spawn(Props::new().name("idle"), || Quiet).unwrap();
        for i in 0..130 {
            assert!(busy.try_send(i).is_enqueued());
        }
        sys.run_until_idle().unwrap();
        busy.id()
    });
    let snap: Vec<_> = snapshotter.snapshot().into_vec();
    // Message turn k (from 0) of actor `id` is sampled when
    // (k + id) % 64 == 0: two or three of 130, by the id.
    let id = busy_id.as_u64();
    let expected = (0..130u64).filter(|k| (k + id) % 64 == 0).count();
    assert!((2..=3).contains(&expected));
    assert_eq!(turn_samples(&snap, "busy"), expected);
    assert!(
        !snap.iter().any(|(k, ..)| k
            .key()
            .labels()
            .any(|l| l.key() == "actor" && l.value() == "idle")),
        "an actor that handled no message registers no metric"
    );
    // Each handle is registered on its own first use: `busy` set its depth
    // gauge and sampled turns, and never dropped, rejected, stashed or saw
    // a stale reply.
    let registered = |name: &str| {
        snap.iter().any(|(k, ..)| {
            k.key().name() == name
                && k.key()
                    .labels()
                    .any(|l| l.key() == "actor" && l.value() == "busy")
        })
    };
    assert!(registered("turno_mailbox_depth"));
    assert!(registered("turno_turn_seconds"));
    for unused in [
        "turno_mailbox_dropped_total",
        "turno_mailbox_rejected_total",
        "turno_stash_size",
        "turno_stale_replies_total",
    ] {
        assert!(!registered(unused), "{unused} registered without a use");
    }
}

/// Asks a pricing service and forwards the answer (or a timeout) to `out`.
struct Quoter {
    pricing: Addr<(String, ReplyTo<u32>)>,
    out: Addr<Option<u32>>,
}

enum QMsg {
    Quote(String),
    Priced(Response<u32>),
}

impl Actor for Quoter {
    type Msg = QMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: QMsg) {
        match m {
            QMsg::Quote(item) => {
                ctx.ask(
                    &self.pricing,
                    |r| (item, r),
                    Duration::from_secs(1),
                    QMsg::Priced,
                )
                .unwrap();
            }
            QMsg::Priced(Response::Reply(p)) => {
                let _ = ctx.send(&self.out, Some(p));
            }
            QMsg::Priced(Response::TimedOut) => {
                let _ = ctx.send(&self.out, None);
            }
        }
    }
}

#[test]
fn the_test_kit_drives_an_ask_turn_by_turn() {
    let pricing = TestKit::<Quoter>::probe::<(String, ReplyTo<u32>)>();
    let out = TestKit::<Quoter>::probe::<Option<u32>>();
    let (p, o) = (pricing.addr(), out.addr());
    let mut kit = TestKit::new(move || Quoter {
        pricing: p.clone(),
        out: o.clone(),
    });

    // Turn 1: the ask goes out; its effects name it.
    let fx = kit.handle(QMsg::Quote("tea".into()));
    assert_eq!(fx.asks.len(), 1);
    assert_eq!(fx.sent, vec![(pricing.addr().id(), VerdictKind::Enqueued)]);
    let (item, reply) = pricing.drain().pop().unwrap();
    assert_eq!(item, "tea");
    assert_eq!(reply.request_id(), fx.asks[0].0);

    // The reply lands in the kit's mailbox; the next turn handles it.
    assert!(reply.reply(7));
    let fx = kit.run_next().expect("the reply turn");
    assert_eq!(fx.sent.len(), 1);
    assert_eq!(out.drain(), vec![Some(7)]);

    // A second ask, timed out by hand: the timeout is a message.
    let fx = kit.handle(QMsg::Quote("coffee".into()));
    let (_, late_reply) = pricing.drain().pop().unwrap();
    kit.time_out(fx.asks[0].0).expect("the timeout turn");
    assert_eq!(out.drain(), vec![None]);
    // The late reply is stale: no turn, counted.
    assert!(late_reply.reply(9));
    assert!(kit.run_next().is_none());
    assert_eq!(kit.addr().stale_replies(), 1);
    assert!(out.drain().is_empty());
}

/// Forwards everything to `next`.
struct Relay {
    next: Addr<u64>,
}
impl Actor for Relay {
    type Msg = u64;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u64) {
        let _ = ctx.send(&self.next, n);
    }
}

/// Emits `burst` per millisecond.
struct Source {
    to: Addr<u64>,
    n: u64,
}
impl Actor for Source {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_after(Duration::from_millis(1), ());
    }
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _: ()) {
        for _ in 0..4 {
            let _ = ctx.send(&self.to, self.n);
            self.n += 1;
        }
        ctx.send_after(Duration::from_millis(1), ());
    }
}

struct SlowSink(Arc<Mutex<Vec<u64>>>);
impl Actor for SlowSink {
    type Msg = u64;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u64) {
        self.0.lock().push(n);
        ctx.simulate_work(Duration::from_millis(2));
    }
}

#[test]
fn pressure_propagates_back_along_a_chain() {
    let mut sys = DetSystem::new(8);
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let sink = sys
        .spawn(Props::new().mailbox(Policy::Suspend(4)), move || {
            SlowSink(g.clone())
        })
        .unwrap();
    let s = sink.clone();
    let relay = sys
        .spawn(Props::new().mailbox(Policy::Suspend(4)), move || Relay {
            next: s.clone(),
        })
        .unwrap();
    let r = relay.clone();
    let source = sys
        .spawn(Props::new(), move || Source {
            to: r.clone(),
            n: 0,
        })
        .unwrap();
    let (mut relay_muted, mut source_muted) = (0, 0);
    for _ in 0..500 {
        sys.advance(Duration::from_millis(1)).unwrap();
        relay_muted += sys.is_muted(relay.id()) as u32;
        source_muted += sys.is_muted(source.id()) as u32;
    }
    // The sink takes 2 ms per message: the relay is muted by the sink, and
    // the source by the relay: the pressure reached the origin.
    assert!(
        relay_muted > 400 && source_muted > 400,
        "{relay_muted} {source_muted}"
    );
    assert!(relay.stats().max_depth <= 4 + 4 && sink.stats().max_depth <= 4 + 1);
    let got = got.lock();
    assert!(
        got.windows(2).all(|w| w[1] == w[0] + 1),
        "in order, none lost"
    );
    assert!((245..=251).contains(&got.len()), "{}", got.len());
}
