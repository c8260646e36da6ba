//! A chart restored in a new process: its clock starts at 0 again, but its
//! snapshot carries the wall-clock epoch of the old one
//! (`ChartActor::with_epoch`, `persist::Clock`), so delayed events keep
//! their wall-clock deadlines (an overdue one fires once, during the
//! restore; none is lost) and the idempotent submit's last step is never
//! crossed twice.
//!
//! Two ways: real processes (this test binary runs itself as the child: the
//! first child persists into a SQLite store and is SIGKILLed mid-flow, the
//! second restores from the store), and two DetSystems at different virtual
//! epochs standing for the two processes, over many seeds.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use turno::{Actor, Addr, Context, DetSystem, Props, System, ThreadedSystem};
use turno_chart::interpreter::{ChartActor, ChartMsg, Service};
use turno_chart::persist::{self, Persist};
use turno_chart::submit;
use turno_chart::{load_json, stdlib, Event, Machine, Snapshot};
use turno_store::Store;

mod common {
    pub mod det;
    pub mod gateway;
}
use common::det::settle;
use common::gateway::{
    charge_via, keyed_submit, memory_ledger, services_with, Fault, Faults, GatewayActor,
    GatewayMsg, Ledger,
};

// ---- the charts ------------------------------------------------------------

/// `idle --GO--> busy --after delay--> late`; the entries count.
fn timer(id: &str, delay_ms: u64) -> Arc<Machine<Value>> {
    Arc::new(
        load_json(
            &format!(
                r#"{{"id": "{id}", "initial": "idle", "context": {{"entered": 0, "fired": 0}},
                "states": {{
                  "idle": {{"on": {{"GO": "busy"}}}},
                  "busy": {{"entry": {{"type": "inc", "params": {{"key": "entered"}}}},
                           "after": {{"{delay_ms}": "late"}}}},
                  "late": {{"entry": {{"type": "inc", "params": {{"key": "fired"}}}}}}
                }}}}"#
            ),
            &stdlib::implementations(),
        )
        .unwrap(),
    )
}

/// A chart actor that hands every snapshot (write-ahead) to `on`, fresh or
/// restored from `text`.
fn chart(
    m: &Arc<Machine<Value>>,
    epoch: u64,
    services: Arc<HashMap<String, Service<Value>>>,
    text: Option<String>,
    on: impl FnMut(&Snapshot<Value>, String) + Send + 'static,
) -> ChartActor<Value> {
    let mm = m.clone();
    let mut on = on;
    let a = ChartActor::new(m.clone())
        .with_epoch(epoch)
        .with_services(services)
        .on_persist(move |snap| on(snap, Persist::new(&*mm).to_string(snap).unwrap()));
    match text {
        Some(t) => {
            let mm = m.clone();
            a.restoring(move |at| {
                Persist::new(&*mm)
                    .sanitizer(submit::sanitizer("submit"))
                    .restore(&t, at)
            })
        }
        None => a,
    }
}

fn value(m: &Machine<Value>, s: &Snapshot<Value>) -> String {
    s.value(m).to_json().to_string()
}

// ---- real processes --------------------------------------------------------

const CHILD: &str = "TURNO_RESTART_CHILD";
const DIR: &str = "TURNO_RESTART_DIR";
const CASE: &str = "TURNO_RESTART_CASE";
const SHORT_MS: u64 = 300;
const LONG_MS: u64 = 5000;

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn store(dir: &Path) -> Store {
    Store::sqlite(dir.join("turno.db")).unwrap()
}

/// The gateway's ledger in the test's store: every charge is committed
/// before the gateway answers, and a new process reads it back.
fn durable_ledger(store: Store) -> Ledger {
    Ledger::open(store).unwrap()
}

/// How many charges the ledger in `store` holds.
fn charges_in(store: &Store) -> usize {
    durable_ledger(store.clone()).charges().unwrap().len()
}

/// Writes each snapshot of chart `owner` to the store, synchronously:
/// durable before the macrostep's effects leave.
fn persisting(
    store: Store,
    owner: &'static str,
    m: Arc<Machine<Value>>,
    report: bool,
) -> impl FnMut(&Snapshot<Value>, String) + Send {
    let mut version = store
        .get_snapshot(owner, "chart")
        .unwrap()
        .map(|s| s.version);
    move |snap, text| {
        version = Some(
            store
                .put_snapshot(owner, "chart", version, text.as_bytes(), None)
                .unwrap(),
        );
        if report {
            println!(
                "RESULT {}",
                json!({"chart": owner, "value": snap.value(&m).to_json(), "context": snap.context,
                       "wall_ms": wall_ms(), "epoch_ms": snap.epoch_ms, "now_ms": snap.now_ms})
            );
        }
    }
}

