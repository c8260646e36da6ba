//! The typed builder against the JSON loader: the same machines, built both
//! ways, behave the same on the corpus's events, and match what XState
//! recorded for them (`tests/corpus/<case>/expected.jsonl`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use turno::{Actor, Context, DetSystem, Props, ReplyTo, System};
use turno_chart::builder::{Chart, EventType};
use turno_chart::interpreter::{ChartActor, ChartMsg, Service};
use turno_chart::{
    advance, initial_transition, load_json, stdlib, transition, Event, Implementations, Machine,
    Problem,
};

/// `turno chart run`'s lines (step, value, status) for any context type.
fn lines<C: Clone>(m: &Machine<C>, items: &Value) -> Vec<Value> {
    let (mut s, _) = initial_transition(m).unwrap();
    let line = |i: usize, s: &turno_chart::Snapshot<C>| json!({"step": i, "value": s.value(m).to_json(), "status": s.status.as_str()});
    let mut out = vec![line(0, &s)];
    for (i, item) in items.as_array().unwrap().iter().enumerate() {
        s = match item.get("advance_ms").and_then(Value::as_u64) {
            Some(ms) => advance(m, &s, ms).unwrap().0,
            None => {
                transition(m, &s, Event::from_json(item).unwrap())
                    .unwrap()
                    .0
            }
        };
        out.push(line(i + 1, &s));
    }
    out
}

fn case(name: &str) -> (Machine<Value>, Value, Vec<Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let m = load_json::<Value>(&read("machine.json"), &stdlib::implementations()).unwrap();
    let events: Value = serde_json::from_str(&read("events.json")).unwrap();
    // The recording's step, value and status: what these machines are
    // built to reproduce (the context, emitted events, log and children it
    // also holds are the differential test's).
    let expected = read("expected.jsonl")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            serde_json::json!({"step": v["step"], "value": v["value"], "status": v["status"]})
        })
        .collect();
    (m, events, expected)
}

fn same_as_json_and_xstate<C: Clone>(built: &Machine<C>, name: &str) {
    let (json_machine, events, expected) = case(name);
    let from_builder = lines(built, &events);
    assert_eq!(
        from_builder,
        lines(&json_machine, &events),
        "{name}: builder vs JSON"
    );
    assert_eq!(
        from_builder, expected,
        "{name}: builder vs XState's recording"
    );
}

#[derive(Serialize, Deserialize)]
struct Bid {
    amount: Option<f64>,
}
impl EventType for Bid {
    const NAME: &'static str = "BID";
}

#[derive(Serialize, Deserialize)]
struct Reset;
impl EventType for Reset {
    const NAME: &'static str = "RESET";
}

#[test]
fn guard_event_payload_with_a_typed_event() {
    let m = Chart::new("(machine)")
        .initial("idle")
        .state("idle", |s| {
            s.on::<Bid>(|t| {
                t.target("high")
                    .guard(|_: &(), b| b.amount.is_some_and(|a| a > 100.0))
            })
            .on::<Bid>(|t| t.target("low"))
        })
        .state("high", |s| s.on::<Reset>(|t| t.target("idle")))
        .state("low", |s| s.on::<Reset>(|t| t.target("idle")))
        .build(())
        .unwrap();
    same_as_json_and_xstate(&m, "guard_event_payload");
}

macro_rules! unit_events {
    ($($ty:ident = $name:literal),* $(,)?) => {$(
        #[derive(Serialize, Deserialize)]
        struct $ty;
        impl EventType for $ty {
            const NAME: &'static str = $name;
        }
    )*};
}

unit_events!(
    Play = "PLAY",
    Fast = "FAST",
    Off = "OFF",
    On = "ON",
    Inc = "INC",
    A = "A"
);

#[test]
fn shallow_history() {
    let m = Chart::new("(machine)")
        .initial("player")
        .state("player", |s| {
            s.initial("stopped")
                .on::<Off>(|t| t.target("off"))
                .state("stopped", |s| s.on::<Play>(|t| t.target("playing")))
                .state("playing", |s| {
                    s.initial("normal")
                        .state("normal", |s| s.on::<Fast>(|t| t.target("fast")))
                        .state("fast", |s| s)
                })
                .history("hist", false, &[])
        })
        .state("off", |s| s.on::<On>(|t| t.target("player.hist")))
        .build(())
        .unwrap();
    same_as_json_and_xstate(&m, "history_shallow");
}

#[derive(Clone, Default)]
struct Counter {
    n: u32,
}

#[test]
fn always_guarded_by_a_typed_context() {
    let m = Chart::new("(machine)")
        .initial("counting")
        .state("counting", |s| {
            s.on::<Inc>(|t| t.assign(|c: &mut Counter, _| c.n += 1))
                .always(|t| t.target("full").guard(|c, _| c.n >= 3))
        })
        .state("full", |s| s)
        .build(Counter::default())
        .unwrap();
    same_as_json_and_xstate(&m, "always_guarded_by_context");
}

