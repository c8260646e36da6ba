//! The idempotent submit (turno-chart's `submit`) as an entity, charging
//! through the fake payment gateway (turno-gateway): its owner dies, or
//! pauses past its lease, while the gateway holds the reply of a charge it
//! took; the next owner restores the session through the submit's
//! sanitizer (an interrupted charge is asked about, never repeated) and it
//! ends completed with exactly one charge in the ledger.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{recorder, T0};
use serde_json::Value;
use turno::{DetSystem, Props, System};
use turno_chart::interpreter::Service;
use turno_chart::submit::{self, Submit, CHARGE, LOOKUP};
use turno_chart::Event;
use turno_entity::{Ack, EntityExt, EntityHost, HostConfig, Routed};
use turno_gateway::{Fault, Faults, GatewayActor, GatewayMsg, Ledger};
use turno_store::{ManualClock, Store};

type Host = EntityHost<DetSystem, Value>;

fn config() -> HostConfig {
    HostConfig {
        shards: 4,
        lease_ttl: Duration::from_millis(1_000),
        idle: Duration::from_secs(60),
        due_batch: 16,
    }
}

/// A node: its system, a gateway client actor over the shared ledger (the
/// gateway is one service with one database), and the submit's host.
fn node(store: &Store, ledger: &Ledger, owner: &str, faults: Faults) -> Host {
    let sys = DetSystem::new(3);
    let ledger = ledger.clone();
    let gw = sys
        .spawn(Props::new(), move || {
            GatewayActor::new(ledger.clone(), faults.clone())
        })
        .unwrap();
    let mut services: HashMap<String, Service<Value, EntityExt>> = HashMap::new();
    services.insert(
        CHARGE.into(),
        Service::ask(
            gw.clone(),
            Duration::from_millis(1_000),
            GatewayMsg::charge_from_input,
        ),
    );
    services.insert(
        LOOKUP.into(),
        Service::ask(
            gw,
            Duration::from_millis(500),
            GatewayMsg::lookup_from_input,
        ),
    );
    let n = Arc::new(AtomicU64::new(0));
    let keys: submit::KeySource =
        Arc::new(move || format!("pay-{}", n.fetch_add(1, Ordering::Relaxed)));
    let machine = Arc::new(Submit::new(42, keys).machine().unwrap());
    EntityHost::new(sys, store.clone(), owner, machine, config())
        .with_sanitizer(submit::sanitizer("submit"))
        .with_services(Arc::new(services))
}

fn deliver(host: &mut Host, seq: u64, event: &str) -> Ack {
    let (reply, acks) = recorder();
    let routed = host
        .deliver("session-1", seq, Event::new(event), reply)
        .unwrap();
    assert_eq!(routed, Routed::Delivered);
    host.system_mut().run_until_idle().unwrap();
    let acks = acks.lock().unwrap();
    acks[0].clone()
}

fn stored(store: &Store) -> Value {
    let e = store.get_entity("submit", "session-1").unwrap().unwrap();
    serde_json::from_slice(&e.data).unwrap()
}

fn completed(doc: &Value) -> bool {
    doc["status"] == "done"
        && doc["configuration"]
            .as_array()
            .is_some_and(|c| c.iter().any(|s| s == "submit.completed"))
}

/// The first owner confirms; the gateway takes the charge and holds its
/// reply. Returns the store, the ledger, the clock and that owner.
fn charged_and_held(reply: Fault) -> (Store, Ledger, Arc<ManualClock>, Host) {
    let clock = ManualClock::new(T0);
    let store = Store::memory().with_clock(clock.clone());
    let ledger = Ledger::open(Store::memory()).unwrap();
    let mut a = node(&store, &ledger, "a/1", Faults::script(vec![reply]));
    a.tick().unwrap();
    // The CONFIRM is committed (sending, the charge in flight) before the
    // charge starts: acknowledged.
    assert_eq!(deliver(&mut a, 1, "CONFIRM"), Ack::Applied);
    assert_eq!(
        ledger.charges().unwrap().len(),
        1,
        "the gateway took the charge"
    );
    assert!(!completed(&stored(&store)));
    (store, ledger, clock, a)
}

#[test]
fn an_owner_killed_while_the_gateway_holds_a_charged_reply_ends_with_one_charge() {
    let (store, ledger, clock, a) = charged_and_held(Fault::LostReply);
    drop(a); // killed
    clock.advance(Duration::from_millis(2_000));
    let mut b = node(&store, &ledger, "b/1", Faults::none());
    assert_eq!(b.tick().unwrap().acquired.len(), 4);
    // The session's next message (the page polling) activates it on b:
    // restored in `uncertain`, it looks the charge up by its key.
    assert_eq!(deliver(&mut b, 2, "STATUS"), Ack::Applied);
    let doc = stored(&store);
    assert!(completed(&doc), "{doc:#}");
    let charges = ledger.charges().unwrap();
    assert_eq!(charges.len(), 1, "{charges:?}");
    assert_eq!(doc["context"]["key"], charges[0]["key"]);
    assert_eq!(doc["context"]["receipt"]["key"], charges[0]["key"]);
}

#[test]
fn an_owner_paused_while_the_gateway_holds_a_charged_reply_is_fenced_and_one_charge_stays() {
    let (store, ledger, clock, mut a) =
        charged_and_held(Fault::TimeoutAfterExecuting(Duration::from_millis(900)));
    // a pauses past its lease; b takes over and completes the session.
    clock.advance(Duration::from_millis(1_500));
    let mut b = node(&store, &ledger, "b/1", Faults::none());
    b.tick().unwrap();
    assert_eq!(deliver(&mut b, 2, "STATUS"), Ack::Applied);
    let done = store.get_entity("submit", "session-1").unwrap().unwrap();
    assert!(completed(&serde_json::from_slice(&done.data).unwrap()));
    // a wakes: the charge's late answer (or its timeout) is a macrostep
    // whose write is refused.
    a.system_mut()
        .advance(Duration::from_millis(1_500))
        .unwrap();
    assert_eq!(a.stats().fenced, 1);
    assert_eq!(
        store.get_entity("submit", "session-1").unwrap().unwrap(),
        done
    );
    assert_eq!(ledger.charges().unwrap().len(), 1);
}
