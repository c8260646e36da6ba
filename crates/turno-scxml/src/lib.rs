//! SCXML 1.0 documents for turno.
//!
//! - [`load_str`] / [`load_file`]: quick-xml into a [`Document`], rejecting
//!   what is not SCXML with a [`LoadError`] that names the line and column.
//! - [`datamodel`]: the null data model and (feature `ecmascript`, on by
//!   default) the ECMAScript data model on boa_engine.
//! - [`Session`]: a document running on turno-chart's core (one
//!   algorithm for JSON configs and SCXML, under
//!   [`Semantics::Scxml`](turno_chart::Semantics)), with executable
//!   content, `<send>`, `<invoke>` and the `_event` fields.
//! - [`Processor`]: the SCXML processor, a root session and the sessions
//!   it invokes, on one thread and virtual time (why one thread: its
//!   module docs). It was called `System`; the old name is a deprecated
//!   alias.
//! - `actor` (feature `actor`): a document with the null data model as a
//!   turno actor, on any scheduler and the system's clock.
//! - [`suite`]: the W3C conformance suite runner.
//! - [`script`]: what `turno chart run` runs for SCXML; [`paths`]: what
//!   `turno chart paths` finds; [`mermaid`]: diagrams;
//!   `export` (feature `chart`): turno-chart machines as SCXML.
//!
//! ```
//! use std::sync::Arc;
//! use turno_scxml::{load_str, Event, Processor};
//!
//! let doc = load_str(r#"
//!   <scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="ecmascript">
//!     <datamodel><data id="n" expr="0"/></datamodel>
//!     <state id="counting">
//!       <transition event="tick" cond="n &lt; 2"><assign location="n" expr="n + 1"/></transition>
//!       <transition event="tick" target="done"/>
//!     </state>
//!     <final id="done"/>
//!   </scxml>"#, None).unwrap();
//! let mut sys = Processor::new();
//! let s = sys.start(Arc::new(doc)).unwrap();
//! for _ in 0..3 {
//!     sys.send(s, Event::external("tick", None));
//! }
//! sys.run_until(0.0).unwrap();
//! assert_eq!(sys.atomic_states(s), ["done"]);
//! ```

#[cfg(feature = "actor")]
pub mod actor;
mod compile;
pub mod datamodel;
mod error;
mod event;
mod exec;
#[cfg(feature = "chart")]
pub mod export;
mod load;
pub mod mermaid;
pub mod model;
pub mod paths;
mod processor;
pub mod script;
mod session;
pub mod suite;
mod xml;

pub use error::{LoadError, Position};
pub use event::{Event, EventKind, SCXML_IO_PROCESSOR};
pub use load::{load_file, load_str};
pub use model::Document;
pub use processor::{data_model_for, LogLine, Processor, RunError, SessionHandle};
pub use session::{Session, MAX_MICROSTEPS};

/// The former name of [`Processor`]: turno's runtime is `turno::System`, and
/// this is not one.
#[deprecated(note = "renamed `Processor`: the SCXML processor, not a turno `System`")]
pub type System = Processor;
