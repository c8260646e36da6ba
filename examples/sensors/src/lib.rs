//! A sensor at 100 Hz feeding a consumer that manages 80 Hz, through a
//! turno [`buffered()`] stream, for 60 s of virtual time, once per buffering
//! policy. The consumer is always 20 % too slow, so every policy has to give
//! something up; the table and the plot show what each one gives up.
//!
//! - **unbounded** loses nothing and pays with memory and latency that grow
//!   without limit: after 60 s every reading it processes is 12 s old (latency = 0.2 t).
//!   This is bufferbloat.
//! - **keep-oldest(n)** fills once, then drops every *new* reading: latency
//!   sticks at n x 12.5 ms, and what is processed is the stalest data there is.
//! - **keep-newest(n)** drops the *oldest* reading: latency is bounded by
//!   n x 12.5 ms and the data is as fresh as the buffer allows; with n = 1
//!   the consumer always works on the last known value.
//! - **capacity 0** passes a reading only to a consumer already waiting:
//!   zero queueing latency, but a consumer that is busy when a reading comes
//!   misses it (here: half of them).
//!
//! The simulation is a discrete-event loop in virtual time over the real
//! stream: the producer calls [`Continuation::push`] and reads its
//! [`YieldResult`]; the consumer polls the [`AsyncStream`] as a
//! `futures_core::Stream` with its own waker, so "waiting" (which matters
//! for capacity 0) means exactly what it means to an async consumer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use turno::stream::{buffered, AsyncStream, Continuation, YieldResult};
use turno::Policy;

/// Virtual time in microseconds.
pub type Micros = u64;

/// One sensor reading: its sequence number and when it was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// Sequence number, from 0.
    pub seq: u64,
    /// When the sensor produced it.
    pub at: Micros,
}

/// The scenario.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Time between two readings (10 ms: 100 Hz).
    pub produce_every: Micros,
    /// Time the consumer needs per reading (12.5 ms: 80 Hz).
    pub consume_takes: Micros,
    /// How long the sensor runs.
    pub duration: Micros,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            produce_every: 10_000,
            consume_takes: 12_500,
            duration: 60_000_000,
        }
    }
}

/// The policies compared, in table order.
pub fn policies() -> Vec<Policy> {
    vec![
        Policy::Unbounded,
        Policy::KeepOldest(50),
        Policy::KeepNewest(50),
        Policy::KeepNewest(1),
        Policy::KeepNewest(0),
    ]
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The policy.
    pub policy: Policy,
    /// Readings the sensor produced.
    pub produced: u64,
    /// Readings the consumer processed.
    pub delivered: u64,
    /// Readings lost to the policy (from the push verdicts).
    pub dropped: u64,
    /// Readings still buffered when the sensor stopped.
    pub left: u64,
    /// The deepest the buffer got.
    pub max_depth: usize,
    /// `(processed at, latency)` for every processed reading, in order.
    pub latencies: Vec<(Micros, Micros)>,
}

impl Outcome {
    /// Peak buffer memory, in bytes of readings.
    pub fn peak_bytes(&self) -> usize {
        self.max_depth * std::mem::size_of::<Reading>()
    }

    /// The latency percentile `p` (0..=100), in microseconds.
    pub fn percentile(&self, p: f64) -> Micros {
        let mut l: Vec<Micros> = self.latencies.iter().map(|x| x.1).collect();
        if l.is_empty() {
            return 0;
        }
        l.sort_unstable();
        let i = ((p / 100.0) * (l.len() - 1) as f64).round() as usize;
        l[i.min(l.len() - 1)]
    }

    /// Mean latency, in microseconds.
    pub fn mean(&self) -> Micros {
        if self.latencies.is_empty() {
            return 0;
        }
        self.latencies.iter().map(|x| x.1).sum::<u64>() / self.latencies.len() as u64
    }

    /// The latency of the last processed reading.
    pub fn last(&self) -> Micros {
        self.latencies.last().map(|x| x.1).unwrap_or(0)
    }
}

