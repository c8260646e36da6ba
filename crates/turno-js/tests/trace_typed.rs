//! Every trace the explorer writes is read by `turno_trace` as typed events
//! of known kinds, each naming its loop, and reconstructs without a problem:
//! the writer and the one reader of the family agree on every program of
//! the corpus (the workers of `html-live` included).

use std::io::Cursor;
use std::path::Path;

use turno_js::{run, Model, RunOptions};
use turno_trace::{Index, Kind, Reader};

#[test]
fn every_corpus_trace_reads_typed() {
    let mut checked = 0;
    for (dir, model) in [
        ("node", Model::Node),
        ("html", Model::Html),
        ("html-live", Model::Html),
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(dir);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "js"))
            .filter(|p| !p.to_string_lossy().ends_with(".worker.js"))
            .collect();
        files.sort();
        for path in files {
            let src = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let opts = RunOptions {
                trace: true,
                base_dir: Some(dir.clone()),
                ..RunOptions::new(model)
            };
            let report = match run(&src, &name, &opts) {
                Ok(r) => r,
                Err(e) => match e.partial_report() {
                    Some(r) => r.clone(),
                    None => panic!("{name}: {e}"),
                },
            };
            let text = report.trace.expect("traced").to_json_lines();
            let reader = Reader::new(text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
            for event in reader {
                let event = event.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(
                    !matches!(event.kind, Kind::Other(_)),
                    "{name}: kind unknown to turno-trace: {}",
                    event.kind_name()
                );
                assert!(
                    event.loop_id.is_some(),
                    "{name}: event {} without loop",
                    event.seq
                );
            }
            let index = Index::build(Cursor::new(&text)).unwrap();
            assert!(index.error().is_none(), "{name}: {:?}", index.error());
            let end = index.world_at(Cursor::new(&text), index.len()).unwrap();
            assert!(end.js.ended.is_some(), "{name}: no run_end");
            turno_js::Trace::from_json_lines(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked} programs");
}

/// The kinds, in order of first appearance, of a trace read back by
/// `turno_trace`'s reader, which must accept every line.
fn kinds_read_back(text: &str) -> Vec<String> {
    let reader = Reader::new(text.as_bytes()).expect("header");
    let mut kinds: Vec<String> = Vec::new();
    for event in reader {
        let event = event.expect("every line valid");
        let kind = event.kind_name();
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

/// The explorer records `turno_trace`'s typed events: a real program's trace,
/// written as JSON lines, reads back through `turno_trace`'s validating
/// reader without an error, as the same typed events, with the kinds the
/// program's steps make.
#[test]
fn a_recorded_trace_reads_back_as_the_typed_events_it_recorded() {
    let node = "\
const t = setTimeout(function never() {}, 50);
clearTimeout(t);
setTimeout(function later() { console.log('timer'); }, 5);
setImmediate(function imm() { console.log('immediate'); });
process.nextTick(function tick() {});
queueMicrotask(function micro() {});
Promise.resolve(1).then(function then1(v) { console.log('then', v); });
";
    let html = "\
requestAnimationFrame(function frame() { queueMicrotask(function m() {}); });
const c = new MessageChannel();
c.port1.onmessage = function onmsg() { console.error('message'); };
c.port2.postMessage(1);
document.body.animate([{ opacity: 0 }, { opacity: 1 }], 40);
";
    for (src, model, expected) in [
        (
            node,
            Model::Node,
            &[
                "stack_push",
                "enqueue",
                "cancel",
                "promise_observed",
                "promise",
                "stack_pop",
                "dequeue",
                "output",
                "phase",
                "time_advance",
                "run_end",
            ][..],
        ),
        (
            html,
            Model::Html,
            &[
                "dequeue",
                "stack_push",
                "enqueue",
                "animation_start",
                "stack_pop",
                "microtask_checkpoint",
                "output",
                "time_advance",
                "compositor_frame",
                "render_start",
                "render_end",
                "run_end",
            ][..],
        ),
    ] {
        let report = run(
            src,
            "t.js",
            &RunOptions {
                trace: true,
                ..RunOptions::new(model)
            },
        )
        .unwrap();
        let trace = report.trace.expect("traced");
        let text = trace.to_json_lines();
        let mut kinds = kinds_read_back(&text);
        kinds.sort();
        let mut want: Vec<String> = expected.iter().map(|k| k.to_string()).collect();
        want.sort();
        assert_eq!(kinds, want, "{model:?}");
        // Byte for byte: every line is turno_trace's serialisation of the
        // event the explorer recorded, and reads back as that event.
        let (header, events) = turno_trace::read_all(text.as_bytes()).unwrap();
        assert_eq!(header.format, turno_trace::Format::TurnoJs);
        assert_eq!(events, trace.events);
        for (line, e) in text.lines().skip(1).zip(&events) {
            assert_eq!(line, e.to_line());
            assert!(matches!(e.kind, Kind::Js(_)), "{line}");
        }
        assert_eq!(turno_js::Trace::from_json_lines(&text).unwrap(), trace);
    }
}
