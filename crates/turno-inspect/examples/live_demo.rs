//! The overload scenario, live: two producers at 100 msg/s, two consumers
//! at 80 msg/s, one mailbox keep-newest(20) (drops), one suspend(20) (the
//! producer is muted: an edge of the wait-for graph), on virtual time paced
//! to the wall clock so the page can follow. Beside them, a batcher stashes
//! what it receives and takes it back five at a time (its stash size moves),
//! and a traffic light (a turno-chart statechart) changes state on a
//! ticker's `TIMER` every 300 ms.
//!
//! `cargo run -p turno-inspect --features live --example live_demo -- [SECONDS]`
//! prints the page's URL, then runs SECONDS (default 30) of real time.

use std::time::{Duration, Instant as WallClock};

use std::sync::Arc;

use turno::{Actor, Addr, Context, DetSystem, Instant, Policy, Props, System};
use turno_chart::interpreter::{ChartActor, ChartMsg};
use turno_chart::{load_json, stdlib, Event};

/// The light: green, yellow, red, green... on each `TIMER`.
const LIGHT: &str = r#"{"id": "light", "initial": "green", "states": {
  "green": {"on": {"TIMER": "yellow"}},
  "yellow": {"on": {"TIMER": "red"}},
  "red": {"on": {"TIMER": "green"}}}}"#;

struct Producer {
    to: Addr<Instant>,
    period: Duration,
    ticks: u32,
}

impl Actor for Producer {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_after(Duration::ZERO, ());
    }
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _tick: ()) {
        let now = ctx.now();
        let _ = ctx.send(&self.to, now);
        self.ticks += 1;
        let due = Instant::ZERO + self.period * self.ticks;
        ctx.send_after(due.saturating_duration_since(now), ());
    }
}

struct Consumer {
    cost: Duration,
}

impl Actor for Consumer {
    type Msg = Instant;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _sent_at: Instant) {
        ctx.simulate_work(self.cost);
    }
}

/// Stashes what arrives; once five wait, takes them back and handles them.
struct Batcher {
    /// Unstashed messages still to handle before stashing again.
    taking: usize,
}

impl Actor for Batcher {
    type Msg = Instant;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, sent_at: Instant) {
        if self.taking > 0 {
            self.taking -= 1;
            ctx.simulate_work(Duration::from_millis(1));
            return;
        }
        if ctx.stash(sent_at).is_ok() && ctx.stash_len() == 5 {
            self.taking = ctx.unstash_all();
        }
    }
}

/// Sends the chart a `TIMER` every period.
struct Ticker {
    to: Addr<ChartMsg>,
    period: Duration,
}

impl Actor for Ticker {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_after(self.period, ());
    }
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _tick: ()) {
        let _ = ctx.send(&self.to, ChartMsg::Event(Event::new("TIMER")));
        ctx.send_after(self.period, ());
    }
}

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let (live, sink) = turno_inspect::live::start(Default::default()).expect("live server");
    println!("{}", live.url());
    let mut sys = DetSystem::builder().trace(sink).metrics(false).build();
    for (name, policy) in [
        ("newest", Policy::KeepNewest(20)),
        ("suspend", Policy::Suspend(20)),
    ] {
        let consumer = sys
            .spawn(
                Props::new()
                    .name(format!("consumer-{name}"))
                    .mailbox(policy),
                || Consumer {
                    cost: Duration::from_millis(12),
                },
            )
            .expect("consumer");
        sys.spawn(Props::new().name(format!("producer-{name}")), move || {
            Producer {
                to: consumer.clone(),
                period: Duration::from_millis(10),
                ticks: 0,
            }
        })
        .expect("producer");
    }
    let batcher = sys
        .spawn(Props::new().name("batcher"), || Batcher { taking: 0 })
        .expect("batcher");
    sys.spawn(Props::new().name("producer-batch"), move || Producer {
        to: batcher.clone(),
        period: Duration::from_millis(40),
        ticks: 0,
    })
    .expect("producer");
    let machine = Arc::new(load_json(LIGHT, &stdlib::implementations()).expect("machine"));
    let light = sys
        .spawn(Props::new().name("light"), move || {
            ChartActor::new(machine.clone())
        })
        .expect("chart");
    sys.spawn(Props::new().name("ticker"), move || Ticker {
        to: light.clone(),
        period: Duration::from_millis(300),
    })
    .expect("ticker");
    let start = WallClock::now();
    let step = Duration::from_millis(50);
    while start.elapsed() < Duration::from_secs(seconds) {
        sys.advance(step).expect("the demo runs");
        std::thread::sleep(step);
    }
}
