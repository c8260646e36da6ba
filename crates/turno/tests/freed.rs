//! An actor that has stopped leaves nothing behind once its addresses are
//! dropped: its state, its factory's captures, its mailbox and its slot.
//! Live heap bytes are counted by a global allocator of this test binary.

#![cfg(not(turno_loom))]

use std::alloc::{GlobalAlloc, Layout, System as Heap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use turno::{Actor, Context, DetSystem, LocalSystem, Props, System};

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the
// counter does not touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::SeqCst);
        // SAFETY: the caller upholds `alloc`'s contract.
        unsafe { Heap.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::SeqCst);
        // SAFETY: `ptr` came from `Heap` with `layout`.
        unsafe { Heap.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Holder(#[allow(dead_code)] Arc<()>);

impl Actor for Holder {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, (): ()) {
        ctx.stop();
    }
}

/// Spawns `n` actors holding `token`, lets each handle one message (it
/// stops on it), and drops their addresses; `settle` runs the system until
/// it is idle.
fn spawn_and_stop<S: System>(sys: &mut S, settle: fn(&mut S), token: &Arc<()>, n: usize) {
    let addrs: Vec<_> = (0..n)
        .map(|_| {
            let t = token.clone();
            sys.spawn(Props::new(), move || Holder(t.clone())).unwrap()
        })
        .collect();
    settle(sys);
    assert_eq!(
        Arc::strong_count(token),
        1 + 2 * n,
        "factories and instances"
    );
    for a in &addrs {
        let _ = a.try_send(());
    }
    settle(sys);
    assert_eq!(sys.actor_count(), 0);
}

fn leaves_nothing_behind<S: System>(mut sys: S, settle: fn(&mut S)) {
    let token = Arc::new(());
    // The first round grows the tree's table and the run queue, which keep
    // their capacity; the second must return to where it started.
    spawn_and_stop(&mut sys, settle, &token, 500);
    assert_eq!(Arc::strong_count(&token), 1, "every stopped actor freed");
    let before = LIVE.load(Ordering::SeqCst);
    spawn_and_stop(&mut sys, settle, &token, 500);
    let grown = LIVE.load(Ordering::SeqCst) - before;
    assert_eq!(Arc::strong_count(&token), 1, "every stopped actor freed");
    assert!(
        grown < 500 * 8,
        "{grown} bytes still live after 500 actors stopped and were dropped"
    );
}

/// One test, so that no other test of this binary allocates meanwhile.
#[test]
fn a_stopped_actor_leaves_nothing_behind() {
    leaves_nothing_behind(DetSystem::new(1), |s| {
        s.run_until_idle().unwrap();
    });
    leaves_nothing_behind(LocalSystem::new(), |s| {
        s.run_until_idle();
    });
}
