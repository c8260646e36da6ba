//! Backpressure on the threaded scheduler: the documented overshoot bound
//! holds under real parallelism, run after run (a sender re-listed while its
//! receiver drained and released anyway is never muted again, and the sink
//! grows to hundreds or thousands: the bug these runs guard against).

#![cfg(not(turno_loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use turno::System;

use turno::ThreadedSystem;
use turno::{Actor, Addr, Context, Policy, Props};

const CAPACITY: usize = 4;
const SENDERS: usize = 4;
const BURST: u64 = 16;

/// Each turn: `BURST` messages to the sink, then a tick to itself, until
/// `total` are sent.
struct Burster {
    sink: Addr<u64>,
    sent: u64,
    total: u64,
}

impl Actor for Burster {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _: ()) {
        for _ in 0..BURST.min(self.total - self.sent) {
            assert!(ctx.send(&self.sink, self.sent).is_enqueued());
            self.sent += 1;
        }
        if self.sent < self.total {
            ctx.tell(&ctx.addr(), ());
        }
    }
}

struct Counting(Arc<AtomicU64>);

impl Actor for Counting {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _n: u64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// One run; returns the sink's greatest depth.
fn run(threads: usize, per_sender: u64) -> usize {
    let sys = ThreadedSystem::builder().threads(threads).build();
    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let sink = sys
        .spawn(Props::new().mailbox(Policy::Suspend(CAPACITY)), move || {
            Counting(h.clone())
        })
        .unwrap();
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let s = sink.clone();
            sys.spawn(Props::new(), move || Burster {
                sink: s.clone(),
                sent: 0,
                total: per_sender,
            })
            .unwrap()
        })
        .collect();
    for s in &senders {
        assert!(s.try_send(()).is_enqueued());
    }
    let expected = per_sender * SENDERS as u64;
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while handled.load(Ordering::Relaxed) < expected && std::time::Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(handled.load(Ordering::Relaxed), expected, "nothing lost");
    let stats = sink.stats();
    assert_eq!(stats.dropped + stats.rejected, 0);
    sys.shutdown(Duration::from_secs(10)).unwrap();
    stats.max_depth
}

#[test]
fn the_overshoot_bound_holds_run_after_run() {
    // Context::send documents it: the capacity plus one turn's sends per
    // sender muted on the receiver.
    let bound = CAPACITY + SENDERS * BURST as usize;
    let mut worst = 0;
    for round in 0..24 {
        let threads = if round % 3 == 2 { 4 } else { 2 };
        let depth = run(threads, 2_500);
        worst = worst.max(depth);
        assert!(
            depth <= bound,
            "run {round} ({threads} workers): max depth {depth} > bound {bound}"
        );
    }
    eprintln!("worst max depth over the runs: {worst} (bound {bound})");
}
