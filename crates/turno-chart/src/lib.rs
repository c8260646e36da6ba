//! # turno-chart: statecharts as turno actors
//!
//! A statechart whose every macrostep is one turn of a turno actor. Three
//! layers:
//!
//! - **A pure core**: [`initial_transition`] and [`transition`] take a
//!   [`Machine`] and a [`Snapshot`] and return the next snapshot and the
//!   [`Action`]s to carry out, with no I/O and no clock. The algorithm is
//!   the W3C SCXML one ([`algorithm`]: `microstep`, `computeExitSet`,
//!   `computeEntrySet`, `removeConflictingTransitions`, ...), with XState
//!   v5's semantics where the two differ (`docs/statecharts.md`).
//! - **Definitions**: XState v5 JSON configs ([`load_json`]) with
//!   implementations registered by name ([`Implementations`]), or the
//!   typed Rust builder ([`builder::Chart`]: Rust types for context and
//!   events, closures for guards and actions).
//! - **The interpreter actor** (`interpreter`, feature `runtime`, on by
//!   default): one macrostep per turn, invocations as delegated work or
//!   child actors whose late results are stale, `after` on turno timers,
//!   subscribers, the trace. Without the feature the crate is the pure core
//!   and does not depend on turno.
//! - **Tools**: [`script`] (what `turno chart run` runs) and [`mermaid`].
//!
//! ```
//! use turno_chart::{initial_transition, load_json, stdlib, transition, Event};
//! let m = load_json(r#"{
//!   "id": "light", "initial": "green", "context": {"cycles": 0},
//!   "states": {
//!     "green":  {"on": {"NEXT": "yellow"}},
//!     "yellow": {"on": {"NEXT": "red"}},
//!     "red":    {"on": {"NEXT": {"target": "green",
//!                                "actions": {"type": "inc", "params": {"key": "cycles"}}}}}
//!   }}"#, &stdlib::implementations()).unwrap();
//! let (mut s, _) = initial_transition(&m).unwrap();
//! for _ in 0..3 {
//!     s = transition(&m, &s, Event::new("NEXT")).unwrap().0;
//! }
//! assert_eq!(s.value(&m).to_json(), "green");
//! assert_eq!(s.context["cycles"], 1);
//! ```

pub mod actions;
pub mod algorithm;
pub mod builder;
mod core;
pub mod event;
pub mod implementations;
#[cfg(feature = "runtime")]
pub mod interpreter;
pub mod json;
pub mod machine;
pub mod mermaid;
mod name_index;
pub mod paths;
pub mod persist;
pub mod script;
pub mod semantics;
pub mod snapshot;
pub mod spec;
pub mod stdlib;
mod step_table;
pub mod submit;
#[cfg(feature = "svg")]
pub mod svg;
pub mod tree;
pub mod volatile;

pub use actions::{Action, ActionScope, SendTarget};
pub use algorithm::{ChartError, Inspect};
pub use core::{
    advance, can, continue_macrostep, exit_interpreter, fire_scheduled, fire_scheduled_inspected,
    initial_transition, initial_transition_at, initial_transition_inspected,
    initial_transition_with, invocation_done, invocation_done_inspected, next_due, transition,
    transition_in_place, transition_inspected, Delivery, Step,
};
pub use event::Event;
pub use implementations::Implementations;
pub use json::{definition_json, load_json, load_value, Definition, LoadError};
pub use machine::{BuildError, Machine, Problem, StateIdx, StateKind};
pub use semantics::Semantics;
pub use snapshot::{Finished, Invocation, Scheduled, Snapshot, StateSet, StateValue, Status};