#[test]
fn after_in_parallel_regions() {
    let m = Chart::new("(machine)")
        .parallel()
        .state("fast", |s| {
            s.initial("a")
                .state("a", |s| s.after(10, |t| t.target("b")))
                .state("b", |s| s)
        })
        .state("slow", |s| {
            s.initial("a")
                .state("a", |s| s.after(30, |t| t.target("b")))
                .state("b", |s| s)
        })
        .build(())
        .unwrap();
    same_as_json_and_xstate(&m, "after_in_parallel_regions");
}

#[test]
fn history_target_under_a_parallel_root() {
    let m = Chart::new("s0")
        .parallel()
        .final_state_with("k1", |s| s.id("s1"))
        .state("k2", |s| {
            s.id("s2")
                .parallel()
                .history("k3", false, &[])
                .state("k4", |s| {
                    s.parallel()
                        .id("s4")
                        .on::<A>(|t| t.target("#s2.k3").assign(|c: &mut Counter, _| c.n += 1))
                        .after(10, |t| t.target("#s0"))
                        .final_state("k5")
                })
        })
        .state("k6", |s| s.id("s6"))
        .build(Counter::default())
        .unwrap();
    same_as_json_and_xstate(&m, "history_target_under_parallel_root");
}

#[test]
fn an_event_whose_payload_does_not_decode_takes_no_typed_transition() {
    let m = Chart::new("m")
        .initial("idle")
        .state("idle", |s| s.on::<Bid>(|t| t.target("bidding")))
        .state("bidding", |s| s)
        .build(())
        .unwrap();
    let (s, _) = initial_transition(&m).unwrap();
    let bad = Event::with_data("BID", json!({"amount": "lots"}));
    let (s, _) = transition(&m, &s, bad).unwrap();
    assert_eq!(s.value(&m).to_json(), "idle");
    let good = Bid { amount: Some(3.0) }.event().unwrap();
    assert_eq!(good.get("amount"), Some(&json!(3.0)));
    let (s, _) = transition(&m, &s, good).unwrap();
    assert_eq!(s.value(&m).to_json(), "bidding");
}

#[test]
fn a_bad_target_names_its_path() {
    let err = Chart::new("m")
        .initial("a")
        .state("a", |s| s.on::<Play>(|t| t.target("nowhere")))
        .build(())
        .err()
        .expect("a bad target is an error");
    assert!(err.path.starts_with("$.states.a.on.PLAY[0]"), "{err}");
    assert!(matches!(err.problem, Problem::BadTarget { .. }), "{err}");
}

#[test]
fn named_implementations_come_from_setup() {
    let imp = Implementations::<Counter>::new()
        .guard("small", |c, _, p| {
            u64::from(c.n) < p["below"].as_u64().unwrap_or(0)
        })
        .assign("bump", |c, _, _| c.n += 1);
    let m = Chart::with_implementations("m", imp.clone())
        .initial("a")
        .state("a", |s| {
            s.on::<Inc>(|t| {
                t.guard_named("small", json!({"below": 2}))
                    .action_named("bump", Value::Null)
            })
        })
        .build(Counter::default())
        .unwrap();
    let (mut s, _) = initial_transition(&m).unwrap();
    for _ in 0..5 {
        s = transition(&m, &s, Inc.event().unwrap()).unwrap().0;
    }
    assert_eq!(s.context.n, 2);
    let err = Chart::with_implementations("m", imp)
        .initial("a")
        .state("a", |s| s.on::<Inc>(|t| t.guard_named("big", Value::Null)))
        .build(Counter::default())
        .err()
        .expect("an unknown guard is an error");
    assert_eq!(err.path, "$.states.a.on.INC[0].guard");
    assert!(
        matches!(&err.problem, Problem::UnknownImplementation { kind: "guard", name } if name == "big"),
        "{err}"
    );
}

