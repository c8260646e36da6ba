//! What the loops of one run share (the page's loop and its workers'):
//! the step budget, the run-wide order of records, workers waiting to
//! start and messages in flight.
//!
//! A leaf of `host/`: the host's state holds it (`state.rs`); `workers.rs`
//! starts the loops and moves the messages.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;

use boa_engine::JsString;

/// What all loops of one run share.
pub(crate) struct Shared {
    pub(super) steps: Cell<u64>,
    pub(super) max_steps: u64,
    pub(super) stamp: Cell<u64>,
    pub(super) next_loop: Cell<u32>,
    pub(super) next_message: Cell<u64>,
    /// Where `new Worker(url)` resolves a relative `url`.
    pub(super) base_dir: Option<PathBuf>,
    pub(super) spawns: RefCell<Vec<Spawn>>,
    pub(super) posts: RefCell<Vec<Post>>,
    pub(super) ended: RefCell<Vec<u32>>,
}

impl Shared {
    pub(super) fn new(max_steps: u64, base_dir: Option<PathBuf>) -> Self {
        Shared {
            steps: Cell::new(0),
            max_steps,
            stamp: Cell::new(0),
            next_loop: Cell::new(1),
            next_message: Cell::new(0),
            base_dir,
            spawns: RefCell::new(Vec::new()),
            posts: RefCell::new(Vec::new()),
            ended: RefCell::new(Vec::new()),
        }
    }

    /// The next run-wide stamp: the order in which records were made,
    /// across loops (ties of equal time keep it).
    pub(super) fn stamp(&self) -> u64 {
        let s = self.stamp.get();
        self.stamp.set(s + 1);
        s
    }

    /// Counts one host step against the run's budget; false when it is spent.
    pub(super) fn take_step(&self) -> bool {
        let n = self.steps.get() + 1;
        self.steps.set(n);
        n <= self.max_steps
    }

    pub(super) fn steps(&self) -> u64 {
        self.steps.get()
    }

    pub(super) fn max_steps(&self) -> u64 {
        self.max_steps
    }
}

/// A worker to start: its loop id, script and where it came from.
pub(super) struct Spawn {
    pub(super) loop_id: u32,
    pub(super) parent: u32,
    pub(super) file: String,
    pub(super) source: String,
    pub(super) name: String,
    pub(super) t_ns: u64,
}

/// A message on its way between loops.
pub(super) struct Post {
    pub(super) to: u32,
    pub(super) arrival: Arrival,
}

/// A message that reaches a loop at `t_ns` (the sender's clock).
pub(crate) struct Arrival {
    pub(super) t_ns: u64,
    pub(super) from: u32,
    pub(super) message: u64,
    /// The worker the message concerns: on the page, the `Worker` object
    /// it is dispatched at; in a worker, its own id.
    pub(super) worker: u32,
    pub(super) data: JsString,
}
