//! Contained panics stay quiet.
//!
//! A panicking turn fails its actor, not the process: the runtime catches
//! it, records it (trace, `tracing`, supervision) and goes on. The process's
//! panic hook would still print a message and a backtrace for each one, which
//! drowns test output in noise for failures that are expected and handled.
//! So while a turn runs under `catch_unwind`, the hook is silenced on that
//! thread, unless the system was built with `print_panics(true)`.
//!
//! The hook is wrapped once per process: the previous hook (the default one,
//! or the user's) still runs for every panic outside a turn. A hook set
//! later by the user replaces ours, which only makes turns loud again.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    /// Nesting depth of quiet sections on this thread.
    static QUIET: Cell<u32> = const { Cell::new(0) };
}

static WRAP_HOOK: Once = Once::new();

fn install() {
    WRAP_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// Silences the panic hook on this thread until dropped (when `quiet`).
pub(crate) struct Quiet(bool);

impl Quiet {
    pub(crate) fn enter(quiet: bool) -> Quiet {
        if quiet {
            install();
            QUIET.with(|q| q.set(q.get() + 1));
        }
        Quiet(quiet)
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        if self.0 {
            QUIET.with(|q| q.set(q.get() - 1));
        }
    }
}
