//! The interpreter actor on the deterministic scheduler: timers, stale
//! invocation results over many seeds, subscribers, the trace.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use turno::trace::{ActorEvent, EventOrigin, RingSink};
use turno::{Actor, Context, DetSystem, Props, ReplyTo, System};
use turno_chart::interpreter::{ChartActor, ChartMsg, ChartStats, Reporter, Service};
use turno_chart::{load_json, stdlib, Event, Machine, Status};

fn machine(json: &str) -> Arc<Machine<Value>> {
    let imp = stdlib::implementations().actor("slow").actor("child");
    Arc::new(load_json(json, &imp).unwrap())
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Replies to each request after a fixed delay.
struct Worker {
    delay: Duration,
}

enum WorkerMsg {
    Work(Value, ReplyTo<Result<Value, Value>>),
    Reply(Value, ReplyTo<Result<Value, Value>>),
}

impl Actor for Worker {
    type Msg = WorkerMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: WorkerMsg) {
        match msg {
            WorkerMsg::Work(input, reply) => {
                ctx.send_after(self.delay, WorkerMsg::Reply(input, reply));
            }
            WorkerMsg::Reply(input, reply) => {
                reply.reply(Ok(json!({"echo": input})));
            }
        }
    }
}

type Values = Arc<Mutex<Vec<(String, Status)>>>;

fn recorder() -> (Values, impl FnMut(&Value, Status) + Send + Clone + 'static) {
    let seen: Values = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, move |v: &Value, st| {
        s.lock().unwrap().push((v.to_string(), st))
    })
}

const LOADING: &str = r#"{"initial": "loading", "states": {
  "loading": {"invoke": {"id": "job", "src": "slow", "input": 1, "onDone": "loaded"},
              "on": {"CANCEL": "idle"}},
  "loaded": {},
  "idle": {"on": {"RETRY": "loading"}}}}"#;

