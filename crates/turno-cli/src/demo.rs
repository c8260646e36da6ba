//! `turno demo overload`: the overload scenario, once per mailbox policy.
//!
//! A producer emits 100 messages a second; a consumer handles 80 a second
//! (each message costs it 12.5 ms of virtual time). For 60 s of virtual time
//! the mailbox between them must absorb 20 surplus messages every second, and
//! its policy decides what that costs: memory and delay (unbounded), fresh or
//! stale losses (keep-newest, keep-oldest), refusals the producer sees
//! (reject), or a slower producer (suspend).
//!
//! Everything runs on the deterministic scheduler, so the output is the same
//! on every machine and every run.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use turno::System;

use turno::{Actor, Addr, Context, DetSystem, Instant, Policy, Props, Verdict};

/// The scenario's parameters.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Producer rate, messages per second.
    pub produce_hz: u32,
    /// Consumer rate, messages per second.
    pub consume_hz: u32,
    /// Virtual duration.
    pub duration: Duration,
    /// Capacity of the bounded policies.
    pub capacity: usize,
    /// Scheduler seed.
    pub seed: u64,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            produce_hz: 100,
            consume_hz: 80,
            duration: Duration::from_secs(60),
            capacity: 50,
            seed: 1,
        }
    }
}

/// What one policy did under the scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The policy.
    pub policy: Policy,
    /// Messages the producer meant to send by the end.
    pub planned: u64,
    /// Messages the producer actually sent (the rest it was held back from).
    pub sent: u64,
    /// Messages the consumer handled.
    pub delivered: u64,
    /// Messages lost to the policy.
    pub dropped: u64,
    /// Messages handed back to the producer.
    pub rejected: u64,
    /// Messages still queued at the end.
    pub queued: u64,
    /// Deepest the mailbox got.
    pub max_depth: usize,
    /// Queueing delay (send to handling), median.
    pub p50: Duration,
    /// Queueing delay, 99th percentile.
    pub p99: Duration,
    /// Queueing delay, maximum.
    pub max: Duration,
}

/// The policies, in the order the demo shows them.
pub fn policies(capacity: usize) -> [Policy; 5] {
    [
        Policy::Unbounded,
        Policy::KeepNewest(capacity),
        Policy::KeepOldest(capacity),
        Policy::Reject(capacity),
        Policy::Suspend(capacity),
    ]
}

/// Emits one timestamped message per tick, on an absolute schedule: a tick
/// that comes late (the producer was muted) is caught up at once, so the
/// planned count is exact and anything not sent was held back upstream.
struct Producer {
    to: Addr<Instant>,
    period: Duration,
    ticks: u64,
    stats: Arc<Mutex<ProducerStats>>,
}

#[derive(Default)]
struct ProducerStats {
    sent: u64,
    dropped: u64,
    rejected: u64,
}

impl Actor for Producer {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_after(Duration::ZERO, ());
    }
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _tick: ()) {
        let now = ctx.now();
        let verdict = ctx.send(&self.to, now);
        let mut st = self.stats.lock().expect("demo stats lock");
        st.sent += 1;
        match verdict {
            Verdict::Enqueued { .. } => {}
            Verdict::Evicting | Verdict::Dropped(_) => st.dropped += 1,
            Verdict::Rejected(_) | Verdict::Full(_) => st.rejected += 1,
            Verdict::Closed(_) => unreachable!("the consumer outlives the demo"),
        }
        self.ticks += 1;
        let due = Instant::ZERO + self.period * self.ticks as u32;
        ctx.send_after(due.saturating_duration_since(now), ());
    }
}

/// Handles one message per `cost` of virtual time, recording its delay.
struct Consumer {
    cost: Duration,
    delays: Arc<Mutex<Vec<Duration>>>,
}

impl Actor for Consumer {
    type Msg = Instant;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, sent_at: Instant) {
        let delay = ctx.now() - sent_at;
        self.delays.lock().expect("demo delays lock").push(delay);
        ctx.simulate_work(self.cost);
    }
}

/// Runs the scenario under one policy.
pub fn run(s: &Scenario, policy: Policy) -> Outcome {
    run_on(s, policy, DetSystem::builder())
}

