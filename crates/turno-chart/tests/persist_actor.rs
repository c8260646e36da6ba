//! A chart actor persisted, dropped and restored: delayed events keep their
//! absolute deadlines on DetSystem (virtual time) and ThreadedSystem (real
//! time), and the restored configuration's entry actions do not run again.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use turno::{DetSystem, Props, System, ThreadedSystem};
use turno_chart::interpreter::{ChartActor, ChartMsg};
use turno_chart::persist::Persist;
use turno_chart::{load_json, stdlib, Event, Machine};

fn machine(delay_ms: u64) -> Arc<Machine<Value>> {
    Arc::new(
        load_json(
            &format!(
                r#"{{"id": "job", "initial": "idle", "context": {{"entered": 0}},
                "states": {{
                  "idle": {{"on": {{"GO": "busy"}}}},
                  "busy": {{"entry": {{"type": "inc", "params": {{"key": "entered"}}}},
                           "after": {{"{delay_ms}": "late"}}}},
                  "late": {{}}
                }}}}"#
            ),
            &stdlib::implementations(),
        )
        .unwrap(),
    )
}

/// (value, context, chart ms) after every macrostep.
type Seen = Arc<Mutex<Vec<(String, Value, u64)>>>;

fn actor(
    m: &Arc<Machine<Value>>,
    seen: &Seen,
    last: &Arc<Mutex<Option<String>>>,
) -> ChartActor<Value> {
    let (s, l, mm) = (seen.clone(), last.clone(), m.clone());
    ChartActor::new(m.clone()).on_persist(move |snap| {
        // `last` first: the threaded test waits on `seen` and then reads
        // `last`, which must already hold the snapshot it waited for.
        *l.lock().unwrap() = Some(Persist::new(&*mm).to_string(snap).unwrap());
        s.lock().unwrap().push((
            snap.value(&mm).to_json().to_string(),
            snap.context.clone(),
            snap.now_ms,
        ));
    })
}

fn restored(m: &Arc<Machine<Value>>, seen: &Seen, text: String) -> ChartActor<Value> {
    let mm = m.clone();
    let last = Arc::new(Mutex::new(None));
    actor(m, seen, &last).restoring(move |now| Persist::new(&*mm).restore(&text, now))
}

/// On DetSystem(`seed`): a chart sent GO runs `ran_ms`, its last snapshot
/// is kept, the actor is stopped and `gap_ms` pass with nobody alive; then
/// a chart restored from the snapshot is spawned and runs to idleness.
/// Returns the system and what the restored chart persisted.
fn det_restored(seed: u64, m: &Arc<Machine<Value>>, ran_ms: u64, gap_ms: u64) -> (DetSystem, Seen) {
    let seen: Seen = Arc::default();
    let last = Arc::new(Mutex::new(None));
    let mut sys = DetSystem::new(seed);
    let (m1, s1, l1) = (m.clone(), seen.clone(), last.clone());
    let a = sys
        .spawn(Props::new(), move || actor(&m1, &s1, &l1))
        .unwrap();
    sys.run_until_idle().unwrap();
    assert!(a.try_send(ChartMsg::Event(Event::new("GO"))).is_enqueued());
    sys.run_until_idle().unwrap();
    sys.advance(Duration::from_millis(ran_ms)).unwrap();
    let text = last.lock().unwrap().clone().unwrap();
    sys.stop(a.id());
    sys.run_until_idle().unwrap();
    sys.advance(Duration::from_millis(gap_ms)).unwrap(); // nobody alive
    let after: Seen = Arc::default();
    let (m2, s2) = (m.clone(), after.clone());
    let mut text = Some(text);
    sys.spawn(Props::new(), move || {
        restored(&m2, &s2, text.take().unwrap())
    })
    .unwrap();
    sys.run_until_idle().unwrap();
    (sys, after)
}

#[test]
fn det_overdue_event_fires_at_once_after_restore_and_entry_does_not_rerun() {
    let m = machine(5000);
    // Persisted with 2 s left, restored 10 s later.
    let (_, after) = det_restored(7, &m, 3000, 10_000);
    let after = after.lock().unwrap().clone();
    assert_eq!(after.len(), 1, "{after:?}");
    let (value, ctx, _) = &after[0];
    assert_eq!(value, "\"late\"");
    assert_eq!(
        ctx["entered"], 1,
        "busy's entry ran once, before the persist"
    );
}

#[test]
fn det_pending_event_fires_at_its_original_deadline() {
    let m = machine(5000);
    // Restored with 1 s left.
    let (mut sys, after) = det_restored(3, &m, 3000, 1000);
    assert_eq!(after.lock().unwrap()[0].0, "\"busy\"");
    sys.advance(Duration::from_millis(999)).unwrap();
    assert_eq!(after.lock().unwrap().len(), 1, "not yet");
    sys.advance(Duration::from_millis(1)).unwrap();
    let got = after.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].0, "\"late\"");
    assert_eq!(got[1].2, 5000, "at the original deadline");
    assert_eq!(got[1].1["entered"], 1);
}

