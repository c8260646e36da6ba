//! The fake payment gateway that turno's payment flows are tested and
//! demonstrated against: the idempotent submit of turno-chart's tests, and
//! the signup wizard of `turno demo`.
//!
//! One gateway, two doors:
//!
//! - [`GatewayActor`]: an actor to spawn in any turno system (the
//!   deterministic one in tests), asked with [`GatewayMsg`]; a [`Faults`]
//!   script decides what goes wrong with each request.
//! - [`http::HttpGateway`] (feature `http`): the same ledger behind an HTTP
//!   service on loopback, with its own SQLite file and a writer thread that
//!   commits the charges waiting together (group commit); each request asks
//!   for its fault in a header.
//!
//! Behind both is the [`Ledger`]: a charge is taken at most once per
//! idempotency key, in one transaction of a turno-store store, so it
//! outlives a crash of the actor and a restart of the process. What the
//! tests count is the ledger (money actually taken), never a counter.
//!
//! ```
//! use std::time::Duration;
//! use serde_json::json;
//! use turno::{Props, System, ThreadedSystem};
//! use turno_gateway::{Charged, Fault, Faults, GatewayActor, GatewayMsg, Ledger, Reply};
//! use turno_store::Store;
//!
//! let ledger = Ledger::open(Store::memory()).unwrap();
//! // The first request's reply is lost: the money is taken, nobody hears it.
//! let faults = Faults::script(vec![Fault::LostReply]);
//! let sys = ThreadedSystem::builder().threads(1).build();
//! let l = ledger.clone();
//! let gw = sys
//!     .spawn(Props::new().name("gateway"), move || GatewayActor::new(l.clone(), faults.clone()))
//!     .unwrap();
//! let charge = |reply| GatewayMsg::Charge {
//!     key: "signup-1".into(),
//!     request: json!({"amount": 42}),
//!     fault: None,
//!     reply: Reply::Typed(reply),
//! };
//! let second = Duration::from_secs(1);
//! assert!(gw.ask_blocking(charge, second).is_err(), "no answer");
//! // The retry with the same key is answered from the ledger.
//! let again = gw.ask_blocking(charge, second).unwrap();
//! assert!(matches!(again, Charged::Replayed(ref r) if r["amount"] == 42));
//! assert_eq!(ledger.charges().unwrap().len(), 1, "charged once");
//! sys.shutdown(second).unwrap();
//! //! ```

#![warn(missing_docs)]

mod actor;
mod fault;
#[cfg(feature = "http")]
pub mod http;
mod ledger;

pub use actor::{GatewayActor, GatewayMsg, Reply};
pub use fault::{Fault, Faults};
pub use ledger::{Charged, Found, Ledger, RECEIPT_FIELDS};
