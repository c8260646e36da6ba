//! Invoked child charts persisted with their parent (`turno_chart::tree`):
//! a chart actor whose state invokes a child chart with its own context and
//! `after` timer is crashed after every item of a random script and
//! restored in a new DetSystem (another epoch) some time later; it must end
//! exactly as the uninterrupted run with that time inserted. Also on
//! ThreadedSystem, and the reader's typed errors for child documents.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use turno::{Addr, DetSystem, Props, System, ThreadedSystem};
use turno_chart::interpreter::{ChartActor, ChartMsg};
use turno_chart::persist::{InFlight, Persist, SnapshotProblem};
use turno_chart::tree::{Charts, Tree};
use turno_chart::{load_json, stdlib, Event, Implementations, Machine};

mod common {
    pub mod det;
    pub mod gateway;
}
use common::det::{settle, step_until};

const PARENT: &str = r#"{"id": "flow", "initial": "idle", "context": {"progress": 0, "result": null},
 "states": {
   "idle": {"entry": {"type": "mark", "params": {"m": "idle"}}, "on": {"START": "working"}},
   "working": {
     "entry": {"type": "mark", "params": {"m": "working"}},
     "invoke": {"id": "w", "src": "worker",
                "onDone": {"target": "finished", "actions": {"type": "setFromEvent", "params": {"key": "result", "from": "output"}}}},
     "after": {"3000": "timedOut"},
     "on": {"PROGRESS": {"actions": [{"type": "inc", "params": {"key": "progress"}}, {"type": "mark", "params": {"m": "progress"}}]},
            "NUDGE": {"actions": {"type": "sendTo", "params": {"to": "w", "event": {"type": "NUDGE"}}}},
            "CANCEL": "idle"}
   },
   "finished": {"entry": {"type": "mark", "params": {"m": "finished"}}, "on": {"START": "working"}},
   "timedOut": {"entry": {"type": "mark", "params": {"m": "timedOut"}}, "on": {"START": "working"}}
 }}"#;

const WORKER: &str = r#"{"id": "worker", "initial": "step", "context": {"steps": 0},
 "states": {
   "step": {"entry": {"type": "mark", "params": {"m": "w.step"}},
            "after": {"700": {"target": "step", "reenter": true,
                              "actions": [{"type": "inc", "params": {"key": "steps"}},
                                          {"type": "sendParent", "params": {"event": {"type": "PROGRESS"}}}]}},
            "on": {"NUDGE": {"actions": [{"type": "inc", "params": {"key": "steps"}}, {"type": "mark", "params": {"m": "w.nudged"}}]}},
            "always": {"guard": {"type": "ctxGte", "params": {"key": "steps", "value": 3}}, "target": "done"}},
   "done": {"type": "final"}
 },
 "output": {"ok": true}}"#;

fn imp() -> Implementations<Value> {
    stdlib::implementations().custom("mark").actor("worker")
}

fn machines() -> (Arc<Machine<Value>>, Arc<Charts<Value>>) {
    let worker = Arc::new(load_json(WORKER, &imp()).unwrap());
    let parent = Arc::new(load_json(PARENT, &imp()).unwrap());
    (parent, Arc::new(Charts::new().chart("worker", worker)))
}

/// What a run leaves behind: the marks (entry actions and the like, from
/// parent and child, in order) and the last persisted tree document.
#[derive(Default)]
struct Record {
    marks: Vec<String>,
    docs: Vec<String>,
}

type Shared = Arc<Mutex<Record>>;

fn chart(
    m: &Arc<Machine<Value>>,
    charts: &Arc<Charts<Value>>,
    epoch: u64,
    rec: &Shared,
    restore: Option<String>,
) -> ChartActor<Value> {
    let (m2, r1, r2) = (m.clone(), rec.clone(), rec.clone());
    let a = ChartActor::new(m.clone())
        .with_charts(charts.clone())
        .with_epoch(epoch)
        .on_custom(move |_, name, params, _| {
            if name == "mark" {
                r1.lock().unwrap().marks.push(params["m"].to_string());
            }
        })
        .on_persist_tree(move |tree: &Tree<Value>| {
            let doc = Persist::new(&*m2).tree_to_string(tree).unwrap();
            r2.lock().unwrap().docs.push(doc);
        });
    match restore {
        Some(text) => {
            let m3 = m.clone();
            a.restoring_tree(move |at, charts| Persist::new(&*m3).restore_tree(&text, charts, at))
        }
        None => a,
    }
}

