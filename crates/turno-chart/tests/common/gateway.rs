//! The submit wired to the fake payment gateway (turno-gateway): a submit
//! machine with seeded keys and the two services asking the gateway actor.
//! Test support, not the library's API: `tests/*.rs` include it as
//! `common::gateway`, and `examples/idempotent_submit.rs` by path.
//!
//! The gateway itself (its ledger, its faults) is turno-gateway's, the same
//! one `turno demo` runs behind HTTP: the ledger is what tests count (money
//! actually taken), and it outlives a crash of the gateway's actor.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use turno::Addr;
use turno_chart::interpreter::Service;
use turno_chart::submit::{self, Submit, CHARGE, LOOKUP};
use turno_chart::Machine;
pub use turno_gateway::{Fault, Faults, GatewayActor, GatewayMsg, Ledger};
use turno_store::Store;

/// An empty ledger in memory.
pub fn memory_ledger() -> Ledger {
    Ledger::open(Store::memory()).expect("a memory store opens")
}

/// A submit of 42 whose keys are `key-<seed>-<n>`.
pub fn submit_machine(seed: u64) -> Arc<Machine<Value>> {
    keyed_submit(format!("key-{seed}"))
}

/// A submit of 42 whose keys are `<prefix>-<n>`.
pub fn keyed_submit(prefix: String) -> Arc<Machine<Value>> {
    let n = Arc::new(AtomicU64::new(0));
    let keys: submit::KeySource =
        Arc::new(move || format!("{prefix}-{}", n.fetch_add(1, Ordering::Relaxed)));
    Arc::new(Submit::new(42, keys).machine().unwrap())
}

/// `submit.charge` asking `gw`, failing after `timeout`.
pub fn charge_via(gw: &Addr<GatewayMsg>, timeout: Duration) -> Service<Value> {
    Service::ask(gw.clone(), timeout, GatewayMsg::charge_from_input)
}

/// `submit.charge` (1 s timeout) and `submit.lookup` (500 ms) asking `gw`.
pub fn services(gw: &Addr<GatewayMsg>) -> Arc<HashMap<String, Service<Value>>> {
    services_with(charge_via(gw, Duration::from_millis(1000)), gw)
}

/// `charge` as `submit.charge`, and `submit.lookup` (500 ms) asking `gw`.
pub fn services_with(
    charge: Service<Value>,
    gw: &Addr<GatewayMsg>,
) -> Arc<HashMap<String, Service<Value>>> {
    let mut s = HashMap::new();
    s.insert(CHARGE.to_string(), charge);
    s.insert(
        LOOKUP.to_string(),
        Service::ask(
            gw.clone(),
            Duration::from_millis(500),
            GatewayMsg::lookup_from_input,
        ),
    );
    Arc::new(s)
}
