//! How a thread spent its time, from Linux's scheduler statistics: on a
//! CPU, and runnable but waiting for one. On a loaded machine the second
//! is what separates wall time from work (`None` where the kernel does
//! not say, e.g. not Linux).

use std::time::Duration;

use serde::Serialize;

/// A thread's scheduler times so far (`/proc/thread-self/schedstat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThreadTimes {
    /// Time spent running on a CPU.
    pub cpu: Duration,
    /// Time spent runnable, waiting in a run queue for a CPU.
    pub waiting: Duration,
}

impl ThreadTimes {
    /// The calling thread's times now.
    pub fn now() -> Option<ThreadTimes> {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
        Some(ThreadTimes {
            cpu: Duration::from_nanos(f.next()??),
            waiting: Duration::from_nanos(f.next()??),
        })
    }

    /// The times spent since `earlier`.
    pub fn since(self, earlier: ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            waiting: self.waiting.saturating_sub(earlier.waiting),
        }
    }
}
