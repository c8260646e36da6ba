//! Durable statecharts sharded over nodes.
//!
//! An **entity** is a chart (a [`Machine`](turno_chart::Machine)) named by
//! a key: a signup session, an order. Its state lives in a
//! [`turno_store::Store`] (SQLite, PostgreSQL), and while it is in use it
//! runs as a [`ChartActor`](turno_chart::interpreter::ChartActor) on one
//! node. An [`EntityHost`] is one node's side:
//!
//! - **Sharding.** A key belongs to one of a fixed number of shards
//!   ([`turno_store::shard_for`]); the host owns shards through a
//!   [`ShardKeeper`](turno_store::ShardKeeper) (lease rows: owner, epoch,
//!   lease until) and runs only the entities of the shards it holds. A
//!   message for another shard is answered [`Routed::NotOwner`] with the
//!   shard's owner, for the caller to route it there. With the feature
//!   `cluster`, an `EntityNode` (module `cluster`) does that routing over
//!   turno-cluster's transport: any node accepts a message for any key.
//! - **One state change per message.** Each message carries the sender's
//!   sequence for its key. The entity takes it as one macrostep, and the
//!   chart's snapshot (turno-chart's persisted format), the message's
//!   sequence and the entity's next wake-up are committed in one
//!   [`Store::commit_entity`](turno_store::Store::commit_entity), before
//!   the macrostep's effects are carried out; only then is the message
//!   acknowledged ([`Ack::Applied`]). A redelivered message at or below the
//!   applied sequence is acknowledged and skipped ([`Ack::Duplicate`]).
//! - **Fencing.** Every write carries the epoch of the lease the entity was
//!   activated under. A write refused as fenced (another node took the
//!   shard over: this node was paused, cut off, or its clock was wrong)
//!   ends the activation, marks the shard lost in the keeper, and is
//!   counted ([`HostStats::fenced`]); nothing of that activation is
//!   committed again.
//! - **Passivation.** An entity with no message for
//!   [`HostConfig::idle`] (and no invocation in flight) is stopped at the
//!   next [`EntityHost::tick`]: nothing of it stays in memory. The next
//!   message reactivates it from its stored snapshot, through the
//!   machine's [`Sanitizer`](turno_chart::persist::Sanitizer).
//! - **Durable timers.** The stored wake-up is the earliest deadline of the
//!   chart's delayed events, in wall-clock ms (the store's clock). The
//!   host's tick asks the store for the due entities of its shards and
//!   activates them; the restore fires what is overdue, once, in deadline
//!   order. So a timer due while its entity was passivated, or while its
//!   shard's previous owner was down, fires on the current owner.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use turno::DetSystem;
//! use turno_chart::{load_json, stdlib, Event};
//! use turno_entity::{Ack, EntityHost, HostConfig, Reply, Routed};
//! use turno_store::{ManualClock, Store};
//!
//! let machine = Arc::new(load_json::<serde_json::Value>(
//!     r#"{"id": "door", "initial": "closed", "context": {"opened": 0}, "states": {
//!         "closed": {"on": {"OPEN": {"target": "open",
//!                                    "actions": [{"type": "inc", "params": {"key": "opened"}}]}}},
//!         "open": {"after": {"1000": "closed"}}}}"#,
//!     &stdlib::implementations(),
//! ).unwrap());
//! let clock = ManualClock::new(1_767_225_600_000);
//! let store = Store::memory().with_clock(clock.clone());
//! let config = HostConfig { shards: 4, ..HostConfig::default() };
//! let mut host = EntityHost::new(DetSystem::new(1), store.clone(), "node-a/1", machine, config);
//! host.tick().unwrap(); // takes the shards
//!
//! let acks = Arc::new(Mutex::new(Vec::new()));
//! let a = acks.clone();
//! let reply = Reply::new(move |ack| a.lock().unwrap().push(ack));
//! assert_eq!(host.deliver("door-1", 1, Event::new("OPEN"), reply).unwrap(), Routed::Delivered);
//! host.system_mut().run_until_idle().unwrap();
//! assert_eq!(*acks.lock().unwrap(), [Ack::Applied]);
//!
//! let stored = store.get_entity("door", "door-1").unwrap().unwrap();
//! assert_eq!(stored.applied, 1);
//! assert_eq!(stored.wake_at, Some(1_767_225_601_000)); // the `after` timer
//! ```

mod activation;
#[cfg(feature = "cluster")]
pub mod cluster;
mod host;

pub use activation::{Ack, CommitRecord, Delivery, EntityExt, Reply};
pub use host::{EntityError, EntityHost, HostConfig, HostStats, HostTick, Routed};