#[derive(Clone, Debug)]
enum Item {
    Send(&'static str),
    Advance(u64),
}

/// A small deterministic generator (the test's own, so a seed is a script).
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn script(seed: u64) -> (Vec<Item>, u64) {
    let mut r = Rng(seed);
    let mut items = vec![Item::Send("START")];
    for _ in 0..(5 + r.next(5)) {
        items.push(match r.next(7) {
            0 => Item::Send("NUDGE"),
            1 => Item::Send("CANCEL"),
            2 => Item::Send("START"),
            3 => Item::Advance(100),
            4 => Item::Advance(350),
            5 => Item::Advance(700),
            _ => Item::Advance(1500),
        });
    }
    let downtime = [0, 200, 700, 2500, 5000][r.next(5) as usize];
    (items, downtime)
}

fn play(sys: &mut DetSystem, a: &Addr<ChartMsg>, item: &Item) {
    match item {
        Item::Send(e) => {
            assert!(a.try_send(ChartMsg::Event(Event::new(*e))).is_enqueued());
            sys.run_until_idle().unwrap();
        }
        Item::Advance(ms) => {
            sys.advance(Duration::from_millis(*ms)).unwrap();
        }
    }
}

const E1: u64 = 1_800_000_000_000;

/// The document with every time in wall-clock ms (the two runs' clocks
/// differ after a restore in another system) and without the instant of
/// the last macrostep (a restore is one macrostep where the plain run had
/// several).
fn normalized(doc: &str) -> Value {
    fn walk(v: &mut Value) {
        let epoch = v["epoch_ms"].as_u64().unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("now_ms");
        o.remove("epoch_ms");
        for s in o["scheduled"].as_array_mut().unwrap() {
            let due = s["due_ms"].as_u64().unwrap();
            s["due_ms"] = json!(due + epoch);
        }
        for i in o["invocations"].as_array_mut().unwrap() {
            i.as_object_mut().unwrap().remove("started_ms");
        }
        for (_, c) in o["charts"].as_object_mut().unwrap() {
            walk(c);
        }
    }
    let mut v: Value = serde_json::from_str(doc).unwrap();
    walk(&mut v);
    v
}

/// A fresh DetSystem with the parent chart started at epoch `E1`.
struct Started {
    m: Arc<Machine<Value>>,
    charts: Arc<Charts<Value>>,
    rec: Shared,
    sys: DetSystem,
    a: Addr<ChartMsg>,
}

fn started(seed: u64) -> Started {
    let (m, charts) = machines();
    let rec: Shared = Arc::default();
    let mut sys = DetSystem::new(seed);
    let (m1, c1, r1) = (m.clone(), charts.clone(), rec.clone());
    let a = sys
        .spawn(Props::new(), move || chart(&m1, &c1, E1, &r1, None))
        .unwrap();
    sys.run_until_idle().unwrap();
    Started {
        m,
        charts,
        rec,
        sys,
        a,
    }
}

/// The uninterrupted run, `{"advance_ms": downtime}` inserted after `k`
/// items: marks and the last document.
fn reference(seed: u64, items: &[Item], k: usize, downtime: u64) -> (Vec<String>, Value) {
    let Started {
        rec, mut sys, a, ..
    } = started(seed);
    for (i, item) in items.iter().enumerate() {
        if i == k {
            sys.advance(Duration::from_millis(downtime)).unwrap();
        }
        play(&mut sys, &a, item);
    }
    if k == items.len() {
        sys.advance(Duration::from_millis(downtime)).unwrap();
    }
    let r = rec.lock().unwrap();
    (r.marks.clone(), normalized(r.docs.last().unwrap()))
}

/// Crashed after `k` items: the actor is gone with its system; `downtime`
/// ms later a new system (its clock at 0, its epoch the wall time then)
/// restores the last document written and plays the rest.
fn crashed(seed: u64, items: &[Item], k: usize, downtime: u64) -> (Vec<String>, Value, Value) {
    let Started {
        m,
        charts,
        rec,
        mut sys,
        a,
    } = started(seed);
    for item in &items[..k] {
        play(&mut sys, &a, item);
    }
    let crashed_at = sys.now().since_start().as_millis() as u64;
    let text = rec.lock().unwrap().docs.last().unwrap().clone();
    drop(sys); // the process dies: no actor, no timer survives
    let e2 = E1 + crashed_at + downtime;
    let mut sys = DetSystem::new(seed ^ 0x5eed);
    let (m2, c2, r2) = (m.clone(), charts.clone(), rec.clone());
    let mut t = Some(text.clone());
    let b = sys
        .spawn(Props::new(), move || chart(&m2, &c2, e2, &r2, t.take()))
        .unwrap();
    sys.run_until_idle().unwrap();
    for item in &items[k..] {
        play(&mut sys, &b, item);
    }
    let r = rec.lock().unwrap();
    let persisted: Value = serde_json::from_str(&text).unwrap();
    (
        r.marks.clone(),
        normalized(r.docs.last().unwrap()),
        persisted,
    )
}

#[test]
fn det_a_child_chart_restores_into_its_state_at_every_step_over_many_seeds() {
    const SEEDS: u64 = 100;
    let (mut runs, mut with_child, mut child_timer_overdue) = (0, 0, 0);
    for seed in 0..SEEDS {
        let (items, downtime) = script(seed);
        for k in 0..=items.len() {
            let (want_marks, want_doc) = reference(seed, &items, k, downtime);
            let (marks, doc, persisted) = crashed(seed, &items, k, downtime);
            let ctx = format!("seed {seed} k {k} downtime {downtime} items {items:?}");
            assert_eq!(marks, want_marks, "{ctx}");
            assert_eq!(doc, want_doc, "{ctx}");
            if let Some(child) = persisted["charts"].get("w") {
                with_child += 1;
                assert_eq!(child["machine"]["id"], "worker", "{ctx}");
                let due = child["scheduled"][0]["due_ms"].as_u64().unwrap();
                if due <= child["now_ms"].as_u64().unwrap() + downtime {
                    child_timer_overdue += 1;
                }
            }
            runs += 1;
        }
    }
    eprintln!(
        "{runs} crash/restore runs; the child was running in {with_child}, \
         its timer fell due while nothing ran in {child_timer_overdue}"
    );
    assert!(with_child > runs / 4, "{with_child} of {runs}");
    assert!(child_timer_overdue > 50, "{child_timer_overdue}");
}

/// On real threads: persisted while the child's 400 ms timer is pending,
/// restored 600 ms later in the same system; the overdue timer fires in
/// the restoring turn, the child finishes and the parent takes its output,
/// and no entry action runs again.
#[test]
fn threaded_a_restored_child_chart_fires_its_overdue_timer_at_once() {
    const CHILD: &str = r#"{"id": "worker", "initial": "step", "context": {"steps": 5},
      "states": {"step": {"entry": {"type": "mark", "params": {"m": "w.step"}}, "after": {"400": "done"}},
                 "done": {"type": "final"}}, "output": {"ok": true}}"#;
    let worker = Arc::new(load_json(CHILD, &imp()).unwrap());
    let m = Arc::new(load_json(PARENT, &imp()).unwrap());
    let charts = Arc::new(Charts::new().chart("worker", worker));
    let sys = ThreadedSystem::new();
    let epoch = turno_chart::persist::wall_epoch_ms(sys.now());
    let rec: Shared = Arc::default();
    let (m1, c1, r1) = (m.clone(), charts.clone(), rec.clone());
    let a = sys
        .spawn(Props::new(), move || chart(&m1, &c1, epoch, &r1, None))
        .unwrap();
    let wait = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while rec.lock().unwrap().docs.len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    wait(1);
    assert!(a
        .try_send(ChartMsg::Event(Event::new("START")))
        .is_enqueued());
    wait(2);
    let text = rec.lock().unwrap().docs[1].clone();
    sys.stop(a.id());
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["charts"]["w"]["context"]["steps"], 5);
    assert_eq!(doc["charts"]["w"]["configuration"][1], "worker.step");
    std::thread::sleep(Duration::from_millis(600)); // past the child's deadline
    let marks_before = rec.lock().unwrap().marks.clone();
    let (m2, c2, r2) = (m.clone(), charts.clone(), rec.clone());
    let mut t = Some(text);
    let spawned = Instant::now();
    sys.spawn(Props::new(), move || chart(&m2, &c2, epoch, &r2, t.take()))
        .unwrap();
    wait(3);
    let waited = spawned.elapsed();
    let r = rec.lock().unwrap();
    let last: Value = serde_json::from_str(r.docs.last().unwrap()).unwrap();
    assert_eq!(last["configuration"], json!(["flow", "flow.finished"]));
    assert_eq!(last["context"]["result"], json!({"ok": true}));
    assert!(last["charts"].as_object().unwrap().is_empty());
    assert!(
        waited < Duration::from_millis(300),
        "restarted the delay? {waited:?}"
    );
    assert_eq!(
        r.marks[marks_before.len()..],
        ["\"finished\"".to_string()],
        "only the new state's entry ran"
    );
    drop(r);
    sys.shutdown(Duration::from_secs(2)).unwrap();
}

