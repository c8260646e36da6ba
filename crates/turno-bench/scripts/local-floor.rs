// The floor of a local (one-thread) ping-pong message that keeps turno's
// guarantees: what a second message path for `LocalSystem` (BENCHMARKS.md,
// "The local scheduler") could reach at best on this machine. A model, not
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
use std::time::{Duration, Instant};

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
    metrics: AtomicBool,
}

struct Context<'a> {
    system: &'a System,
    me: &'a Actor,
}

impl Context<'_> {
    /// A send to an idle receiver: admission, the wake, the delivery. With
    /// `PLAIN`, the owner path of a biased lock: plain accesses where the
    /// guarded send has its two read-modify-writes.
    #[inline(always)]
    fn send<const PLAIN: bool>(&mut self, to: &Actor, msg: u64) -> bool {
        // Admission: claim a position if the length allows it.
        let mut tail = to.tail.load(Ordering::Relaxed);
        loop {
            if tail - to.taken.load(Ordering::Acquire) >= CAPACITY {
                return false;
            }
            if PLAIN {
                to.tail.store(tail + 1, Ordering::Relaxed);
                break;
            }
            match to
                .tail
                .compare_exchange_weak(tail, tail + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => tail = now,
            }
        }
        // Wake: idle to claimed. (A receiver queued or running already would
        // take the message through its lane; ping-pong never meets one.)
        let woke = change_run::<PLAIN>(&to.run, IDLE, CLAIMED);
        assert!(woke, "ping-pong never sends to a busy actor");
        self.system.queue.borrow_mut().push_back(Delivery {
            to,
            msg,
            entry: turn::<PLAIN>,
        });
        true
    }
}

/// A run-state word from `from` to `to`, if it holds `from`: a
/// compare-exchange, or with `PLAIN` (the owner's side of a biased lock) a
/// plain load and store.
#[inline(always)]
fn change_run<const PLAIN: bool>(run: &AtomicU8, from: u8, to: u8) -> bool {
    if PLAIN {
        let was = run.load(Ordering::Relaxed);
        run.store(to, Ordering::Release);
        return was == from;
    }
    run.compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
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
    // The turn-time sample: one turn in 64 asks whether a recorder is
    // installed (none is), as `Cell::run` does.
    if n % 64 == 0 && system.metrics.load(Ordering::Relaxed) {
        trace_event(2);
    }
    let quiet = QUIET.with(|q| q.replace(true));
    let mut ctx = Context { system, me };
    let ok = catch_unwind(AssertUnwindSafe(|| handle::<PLAIN>(&mut ctx, msg))).is_ok();
    QUIET.with(|q| q.set(quiet));
    if system.tracing.load(Ordering::Relaxed) {
        trace_event(u8::from(ok));
    }
    // Release: nothing else arrived (a mark would fail it and requeue).
    let released = change_run::<PLAIN>(&me.run, CLAIMED, IDLE);
    assert!(released, "ping-pong never marks a running actor");
}

/// The bare side: the same queue and calls, none of the guarantees (one
/// actor sending to itself).
fn bare_turn(system: &System, me: &Actor, msg: u64) {
    if msg == me.target {
        me.done.set(msg);
    } else {
        system.queue.borrow_mut().push_back(Delivery {
            to: me,
            msg: msg + 1,
            entry: bare_turn,
        });
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

/// Runs deliveries from `first` on until the queue is empty, timed.
fn timed(system: &System, first: Delivery) -> Duration {
    let start = Instant::now();
    system.queue.borrow_mut().push_back(first);
    loop {
        let Some(d) = system.queue.borrow_mut().pop_front() else {
            return start.elapsed();
        };
        // SAFETY: every actor outlives the run it is in.
        (d.entry)(system, unsafe { &*d.to }, d.msg);
    }
}

/// One ping-pong of `n` messages through `turn`, timed.
fn pingpong<const PLAIN: bool>(system: &System, n: u64) -> Duration {
    let (ping, pong) = (actor(n), actor(u64::MAX));
    ping.peer.set(&pong);
    pong.peer.set(&ping);
    // The first message, admitted and woken as `send` would.
    pong.run.store(CLAIMED, Ordering::Relaxed);
    pong.tail.store(1, Ordering::Relaxed);
    let time = timed(
        system,
        Delivery {
            to: &pong,
            msg: 1,
            entry: turn::<PLAIN>,
        },
    );
    assert!(ping.done.get() == n || pong.done.get() == n);
    time
}

/// `n` messages of the bare side, timed.
fn bare(system: &System, n: u64) -> Duration {
    let me = actor(n);
    let time = timed(
        system,
        Delivery {
            to: &me,
            msg: 1,
            entry: bare_turn,
        },
    );
    assert_eq!(me.done.get(), n);
    time
}

fn main() {
    let n: u64 = 20_000_000;
    let system = System {
        queue: RefCell::new(VecDeque::with_capacity(16)),
        tracing: AtomicBool::new(std::env::var_os("LOCAL_FLOOR_TRACE").is_some()),
        metrics: AtomicBool::new(false),
    };
    for _ in 0..3 {
        let guarded = pingpong::<false>(&system, n);
        let plain = pingpong::<true>(&system, n);

        let bare = bare(&system, n);
        let rate = |t: Duration| {
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
            rate(bare)
        );
    }
}