#[test]
fn after_runs_on_turno_timers_and_is_cancelled_on_exit() {
    let m = machine(
        r#"{"initial": "a", "states": {
        "a": {"after": {"100": "timeout"}, "on": {"LEAVE": "b"}},
        "b": {"on": {"BACK": "a"}}, "timeout": {}}}"#,
    );
    let (seen, rec) = recorder();
    let stats = Arc::new(ChartStats::default());
    let st = stats.clone();
    let mut sys = DetSystem::new(3);
    let chart = sys
        .spawn(Props::new(), move || {
            ChartActor::new(m.clone())
                .on_snapshot(rec.clone())
                .with_stats(st.clone())
        })
        .unwrap();
    sys.advance(ms(50)).unwrap();
    let _ = chart.try_send(ChartMsg::Event(Event::new("LEAVE")));
    sys.advance(ms(100)).unwrap(); // the cancelled timer never fires
    let _ = chart.try_send(ChartMsg::Event(Event::new("BACK")));
    sys.advance(ms(99)).unwrap();
    assert_eq!(seen.lock().unwrap().last().unwrap().0, r#""a""#);
    sys.advance(ms(1)).unwrap();
    let values: Vec<String> = seen.lock().unwrap().iter().map(|v| v.0.clone()).collect();
    assert_eq!(values, [r#""a""#, r#""b""#, r#""a""#, r#""timeout""#]);
    assert_eq!(stats.macrosteps(), 4);
    assert_eq!(sys.next_deadline(), None, "no timer left armed");
}

#[test]
fn invoke_ask_delivers_the_result_of_that_invocation() {
    let m = machine(LOADING);
    let mut sys = DetSystem::new(1);
    let worker = sys
        .spawn(Props::new(), || Worker { delay: ms(10) })
        .unwrap();
    let mut services = HashMap::new();
    services.insert(
        "slow".to_string(),
        Service::ask(worker, ms(1000), WorkerMsg::Work),
    );
    let services = Arc::new(services);
    let (seen, rec) = recorder();
    sys.spawn(Props::new(), move || {
        ChartActor::new(m.clone())
            .with_services(services.clone())
            .on_snapshot(rec.clone())
    })
    .unwrap();
    sys.advance(ms(20)).unwrap();
    let values: Vec<String> = seen.lock().unwrap().iter().map(|v| v.0.clone()).collect();
    assert_eq!(values, [r#""loading""#, r#""loaded""#]);
}

/// The seed's stale reply, solved by the graph: the state is left before
/// the delegated work replies; over many seeds and timings the late reply
/// is never delivered, and it is counted.
#[test]
fn a_stale_invoke_result_is_never_delivered_over_many_seeds() {
    let m = machine(LOADING);
    let mut delivered = 0;
    let mut cancelled = 0;
    for seed in 0..300u64 {
        let mut rng = fastrand_like(seed);
        let reply_after = 1 + rng() % 60;
        let cancel_at = 1 + rng() % 60;
        let ring = RingSink::new(100_000);
        let mut sys = DetSystem::builder().seed(seed).trace(ring.clone()).build();
        let worker = sys
            .spawn(Props::new(), move || Worker {
                delay: ms(reply_after),
            })
            .unwrap();
        let mut services = HashMap::new();
        services.insert(
            "slow".to_string(),
            Service::ask(worker, ms(1000), WorkerMsg::Work),
        );
        let services = Arc::new(services);
        let (seen, rec) = recorder();
        let stats = Arc::new(ChartStats::default());
        let (mm, st) = (m.clone(), stats.clone());
        let chart = sys
            .spawn(Props::new(), move || {
                ChartActor::new(mm.clone())
                    .with_services(services.clone())
                    .on_snapshot(rec.clone())
                    .with_stats(st.clone())
            })
            .unwrap();
        sys.advance(ms(cancel_at)).unwrap();
        let _ = chart.try_send(ChartMsg::Event(Event::new("CANCEL")));
        sys.advance(ms(200)).unwrap();
        let mut values: Vec<String> = seen.lock().unwrap().iter().map(|v| v.0.clone()).collect();
        // Subscribers see every macrostep; the CANCEL after "loaded" changes nothing.
        values.dedup();
        let stale_replies = ring
            .events()
            .iter()
            .filter(|e| matches!(e.kind, ActorEvent::StaleReply { .. }))
            .count();
        if values.last().unwrap() == r#""loaded""# {
            // The reply won the race: it came while loading.
            assert!(
                reply_after <= cancel_at,
                "seed {seed}: loaded after leaving"
            );
            assert_eq!(values, [r#""loading""#, r#""loaded""#], "seed {seed}");
            assert_eq!(stale_replies, 0, "seed {seed}");
            delivered += 1;
        } else {
            // The state was left first: the result is dropped and counted,
            // the chart never shows "loaded".
            assert!(
                reply_after >= cancel_at,
                "seed {seed}: a fresh reply was lost"
            );
            assert_eq!(values, [r#""loading""#, r#""idle""#], "seed {seed}");
            assert!(!values.iter().any(|v| v == r#""loaded""#));
            assert_eq!(
                stale_replies + stats.stale_results() as usize,
                1,
                "seed {seed}: counted once"
            );
            cancelled += 1;
        }
    }
    assert!(
        delivered > 50 && cancelled > 50,
        "both outcomes exercised: {delivered} / {cancelled}"
    );
}

/// A child actor reports while its state is being left; the seed decides
/// the interleaving. A report that arrives after the exit is stale:
/// counted by the chart, never delivered.
#[test]
fn a_child_report_racing_the_exit_is_stale_when_it_loses() {
    let m = machine(
        r#"{"initial": "waiting", "states": {
        "waiting": {"invoke": {"id": "kid", "src": "child", "onDone": "reported"},
                    "on": {"CANCEL": "gave_up"}},
        "reported": {}, "gave_up": {}}}"#,
    );
    struct Kid(Reporter);
    impl Actor for Kid {
        type Msg = ();
        fn handle(&mut self, _ctx: &mut Context<'_, Self>, _: ()) {
            let _ = self.0.done(Ok(json!("hi")));
        }
    }
    let mut outcomes = [0u32; 3]; // reported, stale, stopped before reporting
    for seed in 0..300u64 {
        let kid_addr: Arc<Mutex<Option<turno::Addr<()>>>> = Arc::new(Mutex::new(None));
        let ka = kid_addr.clone();
        let mut services = HashMap::new();
        services.insert(
            "child".to_string(),
            Service::child(move |ctx, _started, reporter| {
                let kid = ctx
                    .spawn(Props::new(), move || Kid(reporter.clone()))
                    .ok()?;
                *ka.lock().unwrap() = Some(kid.clone());
                Some((kid.id(), None))
            }),
        );
        let services = Arc::new(services);
        let (seen, rec) = recorder();
        let stats = Arc::new(ChartStats::default());
        let (mm, st) = (m.clone(), stats.clone());
        let mut sys = DetSystem::new(seed);
        let chart = sys
            .spawn(Props::new(), move || {
                ChartActor::new(mm.clone())
                    .with_services(services.clone())
                    .on_snapshot(rec.clone())
                    .with_stats(st.clone())
            })
            .unwrap();
        sys.run_until_idle().unwrap();
        let kid = kid_addr
            .lock()
            .unwrap()
            .clone()
            .expect("the kid was spawned");
        let _ = kid.try_send(());
        for _ in 0..(seed % 3) {
            sys.step();
        }
        let _ = chart.try_send(ChartMsg::Event(Event::new("CANCEL")));
        sys.run_until_idle().unwrap();
        let mut values: Vec<String> = seen.lock().unwrap().iter().map(|v| v.0.clone()).collect();
        values.dedup();
        match values.last().unwrap().as_str() {
            r#""reported""# => {
                assert_eq!(values, [r#""waiting""#, r#""reported""#], "seed {seed}");
                assert_eq!(stats.stale_results(), 0, "seed {seed}");
                outcomes[0] += 1;
            }
            r#""gave_up""# => {
                assert_eq!(values, [r#""waiting""#, r#""gave_up""#], "seed {seed}");
                outcomes[1 + (stats.stale_results() == 0) as usize] += 1;
                assert!(stats.stale_results() <= 1, "seed {seed}");
            }
            other => panic!("seed {seed}: {other}"),
        }
    }
    assert!(
        outcomes.iter().all(|&n| n > 0),
        "every interleaving happens: {outcomes:?}"
    );
}

#[test]
fn emit_subscribers_log_and_the_trace() {
    let m = machine(
        r#"{"id": "t", "initial": "a", "states": {
        "a": {"on": {"GO": {"target": "b", "actions": [
            {"type": "emit", "params": {"event": {"type": "WENT", "to": "b"}}},
            {"type": "log", "params": {"message": "going"}},
            {"type": "raise", "params": {"event": {"type": "NEXT"}}}]}}},
        "b": {"on": {"NEXT": "c"}}, "c": {"always": "d"}, "d": {}}}"#,
    );
    let emitted = Arc::new(Mutex::new(Vec::new()));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let ring = RingSink::new(10_000);
    let mut sys = DetSystem::builder().seed(5).trace(ring.clone()).build();
    let (e, l) = (emitted.clone(), logs.clone());
    let chart = sys
        .spawn(Props::new().name("chart"), move || {
            let (e, l) = (e.clone(), l.clone());
            ChartActor::new(m.clone())
                .on_emit(move |ev| e.lock().unwrap().push(ev.to_json()))
                .on_log(move |s| l.lock().unwrap().push(s.to_string()))
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = chart.try_send(ChartMsg::Event(Event::new("GO")));
    sys.run_until_idle().unwrap();
    assert_eq!(
        *emitted.lock().unwrap(),
        [json!({"type": "WENT", "to": "b"})]
    );
    assert_eq!(*logs.lock().unwrap(), ["going"]);
    let steps: Vec<String> = ring
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            ActorEvent::ChartDefine {
                machine, states, ..
            } => Some(format!("define {machine} {}", states.len())),
            ActorEvent::ChartEvent { event, origin, .. } => {
                let origin = match origin {
                    EventOrigin::External => "external",
                    EventOrigin::Internal => "internal",
                };
                Some(format!("event {event} {origin}"))
            }
            ActorEvent::ChartExit { state, .. } => Some(format!("exit {state}")),
            ActorEvent::ChartEnter { state, .. } => Some(format!("enter {state}")),
            ActorEvent::ChartTransition {
                source,
                event,
                targets,
                ..
            } => Some(format!("transition {source} {event:?} {targets:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        [
            "define t 4",
            "event xstate.init external",
            "enter t",
            "enter t.a",
            "event GO external",
            "exit t.a",
            "transition t.a Some(\"GO\") [\"t.b\"]",
            "enter t.b",
            "event NEXT internal",
            "exit t.b",
            "transition t.b Some(\"NEXT\") [\"t.c\"]",
            "enter t.c",
            "exit t.c",
            "transition t.c None [\"t.d\"]",
            "enter t.d",
        ]
    );
}

#[test]
fn a_done_chart_stops_its_actor_and_reports() {
    let m = machine(
        r#"{"initial": "a", "output": {"ok": true}, "states": {"a": {"on": {"F": "f"}}, "f": {"type": "final"}}}"#,
    );
    let done = Arc::new(Mutex::new(None));
    let d = done.clone();
    let mut sys = DetSystem::new(2);
    let chart = sys
        .spawn(Props::new(), move || {
            let d = d.clone();
            ChartActor::new(m.clone())
                .on_done(move |st, out| *d.lock().unwrap() = Some((st, out.cloned())))
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = chart.try_send(ChartMsg::Event(Event::new("F")));
    sys.run_until_idle().unwrap();
    assert_eq!(
        *done.lock().unwrap(),
        Some((Status::Done, Some(json!({"ok": true}))))
    );
    assert!(!sys.is_alive(chart.id()));
}

/// A tiny deterministic generator (xorshift) so the test needs no extra crate.
fn fastrand_like(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// The send rules of XState in a chart actor: a `sendTo` from the entry
/// actions of the invoking state reaches the child service once it has
/// started, and a `sendParent` from a chart actor given no parent fails the
/// chart with XState's message (the actor stops, reporting it).
#[test]
fn a_chart_actor_keeps_xstates_send_rules() {
    let m = machine(
        r#"{"id": "m", "initial": "idle", "states": {
        "idle": {"on": {"GO": "talking"}},
        "talking": {"entry": {"type": "sendTo", "params": {"to": "kid", "event": {"type": "HELLO"}}},
                    "invoke": {"id": "kid", "src": "child"},
                    "on": {"TELL": {"actions": {"type": "sendParent", "params": {"event": {"type": "NEWS"}}}}}}}}"#,
    );
    let heard: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    let mut services = HashMap::new();
    services.insert(
        "child".to_string(),
        Service::child(move |ctx, _started, _reporter| {
            struct Kid;
            impl Actor for Kid {
                type Msg = ();
                fn handle(&mut self, _ctx: &mut Context<'_, Self>, _: ()) {}
            }
            let kid = ctx.spawn(Props::new(), || Kid).ok()?;
            let h = h.clone();
            let sender: turno_chart::interpreter::Sender = Arc::new(move |e: Event| {
                h.lock().unwrap().push(e.name().to_string());
                true
            });
            Some((kid.id(), Some(sender)))
        }),
    );
    let services = Arc::new(services);
    let done = Arc::new(Mutex::new(None));
    let d = done.clone();
    let mut sys = DetSystem::new(4);
    let chart = sys
        .spawn(Props::new(), move || {
            let d = d.clone();
            ChartActor::new(m.clone())
                .with_services(services.clone())
                .on_done(move |st, out| *d.lock().unwrap() = Some((st, out.cloned())))
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = chart.try_send(ChartMsg::Event(Event::new("GO")));
    sys.run_until_idle().unwrap();
    assert_eq!(*heard.lock().unwrap(), ["HELLO"]);
    assert!(done.lock().unwrap().is_none());
    let _ = chart.try_send(ChartMsg::Event(Event::new("TELL")));
    sys.run_until_idle().unwrap();
    assert_eq!(
        *done.lock().unwrap(),
        Some((
            Status::Error,
            Some(json!(
                "Unable to send event to actor '#_parent' from machine 'm'."
            ))
        ))
    );
    assert!(!sys.is_alive(chart.id()));
}

/// A chart actor given a parent (`with_parent`) sends to it: no failure.
#[test]
fn a_chart_actor_with_a_parent_sends_to_it() {
    let m = machine(
        r#"{"id": "m", "initial": "a", "states": {"a": {
        "entry": {"type": "sendParent", "params": {"event": {"type": "READY"}}},
        "on": {"TELL": {"actions": {"type": "sendParent", "params": {"event": {"type": "NEWS"}}}}}}}}"#,
    );
    let heard: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    let parent: turno_chart::interpreter::Sender = Arc::new(move |e: Event| {
        h.lock().unwrap().push(e.name().to_string());
        true
    });
    let (seen, rec) = recorder();
    let mut sys = DetSystem::new(5);
    let chart = sys
        .spawn(Props::new(), move || {
            ChartActor::new(m.clone())
                .with_parent(parent.clone())
                .on_snapshot(rec.clone())
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = chart.try_send(ChartMsg::Event(Event::new("TELL")));
    sys.run_until_idle().unwrap();
    assert_eq!(*heard.lock().unwrap(), ["READY", "NEWS"]);
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|(_, st)| *st == Status::Active));
    assert!(sys.is_alive(chart.id()));
}

/// `spawnChild` starts a service as a child not tied to a state: the
/// service gets the child's id, its own generation and the input; a
/// `sendTo` reaches it after the state that spawned it is left; its result
/// comes back as `xstate.done.actor.<id>`; `stopChild` stops it.
#[test]
fn spawned_children_are_services_with_their_own_generation() {
    let m = machine(
        r#"{"initial": "a", "context": {"out": null}, "states": {
        "a": {"on": {"SPAWN": {"target": "b", "actions": [
                 {"type": "spawnChild", "params": {"src": "child", "id": "w", "input": {"n": 1}}},
                 {"type": "spawnChild", "params": {"src": "child", "id": "v"}}]}}},
        "b": {"on": {
            "POKE": {"actions": {"type": "sendTo", "params": {"to": "w", "event": {"type": "POKE"}}}},
            "STOP": {"actions": {"type": "stopChild", "params": {"id": "v"}}},
            "xstate.done.actor.w": {"target": "c",
                "actions": {"type": "setFromEvent", "params": {"key": "out", "from": "output"}}}}},
        "c": {}}}"#,
    );
    /// Reports its input as its result when poked.
    struct Kid(Reporter, Value);
    impl Actor for Kid {
        type Msg = Event;
        fn handle(&mut self, _ctx: &mut Context<'_, Self>, _: Event) {
            let _ = self.0.done(Ok(self.1.clone()));
        }
    }
    let started: Arc<Mutex<Vec<(String, u64, Value)>>> = Arc::default();
    let kids: Arc<Mutex<Vec<turno::Addr<Event>>>> = Arc::default();
    let (st, ks) = (started.clone(), kids.clone());
    let mut services = HashMap::new();
    services.insert(
        "child".to_string(),
        Service::child(move |ctx, s, reporter| {
            st.lock()
                .unwrap()
                .push((s.id.clone(), s.generation, s.input.clone()));
            let input = s.input.clone();
            let kid = ctx
                .spawn(Props::new(), move || Kid(reporter.clone(), input.clone()))
                .ok()?;
            ks.lock().unwrap().push(kid.clone());
            let to = kid.clone();
            let send: turno_chart::interpreter::Sender =
                Arc::new(move |e: Event| to.try_send(e).is_enqueued());
            Some((kid.id(), Some(send)))
        }),
    );
    let services = Arc::new(services);
    let (seen, rec) = recorder();
    let mut sys = DetSystem::new(7);
    let chart = sys
        .spawn(Props::new(), move || {
            ChartActor::new(m.clone())
                .with_services(services.clone())
                .on_snapshot(rec.clone())
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = chart.try_send(ChartMsg::Event(Event::new("SPAWN")));
    sys.run_until_idle().unwrap();
    let starts = started.lock().unwrap().clone();
    assert_eq!(starts.len(), 2);
    assert_eq!(
        (starts[0].0.as_str(), &starts[0].2),
        ("w", &json!({"n": 1}))
    );
    assert_eq!((starts[1].0.as_str(), &starts[1].2), ("v", &Value::Null));
    assert_ne!(
        starts[0].1, starts[1].1,
        "each spawn has its own generation"
    );
    let v = kids.lock().unwrap()[1].clone();
    let _ = chart.try_send(ChartMsg::Event(Event::new("STOP")));
    sys.run_until_idle().unwrap();
    assert!(
        matches!(v.try_send(Event::new("LATE")), turno::Verdict::Closed(_)),
        "stopChild stopped the spawned actor"
    );
    let _ = chart.try_send(ChartMsg::Event(Event::new("POKE")));
    sys.run_until_idle().unwrap();
    let last = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.0, r#""c""#, "the spawned child's done event was taken");
}