/// A persisted tree with the child running, from the pure core.
fn tree_doc() -> (Arc<Machine<Value>>, Arc<Charts<Value>>, Value) {
    let (m, charts) = machines();
    let (mut tree, _) = Tree::start(&m, charts.clone(), 0).unwrap();
    tree.event(&m, &[], Event::new("START")).unwrap();
    tree.event(&m, &[], Event::new("NUDGE")).unwrap();
    let doc = Persist::new(&*m).tree_to_value(&tree).unwrap();
    (m, charts, doc)
}

#[test]
fn a_tree_round_trips_and_its_child_resumes_not_reruns() {
    let (m, charts, doc) = tree_doc();
    assert_eq!(doc["charts"]["w"]["context"]["steps"], 1);
    let r = Persist::new(&*m)
        .restore_tree(&doc.to_string(), charts.clone(), 100)
        .unwrap();
    assert_eq!(r.tree.child(&["w".into()]).unwrap().context["steps"], 1);
    assert_eq!(
        r.decisions,
        vec![(Vec::<String>::new(), "w".to_string(), InFlight::Resume)]
    );
    assert!(
        r.actions
            .iter()
            .all(|t| !matches!(t.action, turno_chart::Action::StartInvoke { .. })),
        "nothing is started again: {:?}",
        r.actions
    );
    // Both charts' timers are re-armed at their absolute deadlines.
    let arms: Vec<(Vec<String>, u64)> = r
        .actions
        .iter()
        .filter_map(|t| match &t.action {
            turno_chart::Action::Schedule { due_ms, .. } => Some((t.path.clone(), *due_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(arms, vec![(vec!["w".to_string()], 700), (vec![], 3000)]);
    // Restored 1500 ms after: the child's timer fires during the restore
    // at its own deadlines, 700 and 1400 (each sends PROGRESS), and the
    // second brings its steps (1 from the NUDGE) to 3: it finishes and the
    // parent takes its output.
    let r = Persist::new(&*m)
        .restore_tree(&doc.to_string(), charts, 1500)
        .unwrap();
    assert_eq!(r.tree.root().value(&m).to_json(), "finished");
    assert_eq!(r.tree.root().context["progress"], 2);
    assert!(r.tree.child(&["w".into()]).is_none());
}

#[test]
fn a_corrupt_child_snapshot_is_a_typed_error_naming_its_path() {
    let (m, charts, doc) = tree_doc();
    let p = Persist::new(&*m);
    let check = |edit: &dyn Fn(&mut Value), path: &str| {
        let mut d = doc.clone();
        edit(&mut d);
        let e = p
            .restore_tree(&d.to_string(), charts.clone(), 0)
            .err()
            .unwrap_or_else(|| panic!("{path}: restored"));
        let turno_chart::persist::RestoreError::Snapshot(e) = e else {
            panic!("{path}: {e}");
        };
        assert_eq!(e.path, path, "{e}");
        e.problem
    };
    let pr = check(
        &|d| d["charts"]["w"]["configuration"][1] = json!("worker.nowhere"),
        "$.charts.w.configuration[1]",
    );
    assert!(matches!(pr, SnapshotProblem::UnknownState(_)), "{pr}");
    let pr = check(
        &|d| d["charts"]["w"]["machine"]["id"] = json!("flow"),
        "$.charts.w.machine.id",
    );
    assert!(matches!(pr, SnapshotProblem::ForeignMachine { .. }), "{pr}");
    check(
        &|d| d["charts"]["w"]["scheduled"][0]["due_ms"] = json!("soon"),
        "$.charts.w.scheduled[0].due_ms",
    );
    check(
        &|d| d["charts"]["w"]["value"] = json!(1),
        "$.charts.w.value",
    );
    check(
        &|d| d["charts"]["w"]["status"] = json!("done"),
        "$.charts.w.status",
    );
    check(
        &|d| d["charts"]["w"]["format"] = json!("something"),
        "$.charts.w.format",
    );
    check(
        &|d| {
            d["charts"].as_object_mut().unwrap().remove("w");
        },
        "$.charts.w",
    );
    check(
        &|d| d["charts"]["ghost"] = d["charts"]["w"].clone(),
        "$.charts.ghost",
    );
    // A chart the restoring side does not know: the invocation is an
    // ordinary one, so the nested document is unexpected.
    let e = p
        .restore_tree(&doc.to_string(), Arc::new(Charts::new()), 0)
        .err()
        .unwrap();
    assert!(e.to_string().contains("$.charts.w"), "{e}");
    // Every prefix of the document is a typed error, never a panic.
    let text = doc.to_string();
    for cut in (0..text.len()).step_by(7) {
        assert!(p.restore_tree(&text[..cut], charts.clone(), 0).is_err());
    }
}

const CHECKOUT: &str = r#"{"id": "checkout", "initial": "cart",
 "states": {
   "cart": {"on": {"PAY": "paying"}},
   "paying": {"invoke": {"id": "pay", "src": "submit", "onDone": "paid"},
              "on": {"CONFIRM": {"actions": {"type": "sendTo", "params": {"to": "pay", "event": {"type": "CONFIRM"}}}}}},
   "paid": {}
 }}"#;

/// A child chart in a flow's last step: the checkout invokes the
/// idempotent submit as a child chart; the actor crashes after each of its
/// first macrosteps, under three faults, over many seeds, and is restored
/// with `submit::sanitizer("submit")`: a child interrupted in `sending`
/// resumes in its `uncertain` and asks by key, so every run ends paid with
/// exactly one charge, never two.
#[test]
fn det_a_child_submit_chart_never_charges_twice_across_a_crash() {
    use crate::common::gateway::{memory_ledger, Fault, Faults, GatewayActor};
    const SEEDS: u64 = 60;
    type Plan = fn() -> Vec<Fault>;
    let faults: [(&str, Plan); 3] = [
        ("none", Vec::new),
        ("lost reply", || vec![Fault::LostReply]),
        ("timeout", || {
            vec![Fault::TimeoutAfterExecuting(Duration::from_millis(1500))]
        }),
    ];
    let checkout =
        Arc::new(load_json(CHECKOUT, &stdlib::implementations().actor("submit")).unwrap());
    let (mut runs, mut in_sending) = (0, 0);
    for seed in 0..SEEDS {
        for (name, fault) in &faults {
            for crash_after in 1..=5usize {
                let mut sys = DetSystem::new(seed);
                let ledger = memory_ledger();
                let (l, f) = (ledger.clone(), Faults::script(fault()));
                let gw = sys
                    .spawn(Props::new().name("gateway"), move || {
                        GatewayActor::new(l.clone(), f.clone())
                    })
                    .unwrap();
                let services = common::gateway::services(&gw);
                let charts =
                    Arc::new(Charts::new().chart("submit", common::gateway::submit_machine(seed)));
                let docs: Arc<Mutex<Vec<String>>> = Arc::default();
                let spawn = |sys: &mut DetSystem, restore: Option<String>| {
                    let (m, c, s, d) = (
                        checkout.clone(),
                        charts.clone(),
                        services.clone(),
                        docs.clone(),
                    );
                    let mut restore = restore;
                    sys.spawn(Props::new().name("checkout"), move || {
                        let (m2, d2) = (m.clone(), d.clone());
                        let a = ChartActor::new(m.clone())
                            .with_charts(c.clone())
                            .with_services(s.clone())
                            .on_persist_tree(move |t| {
                                d2.lock()
                                    .unwrap()
                                    .push(Persist::new(&*m2).tree_to_string(t).unwrap());
                            });
                        match restore.take() {
                            Some(text) => {
                                let m3 = m.clone();
                                a.restoring_tree(move |at, charts| {
                                    Persist::new(&*m3)
                                        .sanitizer(turno_chart::submit::sanitizer("submit"))
                                        .restore_tree(&text, charts, at)
                                })
                            }
                            None => a,
                        }
                    })
                    .unwrap()
                };
                let a = spawn(&mut sys, None);
                sys.run_until_idle().unwrap();
                assert!(a.try_send(ChartMsg::Event(Event::new("PAY"))).is_enqueued());
                assert!(a
                    .try_send(ChartMsg::Event(Event::new("CONFIRM")))
                    .is_enqueued());
                step_until(&mut sys, || docs.lock().unwrap().len() >= crash_after);
                let text = docs.lock().unwrap().last().unwrap().clone();
                let doc: Value = serde_json::from_str(&text).unwrap();
                let child = doc["charts"]["pay"]["configuration"].clone();
                sys.stop(a.id());
                sys.run_until_idle().unwrap();
                sys.advance(Duration::from_millis(2000)).unwrap();
                let before = docs.lock().unwrap().len();
                let b = spawn(&mut sys, Some(text));
                sys.run_until_idle().unwrap();
                let ctx = format!("{name} seed {seed} crash after {crash_after} (child {child})");
                if child
                    .as_array()
                    .is_some_and(|c| c.iter().any(|s| s == "submit.sending"))
                {
                    in_sending += 1;
                    let first: Value = serde_json::from_str(&docs.lock().unwrap()[before]).unwrap();
                    let now = &first["charts"]["pay"]["configuration"];
                    assert!(
                        now.as_array()
                            .unwrap()
                            .iter()
                            .any(|s| s == "submit.uncertain"),
                        "{ctx}: restored into {now}"
                    );
                }
                let last: Value =
                    serde_json::from_str(docs.lock().unwrap().last().unwrap()).unwrap();
                if last["configuration"][1] == "checkout.cart" {
                    assert!(b.try_send(ChartMsg::Event(Event::new("PAY"))).is_enqueued());
                    assert!(b
                        .try_send(ChartMsg::Event(Event::new("CONFIRM")))
                        .is_enqueued());
                } else if last["charts"]["pay"]["configuration"][1] == "submit.review" {
                    assert!(b
                        .try_send(ChartMsg::Event(Event::new("CONFIRM")))
                        .is_enqueued());
                }
                settle(&mut sys);
                let end: Value =
                    serde_json::from_str(docs.lock().unwrap().last().unwrap()).unwrap();
                assert_eq!(
                    end["configuration"],
                    json!(["checkout", "checkout.paid"]),
                    "{ctx}"
                );
                let charges = ledger.charges().unwrap();
                assert_eq!(charges.len(), 1, "{ctx}: {charges:?}");
                runs += 1;
            }
        }
    }
    eprintln!(
        "{runs} runs, each exactly one charge; the child was crashed in sending {in_sending} times"
    );
    assert!(in_sending >= SEEDS as usize, "{in_sending}");
}

/// A child spawned by `spawnChild` is persisted like an invoked one: in
/// `invocations` with `"spawned": true` and its generation, its document
/// under `charts.<id>`. Restored 2.2 s later, its overdue timers fire and
/// it finishes; the parent takes its progress and its done event and keeps
/// listing it, finished, exactly as the run that was never persisted.
#[test]
fn a_spawned_child_chart_survives_persist_and_restore() {
    let host = load_json(
        r#"{"id": "host", "initial": "on", "context": {"progress": 0, "out": null},
        "states": {"on": {"on": {
          "SPAWN": {"actions": {"type": "spawnChild", "params": {"src": "worker", "id": "s"}}},
          "PROGRESS": {"actions": {"type": "inc", "params": {"key": "progress"}}},
          "xstate.done.actor.s": {"actions": {"type": "setFromEvent",
                                              "params": {"key": "out", "from": "output"}}}}}}}"#,
        &imp(),
    )
    .unwrap();
    let (_, charts) = machines();
    let run_to = |tree: &mut Tree<Value>, limit: u64| {
        while let Some((path, id, seq, _)) = tree.next_due(limit) {
            tree.fire(&host, &path, &id, seq).unwrap();
        }
        tree.set_now(limit);
    };
    let (mut tree, _) = Tree::start(&host, charts.clone(), 0).unwrap();
    tree.event(&host, &[], Event::new("SPAWN")).unwrap();
    let spawned = tree.root().invocations[0].clone();
    assert!(spawned.spawned && spawned.id == "s" && spawned.state.is_empty());
    let p = Persist::new(&host);
    let doc = p.tree_to_value(&tree).unwrap();
    assert_eq!(doc["invocations"][0]["spawned"], json!(true));
    assert_eq!(
        doc["invocations"][0]["generation"],
        json!(spawned.generation)
    );
    assert_eq!(
        doc["charts"]["s"]["configuration"],
        json!(["worker", "worker.step"])
    );

    let mut plain = Tree::start(&host, charts.clone(), 0).unwrap().0;
    plain.event(&host, &[], Event::new("SPAWN")).unwrap();
    run_to(&mut plain, 2200);

    // Restored while it still runs, it resumes from its own snapshot.
    let early = p
        .restore_tree(&doc.to_string(), charts.clone(), 1000)
        .unwrap();
    assert!(early
        .decisions
        .iter()
        .any(|(path, id, d)| path.is_empty() && id == "s" && *d == InFlight::Resume));
    assert_eq!(early.tree.root().context["progress"], json!(1));
    let restored = p
        .restore_tree(&doc.to_string(), charts.clone(), 2200)
        .unwrap();
    let back = restored.tree;
    assert_eq!(back.root().context, plain.root().context);
    assert_eq!(back.root().context["progress"], json!(3));
    assert_eq!(back.root().context["out"], json!({"ok": true}));
    assert_eq!(back.root().finished, plain.root().finished);
    assert_eq!(back.root().finished[0].child.id, "s");
    let kid = back
        .child(&["s".to_string()])
        .expect("the finished child stays listed");
    assert_eq!(kid.status.as_str(), "done");
    let again = p.tree_to_value(&back).unwrap();
    assert_eq!(again["finished"][0]["status"], json!("done"));
    assert_eq!(again["charts"]["s"]["status"], json!("done"));
    let read = p.read_tree(&again.to_string(), charts).unwrap();
    assert_eq!(read.root().finished, back.root().finished);
}
