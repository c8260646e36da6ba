// The floor of a local (one-thread) ping-pong message that keeps turno's
// guarantees: what a second message path for `LocalSystem` (BENCHMARKS.md,
// issue 11, stops 31-33) could reach at best on this machine. A model, not
// turno: two actors passing a counter through one run queue, three ways.
//
// "guarded" does per message what turno's semantics need and nothing more:
// - admission on a bounded mailbox shared with other threads: one
//   compare-exchange of the mailbox's `tail` (the consumer's `taken` is a
//   plain store, one writer), as `lane.rs` does;
// - waking the receiver: one compare-exchange of its run-state word (idle to
//   claimed), since a push from another thread may race it;
// - one FIFO run queue of typed deliveries (receiver, message, the
//   receiver's typed entry point): no pass through a lane when the receiver
//   was idle, the second path's point;
// - the turn: a health check, the quiet-panic guard (a thread-local set and
//   restored), `catch_unwind`, a context, two tracer checks and the
//   turn-time sample counter;
// - the release: the receiver's run-state word back to idle with one
//   compare-exchange (a push from another thread may have marked it).
// "plain owner path" is the same with plain loads and stores where the
// guarded one has its three read-modify-writes: what the owner would do
// under a biased lock, less the lock's own few instructions. "bare" calls a
// handler through the same queue with none of it (stakker's shape: a
// closure queue). Prints messages per second for each, three times.
//
//   rustc -O -C codegen-units=1 --edition 2021 -o /tmp/local-floor crates/turno-bench/scripts/local-floor.rs
//   for i in 1 2 3; do nice -n -15 /tmp/local-floor; done
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

const IDLE: u8 = 0;
const CLAIMED: u8 = 1;
const CAPACITY: usize = 1024;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// One actor: its mailbox's admission counters, run-state word, health and
/// state (a counter and its peer).
struct Actor {
    tail: AtomicUsize,
    taken: AtomicUsize,
    run: AtomicU8,
    healthy: bool,
    turns: Cell<u32>,
    peer: Cell<*const Actor>,
    target: u64,
    done: Cell<u64>,
}

struct Delivery {
    to: *const Actor,
    msg: u64,
    entry: fn(&System, &Actor, u64),
}

struct System {
    queue: RefCell<VecDeque<Delivery>>,
    tracing: AtomicBool,
    sampled: AtomicUsize,
}

struct Context<'a> {
    system: &'a System,
    me: &'a Actor,
}

impl Context<'_> {
    #[inline(always)]
    fn send<const PLAIN: bool>(&mut self, to: &Actor, msg: u64) -> bool {
        if PLAIN {
            // The owner path of a biased lock: plain accesses where the
            // guarded side has its read-modify-writes.
            let tail = to.tail.load(Ordering::Relaxed);
            if tail - to.taken.load(Ordering::Relaxed) >= CAPACITY {
                return false;
            }
            to.tail.store(tail + 1, Ordering::Relaxed);
            assert_eq!(to.run.load(Ordering::Relaxed), IDLE);
            to.run.store(CLAIMED, Ordering::Relaxed);
            self.system.queue.borrow_mut().push_back(Delivery {
                to,
                msg,
                entry: turn::<true>,
            });
            return true;
        }
        // Admission: claim a position if the length allows it.
        let mut tail = to.tail.load(Ordering::Relaxed);
        loop {
            if tail - to.taken.load(Ordering::Acquire) >= CAPACITY {
                return false;
            }
            match to
                .tail
                .compare_exchange_weak(tail, tail + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => tail = now,
            }
        }
        // Wake: idle to claimed, or the receiver is queued or running
        // already (a lane push there; never here in ping-pong).
        if to
            .run
            .compare_exchange(IDLE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.system.queue.borrow_mut().push_back(Delivery {
                to,
                msg,
                entry: turn::<false>,
            });
            true
        } else {
            unreachable!("ping-pong never sends to a busy actor")
        }
    }
}

#[inline(never)]
fn trace_event(kind: u8) {
    std::hint::black_box(kind);
}

fn handle<const PLAIN: bool>(ctx: &mut Context<'_>, msg: u64) {
    let me = ctx.me;
    if msg == me.target {
        me.done.set(msg);
    } else {
        // SAFETY: both actors outlive the run.
        let peer = unsafe { &*me.peer.get() };
        assert!(ctx.send::<PLAIN>(peer, msg + 1));
    }
}

