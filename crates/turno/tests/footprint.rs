//! What one actor costs, counted by a global allocator of this test binary
//! (per thread, so that tests running side by side do not mix): the heap
//! bytes an idle actor keeps, and the allocations of a spawn and of a
//! whole life (spawn, one message, stop). A change that adds bytes or an
//! allocation per actor fails here; the figures against the peers are in
//! BENCHMARKS.md ("Memory per idle actor").
//!
//! `LocalSystem` and `DetSystem` run every turn on the caller's thread, so
//! the caller's counters see all of it.

#![cfg(not(turno_loom))]

use std::alloc::{GlobalAlloc, Layout, System as Heap};
use std::cell::Cell;

use turno::{Actor, Addr, Context, DetSystem, LocalSystem, Props, System};

struct Counting;

thread_local! {
    /// Heap bytes allocated and not freed by this thread (frees by other
    /// threads of memory this one allocated are not seen: none here).
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; the
// counters are const-initialised thread-locals without destructors, which
// neither allocate nor touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|l| l.set(l.get() + layout.size() as i64));
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: the caller upholds `alloc`'s contract.
        unsafe { Heap.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|l| l.set(l.get() - layout.size() as i64));
        // SAFETY: `ptr` came from `Heap` with `layout`.
        unsafe { Heap.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LIVE.try_with(|l| l.set(l.get() + new_size as i64 - layout.size() as i64));
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: the caller upholds `realloc`'s contract.
        unsafe { Heap.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> i64 {
    LIVE.with(Cell::get)
}

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

/// The idle actor of `turno-bench memory`: no state, never sent anything.
struct Idle;

impl Actor for Idle {
    type Msg = u64;
    fn handle(&mut self, _: &mut Context<'_, Self>, _: u64) {}
}

/// Stops on its one message.
struct Once;

impl Actor for Once {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, (): ()) {
        ctx.stop();
    }
}

const N: usize = 1000;

/// The most heap bytes an idle, unnamed, started actor may keep, its
/// address (in the caller's `Vec`) and its share of the tree's table
/// included. Measured: 258 (LocalSystem and DetSystem; 283 before the
/// tree's map entry was the slot alone, a `ThinSlot`, the parent's id in
/// the slot's header and the rare parts in a map of their own (the entry
/// 24 bytes and a control byte -> 8 and one, times the table's slack; the
/// slot 8 more), 291 before the
/// cell's stash bound was four bytes and its turn count two, sharing a
/// word with the instance's tag (32 -> 24 bytes), 299 before the
/// lane's consumer head stopped keeping a copy of `taken`, its elements
/// removed, which the consumer alone writes (24 -> 16 bytes), 307 before the
/// system lane's two `u32` lengths were one byte of two bits, whether
/// each queue is non-empty (the mailbox's bytes 15 -> 8), 315 before the
/// system lane's two flags left the queues' pointer for the mailbox's
/// other bytes (16 -> 8 bytes and two), 331 before an
/// actor path was one thin pointer and the mailbox's path cell one word,
/// the own path or the parent's (24 -> 8 bytes), 347 before an
/// address was one word, the mailbox's own address (the bench's and the
/// cell's own, 16 -> 8 bytes each), 363 before the
/// tree's node held its slot as a one-word `ThinSlot` instead of a wide
/// `Arc` (32 -> 24 bytes, times the table's slack; the slot's own wide
/// address moved from the mailbox into the header, where the `ThinSlot`
/// finds it), 379 before the
/// cell held the spawn's closure itself instead of a box of it, 387 before
/// the cell's lock was the mailbox's run-state word, 411 before the
/// slot's header lost its scheduler pointer (a wake-up finds the scheduler
/// in the system's shared state), 419 before the
/// system lane's lock was a byte beside the mailbox's flags instead of a
/// `Mutex` around the queues, 427 before the
/// waiting senders' event and count and the stale-reply count were one
/// part allocated on first use (411 with the lane's policy packed in one
/// word as well, undone: it cost instructions per message), 435 before a
/// simulated busy period's end moved from the slot's header to the tree's
/// rare node part, 443 before the
/// mailbox read the actor's id from its slot's header instead of keeping a
/// copy, 459 before the
/// tree's map entry lost its copy of the id (40 -> 32 bytes, times the
/// table's slack), 467 before the
/// lane's evicted count left its consumer head for its rare counters, 475
/// before the
/// system lane's closed flag moved beside its start flag, 483 before the
/// lane's read offset was a `u32` sharing a word with its closed flag,
/// 491 before the metric handles' slot was a `LazyBox`, 507 before the
/// mailbox's system-lane lengths and waiting-sender count were `u32`, 524
/// before the
/// tree's node lost its restart count and named flag, 540 before an
/// unnamed actor's path was written only when asked for, 659 before the
/// lane's rare counters and the muted list were allocated on first use,
/// 563 before slot, mailbox and cell were one allocation).
const IDLE_BYTES: i64 = 258;
/// The most allocations a spawn and start of an unnamed actor may make
/// (amortised: the tree's table and the run queue grow now and then).
/// Measured: 1 (the slot holding mailbox and cell; 2 before an unnamed
/// actor's path was written only when asked for, 5 before the root's path
/// was shared, 4 before the slot was one allocation).
const SPAWN_ALLOCS: f64 = 1.05;
/// The same for a whole life: spawn, start, one message, stop. Measured:
/// 2.06 (the lane's first block besides; 3 before the path was written on
/// demand, 12 before the depth gauge, the lane's counters and the close's
/// wake-up stopped allocating for it).
const LIFE_ALLOCS: f64 = 2.07;

fn idle_bytes<S: System>(mut sys: S, settle: fn(&mut S)) -> i64 {
    // Grows what a system keeps across spawns (its run queue) first.
    let warm: Vec<Addr<u64>> = (0..N)
        .map(|_| sys.spawn(Props::new(), || Idle).unwrap())
        .collect();
    settle(&mut sys);
    drop(warm);
    let mut addrs: Vec<Addr<u64>> = Vec::with_capacity(N);
    let before = live();
    for _ in 0..N {
        addrs.push(sys.spawn(Props::new(), || Idle).unwrap());
    }
    settle(&mut sys);
    let per_actor = (live() - before) / N as i64 + std::mem::size_of::<Addr<u64>>() as i64;
    assert_eq!(addrs.len(), N);
    per_actor
}

fn allocations<S: System>(mut sys: S, settle: fn(&mut S)) -> (f64, f64) {
    let warm: Vec<Addr<()>> = (0..N)
        .map(|_| sys.spawn(Props::new(), || Once).unwrap())
        .collect();
    settle(&mut sys);
    for a in &warm {
        let _ = a.try_send(());
    }
    settle(&mut sys);
    drop(warm);
    let mut addrs: Vec<Addr<()>> = Vec::with_capacity(N);
    let before = allocs();
    for _ in 0..N {
        addrs.push(sys.spawn(Props::new(), || Once).unwrap());
    }
    settle(&mut sys);
    let spawned = allocs() - before;
    for a in &addrs {
        assert!(a.try_send(()).is_enqueued());
    }
    settle(&mut sys);
    assert_eq!(sys.actor_count(), 0);
    let life = allocs() - before;
    (spawned as f64 / N as f64, life as f64 / N as f64)
}

fn local_settle(sys: &mut LocalSystem) {
    sys.run_until_idle();
}

fn det_settle(sys: &mut DetSystem) {
    sys.run_until_idle().unwrap();
}

#[test]
fn an_address_is_one_word() {
    assert_eq!(std::mem::size_of::<Addr<u64>>(), 8);
    assert_eq!(std::mem::size_of::<Option<Addr<u64>>>(), 8);
}

#[test]
fn an_idle_actor_keeps_at_most_its_budget_of_bytes() {
    let local = idle_bytes(LocalSystem::new(), local_settle);
    let det = idle_bytes(DetSystem::new(1), det_settle);
    eprintln!("bytes per idle actor: LocalSystem {local}, DetSystem {det}");
    assert!(
        local <= IDLE_BYTES,
        "LocalSystem: {local} bytes per idle actor"
    );
    assert!(det <= IDLE_BYTES, "DetSystem: {det} bytes per idle actor");
}

#[test]
fn a_spawn_and_a_whole_life_make_at_most_their_budget_of_allocations() {
    for (name, (spawn, life)) in [
        ("LocalSystem", allocations(LocalSystem::new(), local_settle)),
        ("DetSystem", allocations(DetSystem::new(1), det_settle)),
    ] {
        eprintln!("{name}: {spawn} allocations per spawn, {life} per life");
        assert!(
            spawn <= SPAWN_ALLOCS,
            "{name}: {spawn} allocations per spawn"
        );
        assert!(life <= LIFE_ALLOCS, "{name}: {life} allocations per life");
    }
}
