//! The overload scenario, live: two producers at 100 msg/s, two consumers
//! at 80 msg/s, one mailbox keep-newest(20) (drops), one suspend(20) (the
//! producer is muted: an edge of the wait-for graph), on virtual time paced
//! to the wall clock so the page can follow.
//!
//! `cargo run -p turno-inspect --features live --example live_demo -- [SECONDS]`
//! prints the page's URL, then runs SECONDS (default 30) of real time.

use std::time::{Duration, Instant as WallClock};

use turno::{Actor, Addr, Context, DetSystem, Instant, Policy, Props, System};

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
    let start = WallClock::now();
    let step = Duration::from_millis(50);
    while start.elapsed() < Duration::from_secs(seconds) {
        sys.advance(step).expect("the demo runs");
        std::thread::sleep(step);
    }
}
