//! The host: queues, virtual clock, and the two event-loop models.
//!
//! boa runs JavaScript; everything *around* a turn of JavaScript lives here.
//! The host is installed as boa's [`JobExecutor`](boa_engine::job::JobExecutor), so every promise job the
//! engine creates lands in our microtask queue instead of boa's default
//! executor (which would run due timers before promise jobs). The host then
//! drives the loop itself:
//!
//! * **node**: main script, then `process.nextTick` queue + microtasks
//!   (`processTicksAndRejections`), then loop iterations of the phases
//!   timers → pending → poll → check → close, draining ticks and microtasks
//!   after every callback, as Node ≥ 11 does.
//! * **html**: the script is a task; then pick the oldest runnable task
//!   (timers become tasks when due, posted messages are tasks), run it,
//!   perform a microtask checkpoint, and at each 60 Hz frame boundary with
//!   `requestAnimationFrame` callbacks pending run the "update the rendering"
//!   step (a microtask checkpoint after each rAF callback, as the stack empties).
//!
//! Time is virtual: it moves while JavaScript runs by the cost model
//! (`cost.rs`), and jumps to the next due event when the loop would
//! otherwise wait. Runs are therefore deterministic.
//!
//! Borrow discipline: the `State` is in a `RefCell`; no borrow is ever held
//! across a call into JavaScript, because JavaScript calls back into natives
//! that borrow it again.
//!
//! ## Files, bottom up
//!
//! Each file imports only files above it in this list (and this file only
//! declares them), so the module graph has no cycle:
//!
//! * `callee.rs`: a leaf that reads a failed call's callee back from the
//!   source text (`o.foo is not a function`, V8's column), since boa says
//!   only `not a callable function`.
//! * `catches.rs`: a leaf that inserts a call of the prelude's
//!   `__turnoCatch` at the start of each `catch` block of the program's
//!   script (so `e.message` names the callee when the block reads it) and
//!   maps boa's positions in the rewritten script back to the program's.
//! * `entries.rs`, `shared.rs`: plain data, leaves. What each queue holds
//!   (tasks, scripted input, microtasks, timers, followed promises,
//!   animations), and what the loops of one run share (step budget, record
//!   order, workers to start, messages in flight).
//! * `state.rs`: the core shared by both models: the `State` and the
//!   `Host`, trace records, output, host-initiated frames, the step budget,
//!   stopping.
//! * `clock.rs`: the virtual clock (the cost model's instructions, jumps to
//!   the next event) and the compositor frames each move passes.
//! * `support.rs`: what every native shares (finding the host, argument
//!   helpers, the JavaScript-stack scope).
//! * `promises.rs`: following the internal slots of promises for the trace.
//! * `uncaught.rs`: host-initiated calls (`Host::call`) and the uncaught
//!   exceptions and unhandled rejections they meet, reported as each
//!   runtime reports them.
//! * The queue files, which define each queue's natives and the loop steps
//!   that drain it, and import none of each other: `microtasks.rs` (boa's
//!   job executor and host hooks, the microtask queue and checkpoint),
//!   `timers.rs` (the timers heap, delay coercion, the HTML nesting clamp),
//!   `compositor.rs` (`transform`/`opacity` animations that keep coming
//!   while the main thread is blocked: trace only), `events.rs` (DOM event
//!   dispatch, the host's half), `node.rs` (the Node loop: phases,
//!   `process.nextTick`, `setImmediate`), `html.rs` (the HTML loop: tasks,
//!   posted messages, prioritized tasks, `requestAnimationFrame`, "update
//!   the rendering"),
//!   `workers.rs` (dedicated workers: the loops of one run scheduled
//!   earliest-step-first, and the messages between them).
//! * `natives.rs`: the registry: the `h` object of natives the prelude
//!   calls (each queue's natives live in that queue's file).
//! * `run.rs`: one run: building a loop (engine and prelude setup), the main
//!   script, the merge of every loop's output and trace, the report and the
//!   budget errors.
//!
//! The queue files extend `Host` and `State` with `impl` blocks, and a loop
//! step of one may call another's (the HTML loop performs a microtask
//! checkpoint): those are calls among peers, never up into `natives.rs`
//! or `run.rs`, and never from the core (`state.rs`, `clock.rs`) upward.
//!
//! The JavaScript half of the host (console, `util.inspect`, the Node and web
//! API shapes) is `../prelude.js`.

mod callee;
mod catches;
mod clock;
mod compositor;
mod entries;
mod events;
mod html;
mod microtasks;
mod natives;
mod node;
mod promises;
mod run;
mod shared;
mod state;
mod support;
mod timers;
mod uncaught;
mod workers;

pub(crate) use run::run;