/// A receiver's typed entry point: one turn, then the release.
fn turn<const PLAIN: bool>(system: &System, me: &Actor, msg: u64) {
    if !me.healthy {
        return;
    }
    me.taken
        .store(me.taken.load(Ordering::Relaxed) + 1, Ordering::Release);
    if system.tracing.load(Ordering::Relaxed) {
        trace_event(0);
    }
    let n = me.turns.get();
    me.turns.set(n.wrapping_add(1));
    if n % 64 == 0 {
        system.sampled.fetch_add(0, Ordering::Relaxed);
    }
    let quiet = QUIET.with(|q| q.replace(true));
    let mut ctx = Context { system, me };
    let ok = catch_unwind(AssertUnwindSafe(|| handle::<PLAIN>(&mut ctx, msg))).is_ok();
    QUIET.with(|q| q.set(quiet));
    if system.tracing.load(Ordering::Relaxed) {
        trace_event(u8::from(ok));
    }
    if PLAIN {
        me.run.store(IDLE, Ordering::Release);
        return;
    }
    // Release: nothing else arrived (a mark would fail it and requeue).
    if me
        .run
        .compare_exchange(CLAIMED, IDLE, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        unreachable!("ping-pong never marks a running actor")
    }
}

fn bare_turn(_: &System, me: &Actor, msg: u64) {
    if msg == me.target {
        me.done.set(msg);
    }
}

fn actor(target: u64) -> Actor {
    Actor {
        tail: AtomicUsize::new(0),
        taken: AtomicUsize::new(0),
        run: AtomicU8::new(IDLE),
        healthy: true,
        turns: Cell::new(0),
        peer: Cell::new(std::ptr::null()),
        target,
        done: Cell::new(0),
    }
}

fn run(system: &System) {
    loop {
        let Some(d) = system.queue.borrow_mut().pop_front() else {
            return;
        };
        // SAFETY: both actors outlive the run.
        (d.entry)(system, unsafe { &*d.to }, d.msg);
    }
}

/// One ping-pong of `n` messages through `turn`, timed.
fn pingpong<const PLAIN: bool>(system: &System, n: u64) -> std::time::Duration {
    let (ping, pong) = (actor(n), actor(u64::MAX));
    ping.peer.set(&pong);
    pong.peer.set(&ping);
    let start = Instant::now();
    system.queue.borrow_mut().push_back(Delivery {
        to: &pong,
        msg: 1,
        entry: turn::<PLAIN>,
    });
    pong.run.store(CLAIMED, Ordering::Relaxed);
    pong.tail.store(1, Ordering::Relaxed);
    run(system);
    let time = start.elapsed();
    assert!(ping.done.get() == n || pong.done.get() == n);
    time
}

fn main() {
    let n: u64 = 20_000_000;
    let system = System {
        queue: RefCell::new(VecDeque::with_capacity(16)),
        tracing: AtomicBool::new(std::env::var_os("LOCAL_FLOOR_TRACE").is_some()),
        sampled: AtomicUsize::new(0),
    };
    for _ in 0..3 {
        let guarded = pingpong::<false>(&system, n);
        let plain = pingpong::<true>(&system, n);

        // The bare side: the same queue and calls, none of the guarantees.
        let bare = actor(n);
        let start = Instant::now();
        let mut count = 0u64;
        system.queue.borrow_mut().push_back(Delivery {
            to: &bare,
            msg: 1,
            entry: bare_turn,
        });
        loop {
            let Some(d) = system.queue.borrow_mut().pop_front() else {
                break;
            };
            // SAFETY: `bare` outlives the loop.
            (d.entry)(&system, unsafe { &*d.to }, d.msg);
            count += 1;
            if d.msg < n {
                system.queue.borrow_mut().push_back(Delivery {
                    to: d.to,
                    msg: d.msg + 1,
                    entry: bare_turn,
                });
            }
        }
        let bare_time = start.elapsed();
        assert_eq!(count, n);
        let rate = |t: std::time::Duration| {
            format!(
                "{:.1} M msg/s ({:.1} ns)",
                n as f64 / t.as_secs_f64() / 1e6,
                t.as_nanos() as f64 / n as f64
            )
        };
        println!(
            "guarded {}; plain owner path {}; bare {}",
            rate(guarded),
            rate(plain),
            rate(bare_time)
        );
    }
}