/// The consumer's waker: records that the stream woke it.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Runs the scenario over a real turno stream with `policy`.
pub fn run(policy: Policy, sc: Scenario) -> Outcome {
    let (tx, mut rx): (Continuation<Reading>, AsyncStream<Reading>) = buffered(policy);
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);

    let mut out = Outcome {
        policy,
        produced: 0,
        delivered: 0,
        dropped: 0,
        left: 0,
        max_depth: 0,
        latencies: Vec::new(),
    };
    let mut next_reading: Micros = 0;
    let mut consumer_free_at: Micros = 0;
    let mut waiting = false;

    // The consumer, free at `now`, asks for the next reading.
    let mut consume = |now: Micros, rx: &mut AsyncStream<Reading>, out: &mut Outcome| {
        flag.0.store(false, Ordering::SeqCst);
        match futures_core::Stream::poll_next(std::pin::Pin::new(rx), &mut cx) {
            Poll::Ready(Some(r)) => {
                out.delivered += 1;
                out.latencies.push((now, now - r.at));
                Some(now + sc.consume_takes)
            }
            Poll::Ready(None) | Poll::Pending => None,
        }
    };

    while next_reading < sc.duration {
        // Ties: the consumer finishes its reading before the sensor's next
        // one arrives, so it is waiting for it.
        if !waiting && consumer_free_at <= next_reading {
            match consume(consumer_free_at, &mut rx, &mut out) {
                Some(busy_until) => consumer_free_at = busy_until,
                None => waiting = true,
            }
            continue;
        }
        let now = next_reading;
        let reading = Reading {
            seq: out.produced,
            at: now,
        };
        out.produced += 1;
        match tx.push(reading) {
            YieldResult::Enqueued { .. } => {}
            YieldResult::Evicted(_) | YieldResult::Dropped(_) => out.dropped += 1,
            other => unreachable!("a sensor stream never answers {other:?}"),
        }
        next_reading += sc.produce_every;
        if waiting && flag.0.load(Ordering::SeqCst) {
            // Woken by the push: the reading is taken at once.
            waiting = false;
            if let Some(busy_until) = consume(now, &mut rx, &mut out) {
                consumer_free_at = busy_until;
            } else {
                waiting = true;
            }
        }
    }
    out.left = tx.len() as u64;
    out.max_depth = tx.stats().max_depth;
    out
}

/// The results as a Markdown table.
pub fn table(outcomes: &[Outcome]) -> String {
    let mut s = String::from(
        "| policy | produced | delivered | dropped | left | peak depth | peak memory | latency p50 | p99 | max | at 60 s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let ms = |us: Micros| format!("{:.1} ms", us as f64 / 1000.0);
    for o in outcomes {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} B | {} | {} | {} | {} |\n",
            o.policy,
            o.produced,
            o.delivered,
            o.dropped,
            o.left,
            o.max_depth,
            o.peak_bytes(),
            ms(o.percentile(50.0)),
            ms(o.percentile(99.0)),
            ms(o.percentile(100.0)),
            ms(o.last()),
        ));
    }
    s
}

