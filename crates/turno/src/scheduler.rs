//! The one contract between the engine and a scheduler: what the engine
//! asks of the scheduler that runs it ([`DetSystem`](crate::DetSystem),
//! [`ThreadedSystem`](crate::ThreadedSystem),
//! [`LocalSystem`](crate::LocalSystem)).

use crate::engine::slot::Queued;
use crate::ids::ActorId;
use crate::time::Instant;
use crate::timer::TimerKey;

/// What a scheduler provides to the engine.
pub(crate) trait Scheduler: Send + Sync + 'static {
    /// The slot may have work: put it in a run queue. Called once per
    /// idle-to-scheduled transition, and for a parked slot requeued (which
    /// may meet its runner still holding the cell: see [`crate::run_state`]).
    /// (A push on a runner thread with an empty hand-off slot claims an
    /// idle actor for that slot instead, without a call: see
    /// [`crate::hand_off`].)
    fn schedule(&self, slot: Queued);
    /// Deliver `key` to `actor` at `deadline`.
    fn add_timer(&self, actor: ActorId, key: TimerKey, deadline: Instant);
    /// Whether `Context::simulate_work` makes the actor busy (virtual time).
    fn simulates_work(&self) -> bool;
}
