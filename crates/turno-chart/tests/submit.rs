//! The idempotent submit against the fake gateway on DetSystem, over many
//! seeds per fault: exactly one charge when the flow completes, none when
//! it is abandoned, never two; and a crash of the chart with a restore
//! after every macrostep of the flow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use turno::{Addr, DetSystem, Props, System};
use turno_chart::interpreter::{ChartActor, ChartMsg, Service};
use turno_chart::persist::Persist;
use turno_chart::submit;
use turno_chart::{Event, Machine};

mod common {
    pub mod det;
    pub mod gateway;
}
use common::det::{settle, step_until};
use common::gateway::{
    memory_ledger, services, submit_machine, Fault, Faults, GatewayActor, Ledger,
};

const SEEDS: u64 = 200;

type FaultPlan = fn() -> Vec<Fault>;

/// Snapshots (value, persisted text) after every macrostep.
type Log = Arc<Mutex<Vec<(String, Value, String)>>>;

struct World {
    sys: DetSystem,
    m: Arc<Machine<Value>>,
    ledger: Ledger,
    services: Arc<HashMap<String, Service<Value>>>,
    log: Log,
}

impl World {
    fn new(seed: u64, faults: Vec<Fault>) -> World {
        let sys = DetSystem::new(seed);
        let ledger = memory_ledger();
        let (l, f) = (ledger.clone(), Faults::script(faults));
        let gw = sys
            .spawn(Props::new().name("gateway"), move || {
                GatewayActor::new(l.clone(), f.clone())
            })
            .unwrap();
        World {
            sys,
            m: submit_machine(seed),
            ledger,
            services: services(&gw),
            log: Arc::default(),
        }
    }

    fn chart(&mut self, restore: Option<String>) -> Addr<ChartMsg> {
        let (m, log, services) = (self.m.clone(), self.log.clone(), self.services.clone());
        let mut restore = restore;
        self.sys
            .spawn(Props::new().name("submit"), move || {
                let (m2, log2) = (m.clone(), log.clone());
                let a = ChartActor::new(m.clone())
                    .with_services(services.clone())
                    .on_persist(move |snap| {
                        let text = Persist::new(&*m2).to_string(snap).unwrap();
                        log2.lock().unwrap().push((
                            snap.value(&m2).to_json().to_string(),
                            snap.context.clone(),
                            text,
                        ));
                    });
                match restore.take() {
                    Some(t) => {
                        let m3 = m.clone();
                        a.restoring(move |now| {
                            Persist::new(&*m3)
                                .sanitizer(submit::sanitizer("submit"))
                                .restore(&t, now)
                        })
                    }
                    None => a,
                }
            })
            .unwrap()
    }

    /// Runs until nothing is runnable and no timer is pending.
    fn settle(&mut self) {
        settle(&mut self.sys);
    }

    fn last(&self) -> (String, Value) {
        let l = self.log.lock().unwrap();
        let (v, c, _) = l.last().unwrap();
        (v.clone(), c.clone())
    }

    fn send(&self, a: &Addr<ChartMsg>, name: &str) {
        assert!(a.try_send(ChartMsg::Event(Event::new(name))).is_enqueued());
    }
}

/// Runs one flow: CONFIRM (twice when `double`), then `then` once the
/// chart settles in `failed`; returns the end state and the charges under
/// its key.
fn flow(seed: u64, faults: Vec<Fault>, double: bool, then: &str) -> (String, usize, usize) {
    let mut w = World::new(seed, faults);
    let a = w.chart(None);
    w.sys.run_until_idle().unwrap();
    w.send(&a, "CONFIRM");
    if double {
        w.send(&a, "CONFIRM");
    }
    w.settle();
    if w.last().0 == "\"failed\"" {
        w.send(&a, then);
        w.settle();
    }
    let (v, c) = w.last();
    let key = c["key"].as_str().unwrap().to_string();
    (
        v,
        w.ledger.charges_for(&key).unwrap(),
        w.ledger.charges().unwrap().len(),
    )
}

fn check(name: &str, faults: &dyn Fn(u64) -> Vec<Fault>, double: bool, then: &str, want: &str) {
    let mut charged = 0;
    for seed in 0..SEEDS {
        let (end, for_key, all) = flow(seed, faults(seed), double, then);
        assert_eq!(end, want, "{name} seed {seed}");
        let expected = usize::from(want == "\"completed\"");
        assert_eq!(
            (for_key, all),
            (expected, expected),
            "{name} seed {seed}: charges"
        );
        charged += all;
    }
    eprintln!("{name}: {SEEDS} seeds, {charged} charges");
}

#[test]
fn timeout_after_executing_is_resolved_by_key() {
    check(
        "timeout",
        &|s| {
            vec![Fault::TimeoutAfterExecuting(Duration::from_millis(
                1500 + s % 500,
            ))]
        },
        false,
        "CANCEL",
        "\"completed\"",
    );
}