/// Draws latency over time, one line per policy, to an SVG file: on the
/// left at full scale (where unbounded's growth dwarfs everything), on the
/// right zoomed to the bounded policies.
pub fn plot(
    outcomes: &[Outcome],
    path: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;

    let max_t = outcomes
        .iter()
        .flat_map(|o| o.latencies.last().map(|x| x.0))
        .max()
        .unwrap_or(1) as f64
        / 1e6;
    let ms = |o: &Outcome| o.percentile(100.0) as f64 / 1e3;
    let full = outcomes.iter().map(ms).fold(1.0, f64::max);
    let zoom = outcomes
        .iter()
        .filter(|o| o.policy.capacity().is_some())
        .map(ms)
        .fold(1.0, f64::max);
    let root = SVGBackend::new(path, (1400, 620)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "Latency of each processed reading: 100 Hz sensor, 80 Hz consumer, turno::stream::buffered",
        ("sans-serif", 22),
    )?;
    let panels = root.split_evenly((1, 2));
    let colors = [RED, BLUE, GREEN, MAGENTA, BLACK, CYAN];
    for (panel, (y_max, title)) in panels
        .iter()
        .zip([(full, "full scale"), (zoom, "zoomed: bounded policies")])
    {
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 16))
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..max_t, 0f64..y_max * 1.08)?;
        chart
            .configure_mesh()
            .x_desc("virtual time (s)")
            .y_desc("latency (ms)")
            .draw()?;
        for (i, o) in outcomes.iter().enumerate() {
            let color = colors[i % colors.len()];
            chart
                .draw_series(LineSeries::new(
                    o.latencies
                        .iter()
                        .map(|&(t, l)| (t as f64 / 1e6, (l as f64 / 1e3).min(y_max * 1.08))),
                    color.stroke_width(2),
                ))?
                .label(format!(
                    "{}: dropped {}, peak {} queued, p99 {:.0} ms",
                    o.policy,
                    o.dropped,
                    o.max_depth,
                    o.percentile(99.0) as f64 / 1e3
                ))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short() -> Scenario {
        Scenario {
            duration: 10_000_000,
            ..Scenario::default()
        }
    }

    #[test]
    fn every_reading_is_delivered_dropped_or_left() {
        for p in policies() {
            let o = run(p, short());
            assert_eq!(o.produced, 1000, "{p}");
            assert_eq!(o.produced, o.delivered + o.dropped + o.left, "{p}");
            let seqs: Vec<_> = o.latencies.iter().map(|x| x.0).collect();
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{p}: in time order");
        }
    }

    #[test]
    fn unbounded_latency_grows_linearly_and_loses_nothing() {
        let o = run(Policy::Unbounded, short());
        assert_eq!(o.dropped, 0);
        // At time t the consumer has processed t / 12.5 ms readings, so it
        // works on the one made at 0.8 t: latency = 0.2 t, growing linearly.
        let (t, l) = *o.latencies.last().unwrap();
        let expected = t / 5;
        assert!(
            l.abs_diff(expected) < 20_000,
            "latency {l} at {t}, expected ~{expected}"
        );
        let half = o.latencies[o.latencies.len() / 2];
        assert!(
            half.1.abs_diff(half.0 / 5) < 20_000,
            "linear at mid-run too"
        );
        assert_eq!(o.max_depth as u64, o.left.max(o.max_depth as u64));
    }

    #[test]
    fn keep_newest_one_bounds_latency_by_one_service_time() {
        let o = run(Policy::KeepNewest(1), short());
        assert!(o.percentile(100.0) <= 12_500, "{}", o.percentile(100.0));
        assert!(o.max_depth <= 1);
        assert_eq!(o.delivered, 800, "the consumer never idles");
        assert_eq!(o.dropped + o.left, 200);
    }

    #[test]
    fn keep_oldest_bounds_latency_but_serves_stale_data() {
        let o = run(Policy::KeepOldest(50), short());
        assert!(o.max_depth <= 50);
        // Once full, every processed reading waited for the 50 ahead of it.
        assert!(o.last() >= 50 * 12_500 - 12_500, "{}", o.last());
        assert!(o.percentile(100.0) <= 51 * 12_500);
    }

    #[test]
    fn capacity_zero_has_no_queueing_but_misses_readings() {
        let o = run(Policy::KeepNewest(0), short());
        assert_eq!(o.max_depth, 0);
        assert_eq!(o.percentile(100.0), 0, "handed over the moment it is made");
        // Busy 12.5 ms, then waits for the next 10 ms tick: one in two.
        assert_eq!(o.delivered, 500);
        assert_eq!(o.dropped, 500);
    }

    #[test]
    fn the_table_and_the_plot_are_produced() {
        let outcomes: Vec<_> = policies().into_iter().map(|p| run(p, short())).collect();
        let t = table(&outcomes);
        assert_eq!(t.lines().count(), 2 + outcomes.len());
        let path = std::env::temp_dir().join(format!("sensors-test-{}.svg", std::process::id()));
        plot(&outcomes, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("<svg") && svg.contains("keep-newest(1)"));
        let _ = std::fs::remove_file(path);
    }
}
