//! A recorded chart drawn from its trace is the drawing `turno chart svg`
//! makes of the machine itself (guards, `after` delays, `always`, deep
//! history, initial arrows, final states), and the transitions the trace
//! says were taken are the very ones the chart took, where the
//! configuration alone cannot tell them apart.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turno::trace::JsonLinesSink;
use turno::{DetSystem, Props, System};
use turno_chart::interpreter::{ChartActor, ChartMsg};
use turno_chart::svg::{layout, Diagram, Highlight};
use turno_chart::{load_json, stdlib, Event, Machine};
use turno_inspect::Loaded;
use turno_trace::{ActorEvent, ActorId, Index, Kind};

/// A door: eventless start, two `CLOSE` transitions from `open` to
/// `closed` that differ only by guard (the second is taken), a
/// self-transition, an `after` delay, a deep history, a final state.
const DOOR: &str = r#"{"id": "door", "initial": "boot", "context": {"mode": "loud", "n": 0},
  "states": {
    "boot": {"always": "open"},
    "open": {"on": {
      "CLOSE": [
        {"target": "closed", "guard": {"type": "ctxEq", "params": {"key": "mode", "value": "quiet"}}},
        {"target": "closed", "actions": [{"type": "calc", "params": {"key": "n", "op": "add", "value": 1}}]}],
      "PING": {"target": "open", "reenter": true},
      "BACK": "closed.hist",
      "LEAVE": "gone"}},
    "closed": {"initial": "idle", "on": {"OPEN": "open"}, "states": {
      "idle": {"after": {"100": "locked"}},
      "locked": {"initial": "bolted", "states": {"bolted": {}, "chained": {}}},
      "hist": {"type": "history", "history": "deep"}}},
    "gone": {"type": "final"}}}"#;

/// The events sent, 200 ms apart (the `after` fires between the first two).
const EVENTS: [&str; 6] = ["PING", "CLOSE", "OPEN", "BACK", "OPEN", "LEAVE"];

/// Runs the door under the deterministic scheduler with a trace; returns
/// the trace's file and the chart actor's id.
fn record(m: &Arc<Machine<serde_json::Value>>, name: &str) -> (PathBuf, u64) {
    let path = std::env::temp_dir().join(format!("turno-{name}-{}.jsonl", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let mut sys = DetSystem::builder()
        .trace(JsonLinesSink::new(std::io::BufWriter::new(file)))
        .build();
    let machine = m.clone();
    let chart = sys
        .spawn(Props::new().name("door"), move || {
            ChartActor::new(machine.clone())
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    for e in EVENTS {
        sys.advance(Duration::from_millis(200)).unwrap();
        let _ = chart.try_send(ChartMsg::Event(Event::new(e)));
        sys.run_until_idle().unwrap();
    }
    sys.flush_trace();
    (path, chart.id().as_u64())
}

fn body(loaded: Loaded, path: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, turno_inspect::router(Arc::new(loaded)))
                .await
                .unwrap()
        });
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    });
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out.split_once("\r\n\r\n").unwrap().1.to_string()
}

#[test]
fn a_recorded_chart_is_drawn_as_turno_chart_svg_draws_the_machine() {
    let m = Arc::new(load_json(DOOR, &stdlib::implementations()).unwrap());
    let (path, actor) = record(&m, "chart-picture");
    let loaded = Loaded::open(&path, None).unwrap();
    let last = loaded.index().len();
    let recorded = body(loaded, &format!("/api/chart.svg?k={last}&actor={actor}"));
    let _ = std::fs::remove_file(&path);
    let direct = layout(&Diagram::from_machine(&m))
        .unwrap()
        .svg(&Highlight::default());
    // What the picture must show, so that the equality below is about
    // something.
    assert!(direct.contains("CLOSE [ctxEq]"), "a guard label");
    assert!(direct.contains("CLOSE / calc"), "an action label");
    assert!(direct.contains("after 100ms"), "a delay label");
    assert!(direct.contains(">always<"), "an eventless arrow");
    assert!(direct.contains(">H*<"), "deep history");
    assert!(direct.contains("final-mark"), "a final state");
    // The root's initial (boot), closed's (idle) and locked's (bolted).
    assert_eq!(direct.matches(r#"<g class="initial">"#).count(), 3);
    assert_eq!(recorded, direct);
}

/// A machine whose top-level states are regions: its root is drawn as a
/// parallel state, both in `turno chart svg` and from the trace.
const REGIONS: &str = r#"{"id": "desk", "type": "parallel", "states": {
    "lamp": {"initial": "off", "states": {
      "off": {"on": {"FLIP": "on"}}, "on": {"on": {"FLIP": "off"}},
      "was": {"type": "history"}}},
    "fan": {"initial": "still", "states": {
      "still": {"on": {"SPIN": {"target": "spinning", "guard": "pass"}}},
      "spinning": {"after": {"short": "still"}}}}}}"#;

