//! One reader for every turno trace.
//!
//! turno writes two trace families in one envelope (JSON lines: a header
//! line, then events with `seq`, `t_ns` and `kind`):
//!
//! * `turno-trace` (`docs/trace-format.md`): the runtime's actors,
//!   mailboxes, timers, requests, supervision, and the statechart extension
//!   events ([`ActorEvent::ChartDefine`], [`ActorEvent::ChartEvent`],
//!   [`ActorEvent::ChartExit`], [`ActorEvent::ChartTransition`],
//!   [`ActorEvent::ChartEnter`]) that `turno-chart` records per microstep;
//! * `turno-js-trace` (`docs/js-trace-format.md`): the JavaScript
//!   explorer's queues, call stack, time, render steps and promise slots.
//!
//! This crate owns both: typed events ([`ActorEvent`], [`JsEvent`]) with
//! typed ids and the overflow [`Policy`] as a type, serde both ways; a
//! streaming [`Reader`] that validates as it goes and names the line and
//! field of the first problem; an [`Index`] with periodic checkpoints; and
//! [`World`], the state reconstructed at any step. It depends on neither
//! `turno` nor `turno-js`; both write through it.
//!
//! ```
//! use std::io::Cursor;
//! use turno_trace::{Index, Queue};
//!
//! let trace = "{\"format\":\"turno-js-trace\",\"version\":1,\"model\":\"node\",\"file\":\"a.js\"}\n\
//!   {\"seq\":0,\"t_ns\":0,\"kind\":\"enqueue\",\"queue\":\"microtask\",\"id\":1,\"label\":\"PromiseJob\"}\n\
//!   {\"seq\":1,\"t_ns\":0,\"kind\":\"enqueue\",\"queue\":\"microtask\",\"id\":2,\"label\":\"PromiseJob\"}\n\
//!   {\"seq\":2,\"t_ns\":0,\"kind\":\"dequeue\",\"queue\":\"microtask\",\"id\":1}\n";
//! let index = Index::build(Cursor::new(trace)).unwrap();
//! assert_eq!(index.len(), 3);
//! let at2 = index.world_at(Cursor::new(trace), 2).unwrap();
//! assert_eq!(at2.js.queues[&Queue::Microtask].len(), 2);
//! let at3 = index.world_at(Cursor::new(trace), 3).unwrap();
//! assert_eq!(at3.js.queues[&Queue::Microtask][0].id.0, 2);
//! ```

pub mod actor;
pub mod cluster;
mod event;
mod fast;
mod ids;
pub mod index;
pub mod js;
mod policy;
pub mod queues;
pub mod reader;
pub mod world;

pub use actor::{ActorEvent, HistoryDepth, Lane, TurnKind};
pub use event::{node_id, Event, Format, Header, Kind, OtherKind, VERSION};
pub use ids::{ActorId, AnimationId, EntryId, PromiseId, RequestId, TimerId};
pub use index::Index;
pub use js::{JsEvent, Model, Queue};
pub use policy::{DropPolicy, Policy, PolicyParseError};
pub use queues::{Plot, Queues};
pub use reader::{read_all, Position, Problem, ReadError, Reader};
pub use world::{WaitFor, World};