/// [`run`] on a system built from `builder` (e.g. one that records a trace).
pub fn run_on(s: &Scenario, policy: Policy, builder: turno::DetSystemBuilder) -> Outcome {
    let mut sys = builder.seed(s.seed).metrics(false).build();
    let delays = Arc::new(Mutex::new(Vec::new()));
    let d = delays.clone();
    let cost = Duration::from_secs(1) / s.consume_hz;
    let consumer = sys
        .spawn(Props::new().name("consumer").mailbox(policy), move || {
            Consumer {
                cost,
                delays: d.clone(),
            }
        })
        .expect("valid demo policy");
    let stats = Arc::new(Mutex::new(ProducerStats::default()));
    let (st, to) = (stats.clone(), consumer.clone());
    let period = Duration::from_secs(1) / s.produce_hz;
    sys.spawn(Props::new().name("producer"), move || Producer {
        to: to.clone(),
        period,
        ticks: 0,
        stats: st.clone(),
    })
    .expect("valid producer props");
    // Stop just before the tick at exactly `duration`, so that 60 s at
    // 100 Hz plans exactly 6000 messages.
    sys.advance(s.duration - Duration::from_nanos(1))
        .expect("the demo reaches idleness at each instant");

    let mut delays = delays.lock().expect("demo delays lock").clone();
    delays.sort_unstable();
    let stats = stats.lock().expect("demo stats lock");
    let mailbox = consumer.stats();
    let planned = (s.duration.as_nanos() / period.as_nanos()) as u64;
    Outcome {
        policy,
        planned,
        sent: stats.sent,
        delivered: delays.len() as u64,
        dropped: stats.dropped,
        rejected: stats.rejected,
        queued: consumer.depth() as u64,
        max_depth: mailbox.max_depth,
        p50: percentile(&delays, 50),
        p99: percentile(&delays, 99),
        max: delays.last().copied().unwrap_or_default(),
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn secs(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

/// One line that explains the row.
fn reading(o: &Outcome, s: &Scenario) -> String {
    let surplus = s.produce_hz.saturating_sub(s.consume_hz);
    let minutes = s.duration.as_secs_f64();
    match o.policy {
        Policy::Unbounded => format!(
            "nothing lost, but the queue grows {surplus}/s and so does delay (Little's law: \
             {} queued / {}/s = {:.1}s of waiting at the end); memory is the hazard",
            o.queued,
            s.consume_hz,
            o.queued as f64 / s.consume_hz as f64
        ),
        Policy::KeepNewest(n) => format!(
            "the {surplus}/s surplus is lost from the old end: delay stays bounded near \
             {n} / {}/s, and what is delivered is the freshest data",
            s.produce_hz
        ),
        Policy::KeepOldest(n) => format!(
            "the surplus is lost at the door (newest data dropped): delay stays bounded \
             near {n} / {}/s, but what is delivered is already old",
            s.consume_hz
        ),
        Policy::Reject(_) => format!(
            "same losses as keep-oldest, but each refused message went back to the producer \
             ({} verdicts it can act on: retry, shed, report)",
            o.rejected
        ),
        Policy::Suspend(_) => format!(
            "nothing lost, delay bounded: the producer was muted and sent {} of {} planned \
             in {minutes:.0}s; the surplus waits upstream, where it can be slowed",
            o.sent, o.planned
        ),
    }
}

/// Runs every policy and renders the table with a reading under each row.
pub fn report(s: &Scenario) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "turno demo overload: producer {} msg/s, consumer {} msg/s, {}s of virtual time, capacity {}, seed {}\n",
        s.produce_hz,
        s.consume_hz,
        s.duration.as_secs(),
        s.capacity,
        s.seed
    );
    let _ = writeln!(
        out,
        "{:<16} {:>9} {:>8} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9}",
        "policy", "delivered", "dropped", "rejected", "queued", "max depth", "p50", "p99", "max"
    );
    let _ = writeln!(out, "{}", "-".repeat(96));
    for policy in policies(s.capacity) {
        let o = run(s, policy);
        let _ = writeln!(
            out,
            "{:<16} {:>9} {:>8} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9}",
            policy.to_string(),
            o.delivered,
            o.dropped,
            o.rejected,
            o.queued,
            o.max_depth,
            secs(o.p50),
            secs(o.p99),
            secs(o.max)
        );
        let _ = writeln!(out, "  -> {}\n", reading(&o, s));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        Scenario::default()
    }

    /// Every message the producer sent is accounted for exactly once.
    fn conserved(o: &Outcome) {
        assert_eq!(
            o.delivered + o.dropped + o.rejected + o.queued,
            o.sent,
            "{o:?}"
        );
    }

    #[test]
    fn unbounded_grows_twenty_per_second() {
        let o = run(&scenario(), Policy::Unbounded);
        conserved(&o);
        assert_eq!(o.sent, 6000);
        assert_eq!(o.dropped + o.rejected, 0);
        // 80/s for 60 s handled, 20/s left behind.
        assert!((4799..=4801).contains(&o.delivered), "{o:?}");
        assert!((1199..=1201).contains(&o.queued), "{o:?}");
        // Message k is sent at k/100 s and handled at k/80 s: its delay is
        // k/400 s, growing without bound. The 4800th waited 12 s.
        assert!(
            o.max > Duration::from_millis(11_900) && o.max < Duration::from_millis(12_100),
            "{o:?}"
        );
        assert!(
            o.p50 > Duration::from_millis(5_900),
            "median grows too: {o:?}"
        );
    }

    #[test]
    fn keep_newest_bounds_delay_and_loses_the_surplus() {
        let o = run(&scenario(), Policy::KeepNewest(50));
        conserved(&o);
        // The receiver evicts before each take, so the lane holds the
        // capacity plus what arrives during one turn: at 100 sends/s and
        // 12.5 ms per turn, at most 2 more.
        assert!((50..=52).contains(&o.max_depth), "{o:?}");
        assert!((1140..=1200).contains(&o.dropped), "{o:?}");
        // Messages advance at 100/s (80 taken + 20 evicted): ~0.5 s.
        assert!(o.max < Duration::from_millis(520), "{o:?}");
    }

    #[test]
    fn keep_oldest_and_reject_lose_the_same_but_reject_says_so() {
        let k = run(&scenario(), Policy::KeepOldest(50));
        let r = run(&scenario(), Policy::Reject(50));
        conserved(&k);
        conserved(&r);
        assert_eq!(k.dropped, r.rejected);
        assert_eq!(k.delivered, r.delivered);
        assert_eq!((k.rejected, r.dropped), (0, 0));
        // Messages advance at 80/s: ~0.625 s.
        assert!(
            k.max < Duration::from_millis(650) && k.max > Duration::from_millis(600),
            "{k:?}"
        );
    }

    #[test]
    fn suspend_loses_nothing_and_holds_the_producer_back() {
        let o = run(&scenario(), Policy::Suspend(50));
        conserved(&o);
        assert_eq!(o.dropped + o.rejected, 0);
        assert!(o.max_depth <= 51, "capacity plus one muted send: {o:?}");
        assert!(o.sent < o.planned - 1000, "{o:?}");
        assert!(o.max < Duration::from_millis(700), "{o:?}");
    }

    #[test]
    fn the_report_is_deterministic() {
        assert_eq!(report(&scenario()), report(&scenario()));
    }
}
