//! What the entity tests share: a chart that records every message and
//! every timer it takes, and helpers to drive hosts on DetSystems.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use turno::DetSystem;
use turno_chart::{load_json, stdlib, ActionScope, Event, Machine};
use turno_entity::{Ack, EntityHost, HostConfig, Reply, Routed};
use turno_store::Store;

/// 2026-01-01T00:00:00Z, the virtual wall clock's start.
pub const T0: i64 = 1_767_225_600_000;
/// The delay of the timer an `ARM` message sets.
pub const TIMER_MS: u64 = 400;

/// The log chart: `MSG` and `ARM` append their `seq` to `context.seqs`;
/// `ARM` also sets a timer of [`TIMER_MS`] that raises `FIRE` with the
/// same tag; `FIRE` moves its tag from `armed` to `fired`, or counts a
/// `spurious` fire when the tag is not armed (a timer fired twice).
pub fn log_machine() -> Arc<Machine<Value>> {
    let imp = stdlib::implementations()
        .action("record", |scope: &mut ActionScope<'_, Value>| {
            let seq = scope.event().get("seq").cloned().unwrap_or(Value::Null);
            push(scope.context_mut(), "seqs", seq);
        })
        .action("arm", |scope: &mut ActionScope<'_, Value>| {
            let seq = scope.event().get("seq").cloned().unwrap_or(Value::Null);
            push(scope.context_mut(), "armed", seq.clone());
            let id = format!("t{seq}");
            scope.raise_after(
                Event::with_data("FIRE", json!({"tag": seq})),
                TIMER_MS,
                Some(id),
            );
        })
        .action("fire", |scope: &mut ActionScope<'_, Value>| {
            let tag = scope.event().get("tag").cloned().unwrap_or(Value::Null);
            let ctx = scope.context_mut();
            let armed = ctx["armed"].as_array_mut().expect("armed");
            match armed.iter().position(|t| *t == tag) {
                Some(i) => {
                    armed.remove(i);
                }
                None => {
                    let n = ctx["spurious"].as_u64().unwrap_or(0);
                    ctx["spurious"] = json!(n + 1);
                }
            }
            push(ctx, "fired", tag);
        });
    Arc::new(
        load_json::<Value>(
            r#"{"id": "log", "initial": "on",
                "context": {"seqs": [], "armed": [], "fired": [], "spurious": 0},
                "states": {"on": {"on": {
                    "MSG": {"actions": [{"type": "record"}]},
                    "ARM": {"actions": [{"type": "record"}, {"type": "arm"}]},
                    "FIRE": {"actions": [{"type": "fire"}]}}}}}"#,
            &imp,
        )
        .expect("the log chart loads"),
    )
}

fn push(ctx: &mut Value, key: &str, v: Value) {
    ctx[key].as_array_mut().expect("a list").push(v);
}

/// The event of message `seq`: `ARM` when `arm`, else `MSG`.
pub fn msg(seq: u64, arm: bool) -> Event {
    Event::with_data(if arm { "ARM" } else { "MSG" }, json!({"seq": seq}))
}

/// The context of the stored entity `key` of the log chart.
pub fn stored_context(store: &Store, key: &str) -> Option<Value> {
    let e = store.get_entity("log", key).expect("get_entity")?;
    let doc: Value = serde_json::from_slice(&e.data).expect("the stored snapshot is JSON");
    Some(doc["context"].clone())
}

/// The numbers of a context list.
pub fn list(ctx: &Value, key: &str) -> Vec<u64> {
    ctx[key]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// A reply that records its ack.
pub fn recorder() -> (Reply, Arc<Mutex<Vec<Ack>>>) {
    let acks = Arc::new(Mutex::new(Vec::new()));
    let a = acks.clone();
    (Reply::new(move |ack| a.lock().unwrap().push(ack)), acks)
}

pub type Host = EntityHost<DetSystem, Value>;

/// A host of the log chart on its own DetSystem.
pub fn host(store: &Store, owner: &str, config: HostConfig) -> Host {
    EntityHost::new(
        DetSystem::new(7),
        store.clone(),
        owner,
        log_machine(),
        config,
    )
}

/// Delivers one message and runs the host's system until idle; the ack.
pub fn send(host: &mut Host, key: &str, seq: u64, arm: bool) -> Result<Ack, Routed> {
    let (reply, acks) = recorder();
    match host
        .deliver(key, seq, msg(seq, arm), reply)
        .expect("deliver")
    {
        Routed::Delivered => {}
        other => return Err(other),
    }
    host.system_mut().run_until_idle().expect("idle");
    let acks = acks.lock().unwrap();
    assert_eq!(acks.len(), 1, "one ack per delivery: {acks:?}");
    Ok(acks[0].clone())
}

/// Lets `by` pass on the host's system and the clock given.
pub fn advance(host: &mut Host, clock: &turno_store::ManualClock, by: Duration) {
    clock.advance(by);
    host.system_mut().advance(by).expect("advance");
}