#[test]
fn a_parallel_root_is_drawn_as_the_machine_draws_it() {
    let m = Arc::new(load_json(REGIONS, &stdlib::implementations()).unwrap());
    let path =
        std::env::temp_dir().join(format!("turno-chart-regions-{}.jsonl", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let mut sys = DetSystem::builder()
        .trace(JsonLinesSink::new(std::io::BufWriter::new(file)))
        .build();
    let machine = m.clone();
    let chart = sys
        .spawn(Props::new().name("desk"), move || {
            ChartActor::new(machine.clone())
        })
        .unwrap();
    sys.run_until_idle().unwrap();
    let _ = chart.try_send(ChartMsg::Event(Event::new("FLIP")));
    sys.run_until_idle().unwrap();
    sys.flush_trace();
    let loaded = Loaded::open(&path, None).unwrap();
    let last = loaded.index().len();
    let actor = chart.id().as_u64();
    let recorded = body(loaded, &format!("/api/chart.svg?k={last}&actor={actor}"));
    let _ = std::fs::remove_file(&path);
    let direct = layout(&Diagram::from_machine(&m))
        .unwrap()
        .svg(&Highlight::default());
    assert!(
        direct.contains(r#"class="state parallel" data-state="desk""#),
        "{direct}"
    );
    assert!(direct.contains(">H<"), "shallow history");
    assert!(direct.contains("SPIN [pass]"));
    assert!(direct.contains("after short"));
    assert_eq!(recorded, direct);
}

#[test]
fn the_trace_names_each_transition_taken_by_its_place_in_the_definition() {
    let m = Arc::new(load_json(DOOR, &stdlib::implementations()).unwrap());
    let (path, actor) = record(&m, "chart-taken");
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let index = Index::build_with(Cursor::new(&text), 5).unwrap();
    // The definition's index of the transition from `source` on `event`
    // with or without a guard, found in the machine itself.
    let find = |source: &str, event: Option<&str>, guarded: bool| -> u32 {
        let found: Vec<usize> = m
            .transitions()
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                *m.state(t.source).id == *source
                    && t.event.as_deref() == event
                    && t.guard.is_some() == guarded
            })
            .map(|(i, _)| i)
            .collect();
        assert_eq!(found.len(), 1, "{source} {event:?}");
        found[0] as u32
    };
    let close = find("door.open", Some("CLOSE"), false);
    assert_eq!(
        find("door.open", Some("CLOSE"), true) + 1,
        close,
        "the guarded CLOSE comes first, same source, target and event"
    );
    // The world after the turn that handled each external event.
    let events: Vec<_> = turno_trace::Reader::new(text.as_bytes())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut taken_after = Vec::new();
    let mut active_after = Vec::new();
    let mut current = None;
    for (k, e) in events.iter().enumerate() {
        match &e.kind {
            Kind::Actor(ActorEvent::ChartEvent { event, origin, .. })
                if *origin == turno_trace::actor::EventOrigin::External =>
            {
                current = Some(event.clone());
            }
            Kind::Actor(ActorEvent::TurnEnd { actor: a, .. }) if a.0 == actor => {
                if let Some(ev) = current.take() {
                    let w = index.world_at(Cursor::new(&text), k as u64 + 1).unwrap();
                    let c = &w.charts[&ActorId(actor)];
                    taken_after.push((ev, c.taken.clone()));
                    active_after.push(c.active.clone());
                }
            }
            _ => {}
        }
    }
    let after = m
        .transitions()
        .iter()
        .position(|t| t.delay_label.is_some())
        .unwrap() as u32;
    let open = find("door.closed", Some("OPEN"), false);
    let want = vec![
        // The start: the eventless transition out of boot.
        (
            "xstate.init".to_string(),
            vec![find("door.boot", None, false)],
        ),
        // A self-transition: the configuration is the same before and
        // after.
        (
            "PING".to_string(),
            vec![find("door.open", Some("PING"), false)],
        ),
        ("CLOSE".to_string(), vec![close]),
        (
            m.transitions()[after as usize]
                .event
                .as_deref()
                .unwrap()
                .to_string(),
            vec![after],
        ),
        ("OPEN".to_string(), vec![open]),
        (
            "BACK".to_string(),
            vec![find("door.open", Some("BACK"), false)],
        ),
        ("OPEN".to_string(), vec![open]),
        (
            "LEAVE".to_string(),
            vec![find("door.open", Some("LEAVE"), false)],
        ),
    ];
    assert_eq!(taken_after, want);
    // BACK went through the deep history back to where the door was
    // when OPEN left: locked's initial child, bolted.
    assert!(active_after[3].contains("door.closed.locked.bolted"));
    assert!(active_after[5].contains("door.closed.locked.bolted"));
    assert!(active_after[7].contains("door.gone"));
}
