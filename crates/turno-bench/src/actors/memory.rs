//! `memory`: live heap bytes per idle actor, for turno and the peers.
//!
//! A counting global allocator ([`Counting`], wrapping [`System`]) keeps
//! the live heap bytes while counting is switched on (off, it costs one
//! relaxed load per allocation, so the other benches are unaffected). For
//! each implementation, the system is started first; then `--n` (default
//! [`DEFAULT_N`]) actors with a zero-sized state and an empty mailbox are
//! spawned and given time to start; the live-bytes delta divided by the
//! actor count is the cost of one idle actor: its mailbox, its cell or
//! task, its registration in the system, and the address the spawner keeps.
//!
//! What it does not count: memory that is not heap. For crossbeam's
//! thread-per-actor baseline that is the thread's stack (mapped by the OS:
//! 2 MiB reserved by default, at least a few KiB resident) and kernel
//! thread state; it measures 1000 threads, not `--n`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use super::{tokio_rt, Turno, TURNO};
use crate::Args;

/// Default idle actors per implementation.
pub const DEFAULT_N: u64 = 10_000;

/// Actors (threads) for the crossbeam thread-per-actor baseline.
const THREADS: u64 = 1000;

/// The counting allocator: [`System`], plus the live byte count while
/// [`COUNTING`] is on.
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicI64 = AtomicI64::new(0);

/// Live allocations by size (in 8-byte steps up to 4 KiB; the last bucket
/// takes the rest), printed with `TURNO_BENCH_ALLOC_SIZES=1`: where an
/// actor's bytes go.
static SIZES: [AtomicI64; 513] = [const { AtomicI64::new(0) }; 513];

fn bucket(size: usize) -> usize {
    size.div_ceil(8).min(512)
}

#[inline]
fn count(size: usize, sign: i64) {
    LIVE.fetch_add(sign * size as i64, Ordering::Relaxed);
    SIZES[bucket(size)].fetch_add(sign, Ordering::Relaxed);
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees hold; the counters have no effect on
// the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            count(layout.size(), 1);
        }
        // SAFETY: the caller upholds `alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            count(layout.size(), -1);
        }
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            count(layout.size(), 1);
        }
        // SAFETY: the caller upholds `alloc_zeroed`'s contract for `layout`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            count(layout.size(), -1);
            count(new_size, 1);
        }
        // SAFETY: the caller upholds `realloc`'s contract for `ptr`, `layout`
        // and `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Live heap bytes allocated since counting was switched on (frees of
/// memory allocated before count too, so measure deltas only).
fn live() -> i64 {
    LIVE.load(Ordering::SeqCst)
}

/// Measures `spawn(k)` (which spawns `k` idle actors, waits for them to
/// start, and returns whatever keeps them alive), prints bytes per actor,
/// then drops what it returned.
fn measure<T>(args: &Args, imp: &str, k: u64, spawn: impl FnOnce(u64) -> T) {
    if !args.selected("memory", imp) {
        return;
    }
    let (per, keep) = counted(imp, k, spawn);
    if args.json {
        println!(
            "{}",
            serde_json::json!({"bench": "memory", "impl": imp, "n": k, "bytes_per_actor": per.round()})
        );
    } else {
        println!("| memory | {imp} | {k} | {per:.0} bytes per idle actor |");
    }
    drop(keep);
}

/// Live heap bytes per item kept by `spawn(k)` (for benches outside this
/// module, such as `chart`): counted like [`measure`], returned instead of
/// printed.
#[cfg_attr(not(feature = "chart"), allow(dead_code))]
pub fn measure_bytes<T>(imp: &str, k: u64, spawn: impl FnOnce(u64) -> T) -> Option<f64> {
    let (per, keep) = counted(imp, k.max(1), spawn);
    drop(keep);
    Some(per)
}

/// Runs `spawn(k)` with counting on: live bytes per item, and what it
/// returned (still alive). With `TURNO_BENCH_ALLOC_SIZES` set, prints the
/// live allocations per item by size to stderr.
fn counted<T>(imp: &str, k: u64, spawn: impl FnOnce(u64) -> T) -> (f64, T) {
    let sizes_before: Vec<i64> = SIZES.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    COUNTING.store(true, Ordering::SeqCst);
    let before = live();
    let keep = spawn(k);
    let after = live();
    COUNTING.store(false, Ordering::SeqCst);
    if std::env::var_os("TURNO_BENCH_ALLOC_SIZES").is_some() {
        eprintln!("{imp}: live allocations per actor by size (bytes: count)");
        for (b, c) in SIZES.iter().enumerate() {
            let d = c.load(Ordering::SeqCst) - sizes_before[b];
            if d.unsigned_abs() >= k / 2 {
                eprintln!("  <= {:>5}: {:.2}", b * 8, d as f64 / k as f64);
            }
        }
    }
    ((after - before) as f64 / k as f64, keep)
}