/// An order: typed context and events, an invocation of a turno actor, a
/// named delay, `emit` and `log`, run by the interpreter on DetSystem.
#[derive(Clone, Debug, Default, PartialEq)]
struct Order {
    items: Vec<String>,
    receipt: Option<Value>,
    log: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct AddItem {
    sku: String,
}
impl EventType for AddItem {
    const NAME: &'static str = "ADD_ITEM";
}

#[derive(Serialize, Deserialize)]
struct Checkout;
impl EventType for Checkout {
    const NAME: &'static str = "CHECKOUT";
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Paid {
    items: usize,
}
impl EventType for Paid {
    const NAME: &'static str = "PAID";
}

/// Charges after 5 ms, echoing the items it was given.
struct Payments;

enum PayMsg {
    Charge(Value, ReplyTo<Result<Value, Value>>),
    Done(Value, ReplyTo<Result<Value, Value>>),
}

impl Actor for Payments {
    type Msg = PayMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: PayMsg) {
        match msg {
            PayMsg::Charge(input, reply) => {
                ctx.send_after(Duration::from_millis(5), PayMsg::Done(input, reply));
            }
            PayMsg::Done(input, reply) => {
                reply.reply(Ok(json!({"charged": input})));
            }
        }
    }
}

fn order_machine() -> Arc<Machine<Order>> {
    let imp = Implementations::<Order>::new()
        .actor("charge")
        .delay("patience", |c: &Order, _, _| 10 * c.items.len() as u64);
    let m = Chart::with_implementations("order", imp)
        .initial("shopping")
        .state("shopping", |s| {
            s.on::<AddItem>(|t| t.assign(|c: &mut Order, e| c.items.push(e.sku.clone())))
                .on::<Checkout>(|t| t.target("paying").guard(|c, _| !c.items.is_empty()))
        })
        .state("paying", |s| {
            s.invoke("charge", |i| {
                i.id("pay").input(|c| json!(c.items)).on_done(|t| {
                    t.target("paid")
                        .assign(|c, e| c.receipt = e.get("output").cloned())
                        .emit(Paid { items: 0 })
                })
            })
            .after_named("patience", |t| t.target("shopping"))
        })
        .final_state_with("paid", |s| {
            s.entry(|scope| {
                let n = scope.context().items.len();
                scope.context_mut().log.push(format!("paid for {n}"));
            })
        })
        .build(Order::default())
        .unwrap();
    Arc::new(m)
}

#[test]
fn a_typed_machine_runs_as_an_actor_with_an_invocation() {
    let m = order_machine();
    let mut sys = DetSystem::new(3);
    let payments = sys.spawn(Props::new(), || Payments).unwrap();
    let mut services = HashMap::new();
    services.insert(
        "charge".to_string(),
        Service::ask(payments, Duration::from_millis(1000), PayMsg::Charge),
    );
    let services = Arc::new(services);
    let values = Arc::new(Mutex::new(Vec::new()));
    let emitted = Arc::new(Mutex::new(Vec::new()));
    let (v, e) = (values.clone(), emitted.clone());
    let chart = sys
        .spawn(Props::new(), move || {
            let (v, e) = (v.clone(), e.clone());
            ChartActor::new(m.clone())
                .with_services(services.clone())
                .on_snapshot(move |value, _| v.lock().unwrap().push(value.to_string()))
                .on_emit(move |ev| e.lock().unwrap().push(ev.clone()))
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let send = |e: Event| {
        let _ = chart.try_send(ChartMsg::Event(e));
    };
    send(Checkout.event().unwrap()); // no items: the guard refuses
    send(AddItem { sku: "tea".into() }.event().unwrap());
    send(Checkout.event().unwrap());
    sys.advance(Duration::from_millis(20)).unwrap();
    assert_eq!(
        *values.lock().unwrap(),
        [
            r#""shopping""#,
            r#""shopping""#,
            r#""shopping""#,
            r#""paying""#,
            r#""paid""#
        ]
    );
    let emitted = emitted.lock().unwrap();
    assert_eq!(emitted.len(), 1);
    assert_eq!(Paid::from_event(&emitted[0]), Some(Paid { items: 0 }));
}

#[test]
fn a_named_delay_leaves_the_state_before_a_slow_invocation_settles() {
    let m = order_machine();
    let (s, _) = initial_transition(&m).unwrap();
    let (s, _) = transition(&m, &s, AddItem { sku: "tea".into() }.event().unwrap()).unwrap();
    let (s, actions) = transition(&m, &s, Checkout.event().unwrap()).unwrap();
    assert_eq!(s.value(&m).to_json(), "paying");
    let started = actions
        .iter()
        .find_map(|a| match a {
            turno_chart::Action::StartInvoke { id, src, input, .. } => {
                Some((id.clone(), src.clone(), input.clone()))
            }
            _ => None,
        })
        .expect("paying starts the charge");
    assert_eq!(started, ("pay".into(), "charge".into(), json!(["tea"])));
    // One item: patience is 10 ms.
    let (s, _) = advance(&m, &s, 9).unwrap();
    assert_eq!(s.value(&m).to_json(), "paying");
    let (s, _) = advance(&m, &s, 1).unwrap();
    assert_eq!(s.value(&m).to_json(), "shopping");
    assert_eq!(s.context.items, ["tea"]);
}

#[test]
fn an_unknown_delay_or_actor_names_its_path() {
    let err = Chart::<()>::new("m")
        .initial("a")
        .state("a", |s| s.after_named("forever", |t| t.target("a")))
        .build(())
        .err()
        .expect("an unknown delay is an error");
    assert_eq!(err.path, "$.states.a.after.forever");
    assert!(
        matches!(&err.problem, Problem::UnknownImplementation { kind: "delay", name } if name == "forever"),
        "{err}"
    );
    let err = Chart::<()>::new("m")
        .initial("a")
        .state("a", |s| s.state("b", |s| s.invoke("fetch", |i| i)))
        .build(())
        .err()
        .expect("an unknown actor is an error");
    assert_eq!(err.path, "$.states.a.states.b.invoke[0].src");
}
