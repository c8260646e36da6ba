//! A trace with several JavaScript event loops (a page and a dedicated
//! worker, recorded by turno-js: `tests/data/record.sh`): each loop is
//! reconstructed apart, as if its events were the only ones.

use turno_trace::{read_all, Event, Index, Kind, Queue, World};

const TRACE: &str = include_str!("data/worker_messages.jsonl");

fn events() -> Vec<Event> {
    read_all(TRACE.as_bytes())
        .expect("the recorded trace reads")
        .1
}

fn task_ids(w: &World, l: u32) -> Vec<(u64, String)> {
    w.js_loop(l)
        .and_then(|js| js.queues.get(&Queue::Task))
        .map(|q| q.iter().map(|e| (e.id.0, e.label.clone())).collect())
        .unwrap_or_default()
}

/// At every step, loop `l` of the world equals loop `l` of a world that
/// saw only that loop's events: no loop's queue, stack or promise is
/// touched by another's events (their ids are per loop and do collide).
#[test]
fn each_loop_is_replayed_from_its_own_events_alone() {
    let events = events();
    let loops: std::collections::BTreeSet<u32> =
        events.iter().map(|e| e.loop_id.unwrap_or(0)).collect();
    assert_eq!(loops.into_iter().collect::<Vec<_>>(), [0, 1]);
    let mut all = World::new();
    let mut alone = [World::new(), World::new()];
    for e in &events {
        all.apply(e);
        let l = e.loop_id.unwrap_or(0);
        alone[l as usize].apply(e);
        for l in [0u32, 1] {
            assert_eq!(
                all.js_loop(l),
                alone[l as usize].js_loop(l),
                "loop {l} after seq {}",
                e.seq
            );
        }
    }
    // Both loops used task id 1 (the first message each received): folded
    // into one view, the second enqueue would have replaced the first.
    let ids = |l: u32| {
        events
            .iter()
            .filter(|e| e.loop_id == Some(l))
            .filter_map(|e| match &e.kind {
                Kind::Js(turno_trace::JsEvent::Enqueue {
                    queue: Queue::Task,
                    id,
                    ..
                }) => Some(id.0),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert!(ids(0).contains(&1) && ids(1).contains(&1));
}

/// The worker's two messages wait in its own task queue, not the page's;
/// its reply is a task in the page's queue.
#[test]
fn the_index_reconstructs_each_loop_at_a_step() {
    let index = Index::build(std::io::Cursor::new(TRACE)).unwrap();
    assert_eq!(index.marks().workers.len(), 1);
    let w = &index.marks().workers[0];
    assert_eq!((w.id, w.parent), (1, 0));
    assert_eq!(w.file, "l03_worker_messages.worker.js");
    // After seq 13 (step 14): both posted messages are queued in loop 1.
    let at14 = index.world_at(std::io::Cursor::new(TRACE), 14).unwrap();
    let msg = "message from loop 0".to_string();
    assert_eq!(task_ids(&at14, 1), [(1, msg.clone()), (2, msg)]);
    assert_eq!(task_ids(&at14, 0), []);
    // After seq 28 (step 29): the worker's first reply is queued in loop 0.
    let at29 = index.world_at(std::io::Cursor::new(TRACE), 29).unwrap();
    assert_eq!(task_ids(&at29, 0), [(1, "message from loop 1".to_string())]);
    assert!(at29.js_loop(2).is_none());
    // After seq 30 (step 31): each loop is in a task of its own at once.
    let at31 = index.world_at(std::io::Cursor::new(TRACE), 31).unwrap();
    assert_eq!(at31.js.stack, ["task: message from loop 1"]);
    assert_eq!(
        at31.js_loop(1).unwrap().stack,
        ["task: message from loop 0", "event listener: onmessage"]
    );
}