/// Gives spawned async actors time to run their start.
fn settle() {
    std::thread::sleep(Duration::from_millis(100));
}

struct Idle;

impl turno::Actor for Idle {
    type Msg = ();
    fn handle(&mut self, _: &mut turno::Context<'_, Self>, (): ()) {}
}

mod ax {
    pub struct Idle;
    impl actix::Actor for Idle {
        type Context = actix::Context<Self>;
    }
}

mod rc {
    use ractor::{Actor, ActorProcessingErr, ActorRef};
    pub struct Idle;
    impl Actor for Idle {
        type Msg = ();
        type State = ();
        type Arguments = ();
        async fn pre_start(&self, _: ActorRef<()>, (): ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }
    }
}

mod km {
    #[derive(kameo::Actor)]
    pub struct Idle;
}

struct SIdle;

impl SIdle {
    fn init(_: stakker::CX![]) -> Option<Self> {
        Some(SIdle)
    }
}

/// Measures every implementation and prints one line each.
pub fn run(args: &Args) {
    let k = args.n.unwrap_or(DEFAULT_N).max(1);
    if !args.json {
        println!("| bench | impl | actors | live heap per idle actor |\n|---|---|---:|---:|");
    }
    for imp in TURNO {
        let mut sys = Turno::new(imp);
        measure(args, imp, k, |k| {
            let mut v = Vec::with_capacity(k as usize);
            for _ in 0..k {
                v.push(sys.spawn(turno::Props::new(), || Idle));
            }
            match &mut sys {
                Turno::Threaded(s) => assert!(s.wait_idle(Duration::from_secs(30))),
                Turno::Det(s) => {
                    s.run_until_idle().expect("idle");
                }
                Turno::Local(s) => {
                    s.run_until_idle();
                }
            }
            v
        });
        sys.close();
    }
    {
        let sys = actix_rt::System::new();
        measure(args, "actix", k, |k| {
            sys.block_on(async {
                use actix::Actor as _;
                let v: Vec<_> = (0..k).map(|_| ax::Idle.start()).collect();
                for _ in 0..10 {
                    tokio::task::yield_now().await;
                }
                v
            })
        });
    }
    {
        let rt = tokio_rt();
        measure(args, "ractor", k, |k| {
            rt.block_on(async {
                let mut v = Vec::with_capacity(k as usize);
                for _ in 0..k {
                    v.push(
                        ractor::Actor::spawn(None, rc::Idle, ())
                            .await
                            .expect("spawn"),
                    );
                }
                v
            })
        });
    }
    {
        let rt = tokio_rt();
        measure(args, "kameo", k, |k| {
            rt.block_on(async {
                use kameo::actor::Spawn;
                let mut v = Vec::with_capacity(k as usize);
                for _ in 0..k {
                    let a = km::Idle::spawn(km::Idle);
                    a.wait_for_startup().await;
                    v.push(a);
                }
                v
            })
        });
    }
    {
        let mut s = stakker::Stakker::new(std::time::Instant::now());
        measure(args, "stakker", k, |k| {
            let v: Vec<_> = (0..k)
                .map(|_| stakker::actor!(s, SIdle::init(), stakker::ret_nop!()))
                .collect();
            s.run(std::time::Instant::now(), false);
            v
        });
    }
    {
        let rt = tokio_rt();
        measure(args, "tokio", k, |k| {
            let v: Vec<_> = (0..k)
                .map(|_| {
                    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1024);
                    rt.spawn(async move { while rx.recv().await.is_some() {} });
                    tx
                })
                .collect();
            settle();
            v
        });
        rt.shutdown_timeout(Duration::from_secs(5));
    }
    measure(args, "crossbeam", THREADS, |k| {
        let v: Vec<_> = (0..k)
            .map(|_| {
                let (tx, rx) = crossbeam_channel::bounded::<()>(1024);
                let t = std::thread::spawn(move || while rx.recv().is_ok() {});
                (tx, t)
            })
            .collect();
        settle();
        v
    });
}