#[test]
fn lost_reply_is_resolved_by_key() {
    check(
        "lost reply",
        &|_| vec![Fault::LostReply],
        false,
        "CANCEL",
        "\"completed\"",
    );
}

#[test]
fn server_error_before_executing_charges_once_on_the_retry() {
    check(
        "server error",
        &|_| vec![Fault::ServerErrorBeforeExecuting],
        false,
        "CANCEL",
        "\"completed\"",
    );
}

#[test]
fn a_failing_lookup_is_retried_until_it_answers() {
    check(
        "lost reply, lookup errors",
        &|s| {
            let mut f = vec![Fault::LostReply];
            f.extend((0..(s % 4)).map(|_| Fault::ServerErrorBeforeExecuting));
            f
        },
        false,
        "CANCEL",
        "\"completed\"",
    );
}

#[test]
fn a_lookup_that_never_answers_ends_unresolvable_after_the_deadline() {
    check(
        "unresolvable",
        &|_| {
            let mut f = vec![Fault::ServerErrorBeforeExecuting];
            f.extend((0..40).map(|_| Fault::ServerErrorBeforeExecuting));
            f
        },
        false,
        "CANCEL",
        "\"unresolvable\"",
    );
}

#[test]
fn double_confirm_charges_once() {
    check(
        "double CONFIRM",
        &|_| Vec::new(),
        true,
        "CANCEL",
        "\"completed\"",
    );
}

#[test]
fn a_decline_then_cancel_charges_nothing_and_retry_charges_once_with_the_same_key() {
    check(
        "decline, CANCEL",
        &|_| vec![Fault::Decline],
        false,
        "CANCEL",
        "\"abandoned\"",
    );
    check(
        "decline, RETRY",
        &|_| vec![Fault::Decline],
        false,
        "RETRY",
        "\"completed\"",
    );
}

#[test]
fn a_gateway_crash_after_executing_is_resolved_by_key() {
    check(
        "gateway crash",
        &|_| vec![Fault::Crash],
        false,
        "CANCEL",
        "\"completed\"",
    );
}

/// The chart crashes after each macrostep of the flow in turn (under each
/// fault), and a new chart is restored from the last snapshot it wrote.
#[test]
fn a_crash_and_restore_at_every_step_charges_exactly_once() {
    let faults: [(&str, FaultPlan); 4] = [
        ("none", Vec::new),
        ("lost reply", || vec![Fault::LostReply]),
        ("server error", || vec![Fault::ServerErrorBeforeExecuting]),
        ("timeout", || {
            vec![Fault::TimeoutAfterExecuting(Duration::from_millis(1500))]
        }),
    ];
    let mut runs = 0;
    let mut by_state: HashMap<String, usize> = HashMap::new();
    for seed in 0..SEEDS {
        for (name, fault) in &faults {
            for crash_after in 1..=4usize {
                let mut w = World::new(seed, fault());
                let a = w.chart(None);
                w.sys.run_until_idle().unwrap();
                w.send(&a, "CONFIRM");
                // Step turn by turn until the chart has written
                // `crash_after` snapshots (or finished), then kill it.
                let log = w.log.clone();
                step_until(&mut w.sys, || log.lock().unwrap().len() >= crash_after);
                let text = w.log.lock().unwrap().last().unwrap().2.clone();
                let at = w.log.lock().unwrap().last().unwrap().0.clone();
                w.sys.stop(a.id());
                w.sys.run_until_idle().unwrap();
                w.sys.advance(Duration::from_millis(2000)).unwrap();
                *by_state.entry(at.clone()).or_default() += 1;
                let done = at == "\"completed\"";
                if !done {
                    let before = w.log.lock().unwrap().len();
                    let b = w.chart(Some(text));
                    w.sys.run_until_idle().unwrap();
                    if at == "\"sending\"" {
                        // Restored in sending: it asks, it does not charge.
                        let first = w.log.lock().unwrap()[before].0.clone();
                        assert_eq!(first, r#"{"uncertain":"querying"}"#, "seed {seed}");
                    }
                    if w.last().0 == "\"review\"" {
                        w.send(&b, "CONFIRM");
                    }
                    w.settle();
                }
                let (end, ctx) = w.last();
                let key = ctx["key"].as_str().unwrap().to_string();
                assert_eq!(
                    end, "\"completed\"",
                    "{name} seed {seed} crash after {crash_after} (at {at})"
                );
                assert_eq!(
                    (
                        w.ledger.charges_for(&key).unwrap(),
                        w.ledger.charges().unwrap().len(),
                    ),
                    (1, 1),
                    "{name} seed {seed} crash after {crash_after} (at {at})"
                );
                runs += 1;
            }
        }
    }
    assert!(by_state.get("\"sending\"").copied().unwrap_or(0) >= SEEDS as usize);
    eprintln!("crash and restore: {runs} runs, each exactly one charge; crashed in {by_state:?}");
}