#[test]
fn threaded_overdue_event_fires_at_once_after_restore() {
    let m = machine(400);
    let seen: Seen = Arc::default();
    let last = Arc::new(Mutex::new(None));
    let sys = ThreadedSystem::new();
    let (m1, s1, l1) = (m.clone(), seen.clone(), last.clone());
    let a = sys
        .spawn(Props::new(), move || actor(&m1, &s1, &l1))
        .unwrap();
    while seen.lock().unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(a.try_send(ChartMsg::Event(Event::new("GO"))).is_enqueued());
    while seen.lock().unwrap().len() < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let text = last.lock().unwrap().clone().unwrap();
    let persisted: Value = serde_json::from_str(&text).unwrap();
    let due = persisted["scheduled"][0]["due_ms"].as_u64().unwrap();
    sys.stop(a.id());
    std::thread::sleep(Duration::from_millis(600)); // nobody alive, past the deadline
    let after: Seen = Arc::default();
    let (m2, s2) = (m.clone(), after.clone());
    let mut text = Some(text);
    sys.spawn(Props::new(), move || {
        restored(&m2, &s2, text.take().unwrap())
    })
    .unwrap();
    let spawned = Instant::now();
    let deadline = spawned + Duration::from_secs(5);
    while after.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let waited = spawned.elapsed();
    let got = after.lock().unwrap().clone();
    // Restored after its deadline: it fires in the restoring turn, not
    // 400 ms later, and busy's entry does not run again.
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "\"late\"", "{got:?}");
    assert!(got[0].2 >= due, "{got:?} due {due}");
    assert!(
        waited < Duration::from_millis(300),
        "restarted the delay? {waited:?}"
    );
    assert_eq!(got[0].1["entered"], 1);
    sys.shutdown(Duration::from_secs(2)).unwrap();
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Checkout {
    card: turno_chart::volatile::Volatile<String>,
    last4: String,
}

const CHECKOUT: &str = r#"{"id": "checkout", "initial": "details", "context": {"card": null, "last4": ""},
  "states": {
    "details": {"on": {"CARD": {"target": "review", "actions": "takeCard"}}},
    "review": {"on": {"CONFIRM": [{"guard": "cardMissing", "target": "details"}, {"target": "paying"}]}},
    "paying": {"after": {"100": "paid"}},
    "paid": {"type": "final"}
  }}"#;

/// The secret-bytes test: a snapshot serialised after every macrostep of a
/// run never holds the card number; after a restore the guard sees it is
/// missing and asks for it again.
#[test]
fn volatile_card_number_never_reaches_a_snapshot_and_a_guard_sees_it_missing() {
    const SECRET: &str = "4111111111111111";
    let imp = turno_chart::Implementations::<Checkout>::new()
        .assign("takeCard", |c, e, _| {
            let n = e
                .get("number")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            c.last4 = n[n.len().saturating_sub(4)..].to_string();
            c.card = turno_chart::volatile::Volatile::new(n);
        })
        .guard("cardMissing", |c, _, _| c.card.is_missing());
    let m: Arc<Machine<Checkout>> = Arc::new(load_json(CHECKOUT, &imp).unwrap());
    let written: Arc<Mutex<Vec<String>>> = Arc::default();
    let values: Arc<Mutex<Vec<String>>> = Arc::default();
    let spawn_with = |sys: &mut DetSystem, text: Option<String>| {
        let (mm, w, v) = (m.clone(), written.clone(), values.clone());
        let mut text = text;
        sys.spawn(Props::new(), move || {
            let (m2, w2, v2) = (mm.clone(), w.clone(), v.clone());
            let a = ChartActor::new(mm.clone()).on_persist(move |snap| {
                w2.lock()
                    .unwrap()
                    .push(Persist::new(&*m2).to_string(snap).unwrap());
                v2.lock()
                    .unwrap()
                    .push(snap.value(&m2).to_json().to_string());
            });
            match text.take() {
                Some(t) => {
                    let m3 = mm.clone();
                    a.restoring(move |now| Persist::new(&*m3).restore(&t, now))
                }
                None => a,
            }
        })
        .unwrap()
    };
    let mut sys = DetSystem::new(11);
    let a = spawn_with(&mut sys, None);
    sys.run_until_idle().unwrap();
    let card = Event::with_data("CARD", serde_json::json!({"number": SECRET}));
    assert!(a.try_send(ChartMsg::Event(card)).is_enqueued());
    sys.run_until_idle().unwrap();
    let at_review = written.lock().unwrap().last().cloned().unwrap();
    sys.stop(a.id());
    sys.run_until_idle().unwrap();
    // Restored: the card number is gone, so CONFIRM asks for it again.
    let b = spawn_with(&mut sys, Some(at_review));
    sys.run_until_idle().unwrap();
    assert!(b
        .try_send(ChartMsg::Event(Event::new("CONFIRM")))
        .is_enqueued());
    sys.run_until_idle().unwrap();
    let card = Event::with_data("CARD", serde_json::json!({"number": SECRET}));
    assert!(b.try_send(ChartMsg::Event(card)).is_enqueued());
    assert!(b
        .try_send(ChartMsg::Event(Event::new("CONFIRM")))
        .is_enqueued());
    sys.run_until_idle().unwrap();
    sys.advance(Duration::from_millis(100)).unwrap();
    let values = values.lock().unwrap().clone();
    assert_eq!(
        values,
        [
            "\"details\"",
            "\"review\"",
            "\"review\"",
            "\"details\"",
            "\"review\"",
            "\"paying\"",
            "\"paid\""
        ]
    );
    let written = written.lock().unwrap().clone();
    assert_eq!(written.len(), values.len());
    for (i, text) in written.iter().enumerate() {
        assert!(!text.contains(SECRET), "step {i}: {text}");
        assert!(!text.contains("41111111"), "step {i}: {text}");
    }
    assert!(written.iter().any(|t| t.contains("\"last4\":\"1111\"")));
}