/// A gateway that takes a charge request and never acts on it (the
/// request is still on its way when the process dies).
struct Stuck(Vec<GatewayMsg>);

impl Actor for Stuck {
    type Msg = GatewayMsg;
    fn handle(&mut self, _: &mut Context<'_, Self>, msg: GatewayMsg) {
        self.0.push(msg);
    }
}

/// The child process: `first` runs the flow until it is killed; `second`
/// restores everything from the store and reports every macrostep.
#[test]
#[ignore = "the child process of a_chart_killed_mid_flow_resumes_in_a_new_process"]
fn child_process() {
    let Ok(role) = std::env::var(CHILD) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let case = std::env::var(CASE).unwrap();
    let st = store(&dir);
    let sys = ThreadedSystem::new();
    let epoch = persist::wall_epoch_ms(sys.now());
    let ledger = durable_ledger(st.clone());
    let first = role == "first";
    let faults = if first {
        Faults::script(vec![Fault::LostReply])
    } else {
        Faults::none()
    };
    let l = ledger.clone();
    let gw = sys
        .spawn(Props::new(), move || {
            GatewayActor::new(l.clone(), faults.clone())
        })
        .unwrap();
    let charge = if first && case == "stuck" {
        let stuck = sys.spawn(Props::new(), || Stuck(Vec::new())).unwrap();
        charge_via(&stuck, Duration::from_secs(60))
    } else {
        // Long enough that the first process dies in `sending`.
        charge_via(&gw, Duration::from_secs(60))
    };
    let svc = services_with(charge, &gw);
    let none: Arc<HashMap<String, Service<Value>>> = Arc::default();
    // A second process that ran `review`'s entry again would make this key.
    let keys = if first {
        format!("key-{}", wall_ms())
    } else {
        "second".into()
    };
    let sm = keyed_submit(keys);
    let (short, long) = (timer("short", SHORT_MS), timer("long", LONG_MS));
    let saved = |owner: &str| {
        (!first).then(|| {
            String::from_utf8(st.get_snapshot(owner, "chart").unwrap().unwrap().data).unwrap()
        })
    };
    let mut spawned = Vec::new();
    for (owner, m, svc) in [
        ("submit", &sm, &svc),
        ("short", &short, &none),
        ("long", &long, &none),
    ] {
        let (m, svc, st) = (m.clone(), svc.clone(), st.clone());
        let mut text = saved(owner);
        spawned.push(
            sys.spawn(Props::new(), move || {
                let on = persisting(st.clone(), owner, m.clone(), !first);
                chart(&m, epoch, svc.clone(), text.take(), on)
            })
            .unwrap(),
        );
    }
    if first {
        for (a, e) in spawned.iter().zip(["CONFIRM", "GO", "GO"]) {
            assert!(a.try_send(ChartMsg::Event(Event::new(e))).is_enqueued());
        }
        // Until killed.
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    // The second process: until the submit is over and the long timer has
    // fired, then a while longer, to see anything fire twice.
    let give_up = Instant::now() + Duration::from_secs(30);
    let over = |owner: &str, done: &[&str]| {
        let text =
            String::from_utf8(st.get_snapshot(owner, "chart").unwrap().unwrap().data).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        done.iter()
            .any(|d| doc["configuration"].as_array().unwrap().contains(&json!(d)))
    };
    while !(over("submit", &["submit.completed", "submit.unresolvable"])
        && over("long", &["long.late"]))
    {
        assert!(
            Instant::now() < give_up,
            "the restored charts did not finish"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(500));
    println!("LEDGER {}", json!(ledger.charges().unwrap()));
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

fn spawn_child(role: &str, dir: &Path, case: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, role)
        .env(DIR, dir)
        .env(CASE, case)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn stored(st: &Store, owner: &str) -> Option<Value> {
    st.get_snapshot(owner, "chart")
        .unwrap()
        .map(|s| serde_json::from_slice(&s.data).unwrap())
}

fn in_state(doc: &Option<Value>, id: &str) -> bool {
    doc.as_ref()
        .is_some_and(|d| d["configuration"].as_array().unwrap().contains(&json!(id)))
}

/// The wall-clock deadline of a timer chart's one delayed event.
fn deadline(doc: &Value) -> u64 {
    doc["epoch_ms"].as_u64().unwrap() + doc["scheduled"][0]["due_ms"].as_u64().unwrap()
}

#[test]
fn a_chart_killed_mid_flow_resumes_in_a_new_process() {
    for case in ["charged", "stuck"] {
        let dir = tempfile::tempdir().unwrap();
        let st = store(dir.path());
        let mut first = spawn_child("first", dir.path(), case);
        // Wait for the flow to be where we kill it: the submit in `sending`
        // (with the charge taken by the gateway, or not), both timers busy.
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            let charged = charges_in(&st) > 0;
            if in_state(&stored(&st, "submit"), "submit.sending")
                && in_state(&stored(&st, "short"), "short.busy")
                && in_state(&stored(&st, "long"), "long.busy")
                && charged == (case == "charged")
            {
                break;
            }
            assert!(
                Instant::now() < give_up,
                "{case}: the first process did not get there"
            );
            assert!(
                first.try_wait().unwrap().is_none(),
                "{case}: the first process ended"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        first.kill().unwrap(); // SIGKILL: no destructor, no last write
        first.wait().unwrap();
        let killed_ms = wall_ms();
        let (short, long) = (stored(&st, "short").unwrap(), stored(&st, "long").unwrap());
        let submit_doc = stored(&st, "submit").unwrap();
        let key = submit_doc["context"]["key"].as_str().unwrap().to_string();
        let (short_due, long_due) = (deadline(&short), deadline(&long));
        // The short timer falls due while no process is alive.
        while wall_ms() <= short_due + 50 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let restore_from = wall_ms();
        assert!(
            restore_from + 1000 < long_due,
            "{case}: too slow to test a pending deadline (killed at {killed_ms}, due {long_due})"
        );
        let mut second = spawn_child("second", dir.path(), case);
        let mut out = String::new();
        second
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(
            second.wait().unwrap().success(),
            "{case}: the second process failed:\n{out}"
        );
        let results: Vec<Value> = out
            .lines()
            // The harness's "test child_process ... " may open the first line.
            .filter_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let of = |chart: &str| -> Vec<&Value> {
            results.iter().filter(|r| r["chart"] == chart).collect()
        };
        // Overdue: it fired once, in the restoring turn; busy's entry did
        // not run again.
        let s = of("short");
        assert_eq!(s.len(), 1, "{case}: {s:?}");
        assert_eq!(s[0]["value"], "late");
        assert_eq!(s[0]["context"], json!({"entered": 1, "fired": 1}));
        assert!(s[0]["wall_ms"].as_u64().unwrap() >= short_due);
        // Pending: restored busy, fired at its wall-clock deadline, once.
        let l = of("long");
        assert_eq!(l.len(), 2, "{case}: {l:?}");
        assert_eq!(l[0]["value"], "busy");
        assert_eq!(l[1]["value"], "late");
        assert_eq!(l[1]["context"], json!({"entered": 1, "fired": 1}));
        let fired = l[1]["wall_ms"].as_u64().unwrap();
        // Timers never fire early; the epoch is read to the ms on each side.
        assert!(
            fired + 5 >= long_due,
            "{case}: fired at {fired}, due {long_due}"
        );
        assert!(
            fired < long_due + 2000,
            "{case}: fired at {fired}, due {long_due}"
        );
        // The submit: restored in `sending`, so it asks by key first; it
        // ends completed, with the key the first process made, and the
        // money was taken exactly once.
        let sub = of("submit");
        assert_eq!(
            sub[0]["value"],
            json!({"uncertain": "querying"}),
            "{case}: {sub:?}"
        );
        let end = sub.last().unwrap();
        assert_eq!(end["value"], "completed", "{case}: {sub:?}");
        assert_eq!(end["context"]["key"], key);
        let ledger: Vec<Value> = out
            .lines()
            .find_map(|l| l.split_once("LEDGER ").map(|(_, r)| r))
            .map(|l| serde_json::from_str(l).unwrap())
            .unwrap();
        let taken: Vec<(&Value, &Value)> =
            ledger.iter().map(|r| (&r["key"], &r["amount"])).collect();
        assert_eq!(
            taken,
            vec![(&json!(key), &json!(42))],
            "{case}: charged once"
        );
        let stored_ledger = durable_ledger(st.clone()).charges().unwrap();
        assert_eq!(stored_ledger.len(), 1, "{case}");
        assert_eq!(end["context"]["receipt"], stored_ledger[0]);
        eprintln!(
            "{case}: killed at {killed_ms}; short due {short_due} fired at {}; long due {long_due} fired at {fired} ({:+} ms); one charge",
            s[0]["wall_ms"],
            fired as i64 - long_due as i64
        );
    }
}

// ---- two DetSystems at two epochs, many seeds ------------------------------

const SEEDS: u64 = 300;
const E1: u64 = 1_800_000_000_000;

/// (value, context, wall-clock ms, persisted text) after every macrostep.
type Log = Arc<Mutex<Vec<(String, Value, u64, String)>>>;

/// One virtual process: a system at `epoch`, the gateway over the
/// (surviving) ledger, the submit chart and a timer chart, fresh or
/// restored from the texts the last process left.
struct Process {
    sys: DetSystem,
    submit: Addr<ChartMsg>,
    timer: Addr<ChartMsg>,
}

fn logging(m: &Arc<Machine<Value>>, log: &Log) -> impl FnMut(&Snapshot<Value>, String) + Send {
    let (m, log) = (m.clone(), log.clone());
    move |snap, text| {
        let wall = snap.epoch_ms.unwrap() + snap.now_ms;
        log.lock()
            .unwrap()
            .push((value(&m, snap), snap.context.clone(), wall, text));
    }
}

#[allow(clippy::too_many_arguments)]
fn process(
    seed: u64,
    epoch: u64,
    ledger: &Ledger,
    faults: Vec<Fault>,
    (sm, tm): (&Arc<Machine<Value>>, &Arc<Machine<Value>>),
    (slog, tlog): (&Log, &Log),
    texts: Option<(String, String)>,
) -> Process {
    let sys = DetSystem::new(seed);
    let (l, f) = (ledger.clone(), Faults::script(faults));
    let gw = sys
        .spawn(Props::new(), move || {
            GatewayActor::new(l.clone(), f.clone())
        })
        .unwrap();
    let svc = services_with(charge_via(&gw, Duration::from_millis(1000)), &gw);
    let (mut st, mut tt) = match texts {
        Some((s, t)) => (Some(s), Some(t)),
        None => (None, None),
    };
    let (m, log) = (sm.clone(), slog.clone());
    let submit = sys
        .spawn(Props::new(), move || {
            chart(&m, epoch, svc.clone(), st.take(), logging(&m, &log))
        })
        .unwrap();
    let (m, log) = (tm.clone(), tlog.clone());
    let timer = sys
        .spawn(Props::new(), move || {
            chart(&m, epoch, Arc::default(), tt.take(), logging(&m, &log))
        })
        .unwrap();
    Process { sys, submit, timer }
}

/// Each seed: the flow runs in process 1 for a seed-chosen number of turns
/// and virtual milliseconds, process 1 dies (no stop, no last write: only
/// what its charts persisted survives), and process 2 starts a
/// seed-chosen gap later at a later epoch, with its clock at 0, and
/// restores. Exactly one charge for every flow, never two; the delayed
/// event fires once, at its wall-clock deadline (or in the restoring turn,
/// if that has passed).
#[test]
fn det_two_processes_many_seeds() {
    let (mut overdue, mut pending, mut before, mut unresolvable) = (0, 0, 0, 0);
    let mut crashed_in: HashMap<String, u64> = HashMap::new();
    for seed in 0..SEEDS {
        let ledger = memory_ledger();
        let sm = keyed_submit(format!("key-{seed}"));
        let delay = 1000 + (seed * 37) % 4000;
        let tm = timer("timer", delay);
        let (slog, tlog): (Log, Log) = (Arc::default(), Arc::default());
        let fault = match seed % 4 {
            0 => Fault::None,
            1 => Fault::LostReply,
            2 => Fault::TimeoutAfterExecuting(Duration::from_millis(1500)),
            _ => Fault::ServerErrorBeforeExecuting,
        };
        let e1 = E1 + seed * 1013;
        let mut p1 = process(
            seed,
            e1,
            &ledger,
            vec![fault],
            (&sm, &tm),
            (&slog, &tlog),
            None,
        );
        p1.sys.run_until_idle().unwrap();
        assert!(p1
            .submit
            .try_send(ChartMsg::Event(Event::new("CONFIRM")))
            .is_enqueued());
        assert!(p1
            .timer
            .try_send(ChartMsg::Event(Event::new("GO")))
            .is_enqueued());
        // Up to 8 turns, moving virtual time to the next timer when
        // nothing is runnable.
        for _ in 0..seed % 9 {
            if !p1.sys.step() {
                match p1.sys.next_deadline() {
                    Some(d) => {
                        p1.sys.advance_to(d).unwrap();
                    }
                    None => break,
                }
            }
        }
        let t1 = p1.sys.now().since_start().as_millis() as u64;
        drop(p1); // killed
        let (s_text, t_text) = (
            slog.lock().unwrap().last().unwrap().3.clone(),
            tlog.lock().unwrap().last().unwrap().3.clone(),
        );
        let (s_at, t_at) = (slog.lock().unwrap().len(), tlog.lock().unwrap().len());
        *crashed_in
            .entry(slog.lock().unwrap()[s_at - 1].0.clone())
            .or_default() += 1;
        let gap = (seed * 7919) % 8000;
        let e2 = e1 + t1 + gap;
        let mut p2 = process(
            seed ^ 0x5eed,
            e2,
            &ledger,
            Vec::new(),
            (&sm, &tm),
            (&slog, &tlog),
            Some((s_text, t_text)),
        );
        p2.sys.run_until_idle().unwrap();
        // Killed before the event was taken: the user does it again.
        if slog.lock().unwrap().last().unwrap().0 == "\"review\"" {
            assert!(p2
                .submit
                .try_send(ChartMsg::Event(Event::new("CONFIRM")))
                .is_enqueued());
        }
        if tlog.lock().unwrap().last().unwrap().0 == "\"idle\"" {
            assert!(p2
                .timer
                .try_send(ChartMsg::Event(Event::new("GO")))
                .is_enqueued());
        }
        settle(&mut p2.sys);

        let slog = slog.lock().unwrap();
        let (end, ctx, _, _) = slog.last().unwrap();
        let key = ctx["key"].as_str().unwrap();
        assert!(
            key.starts_with(&format!("key-{seed}-")),
            "seed {seed}: {key}"
        );
        match end.as_str() {
            "\"completed\"" => {
                let charges = ledger.charges().unwrap();
                let taken: Vec<(&Value, &Value)> =
                    charges.iter().map(|r| (&r["key"], &r["amount"])).collect();
                assert_eq!(
                    taken,
                    vec![(&json!(key), &json!(42))],
                    "seed {seed}: one charge"
                );
            }
            // `uncertain`'s 3 s ran out while no process was alive: it
            // never retries on its own (the user checks their history).
            "\"unresolvable\"" => {
                unresolvable += 1;
                assert!(
                    ledger.charges().unwrap().len() <= 1,
                    "seed {seed}: never two"
                );
                assert!(gap >= 3000 - 1000, "seed {seed}: gap {gap}");
            }
            other => panic!("seed {seed}: ended in {other}"),
        }
        if slog[s_at - 1].0 == "\"sending\"" {
            assert_eq!(slog[s_at].0, r#"{"uncertain":"querying"}"#, "seed {seed}");
        }

        let tlog = tlog.lock().unwrap();
        let (_, ctx, _, _) = tlog.last().unwrap();
        assert_eq!(ctx["entered"], 1, "seed {seed}: busy's entry ran once");
        assert_eq!(ctx["fired"], 1, "seed {seed}: the delayed event fired once");
        // Process 1 wrote entries [0, t_at), process 2 the rest; the first
        // entry in busy (in either) says where the deadline is.
        let busy = tlog.iter().position(|e| e.0 == "\"busy\"").unwrap();
        let doc: Value = serde_json::from_str(&tlog[busy].3).unwrap();
        let due = deadline(&doc);
        assert_eq!(due, tlog[busy].2 + delay, "seed {seed}");
        let late = tlog.iter().position(|e| e.0 == "\"late\"").unwrap();
        assert_eq!(
            tlog.iter().filter(|e| e.0 == "\"late\"").count(),
            tlog.len() - late,
            "seed {seed}: late entered once and stayed"
        );
        let fired_wall = tlog[late].2;
        if late < t_at {
            before += 1;
            assert_eq!(fired_wall, due, "seed {seed}: fired in process 1");
        } else if due <= e2 {
            overdue += 1;
            assert_eq!(
                late, t_at,
                "seed {seed}: overdue fires in the restoring turn"
            );
            assert_eq!(fired_wall, e2, "seed {seed}");
        } else {
            pending += 1;
            assert_eq!(fired_wall, due, "seed {seed}: at its wall-clock deadline");
        }
    }
    eprintln!(
        "{SEEDS} seeds: the delayed event fired before the crash {before}, overdue at restore {overdue}, \
         pending at restore {pending}; crashes by submit state: {crashed_in:?}; \
         {unresolvable} unresolvable (the 3 s ran out while down), every other one charged once"
    );
    assert!(
        overdue > 0 && pending > 0,
        "both restore cases are exercised"
    );
    assert!(
        crashed_in.len() >= 3,
        "crashes in several submit states: {crashed_in:?}"
    );
}
