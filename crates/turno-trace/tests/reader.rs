//! The reader against real traces and against every kind of broken one.

use std::io::Cursor;

use turno_trace::{
    read_all, ActorEvent, ActorId, Event, Format, Header, Index, Kind, Model, Policy, Problem,
    Queue, Reader,
};

const HTML: &str = include_str!("data/html_raf.jsonl");
const NODE: &str = include_str!("data/node_combinators.jsonl");

fn err(text: &str) -> turno_trace::ReadError {
    match read_all(text.as_bytes()) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e,
    }
}

const H: &str = "{\"format\":\"turno-trace\",\"version\":1}\n";

#[test]
fn real_js_traces_read_typed_and_round_trip() {
    for text in [HTML, NODE] {
        let (header, events) = read_all(text.as_bytes()).unwrap();
        assert_eq!(header.format, Format::TurnoJs);
        assert!(events.iter().all(|e| matches!(e.kind, Kind::Js(_))));
        // Writing the typed events and reading them back gives the same events.
        let mut again = header.to_line();
        again.push('\n');
        for e in &events {
            again.push_str(&e.to_line());
            again.push('\n');
        }
        let (h2, e2) = read_all(again.as_bytes()).unwrap();
        assert_eq!((h2, e2), (header, events));
    }
    let (header, _) = read_all(HTML.as_bytes()).unwrap();
    assert_eq!(header, Header::js(Model::Html, "h08_raf_microtasks.js"));
}

#[test]
fn html_trace_reconstructs_queues_and_promises() {
    let index = Index::build_with(Cursor::new(HTML), 4).unwrap();
    assert!(index.error().is_none());
    // After seq 3: two animation frame callbacks queued, in order.
    let w = index.world_at(Cursor::new(HTML), 4).unwrap();
    let raf: Vec<u64> = w.js.queues[&Queue::AnimationFrame]
        .iter()
        .map(|e| e.id.0)
        .collect();
    assert_eq!(raf, [1, 2]);
    assert_eq!(w.js.stack, ["script"]);
    // After seq 9: promise 2 pending with no reactions, promise 1 handled.
    let w = index.world_at(Cursor::new(HTML), 10).unwrap();
    let p2 = &w.js.promises[&turno_trace::PromiseId(2)];
    assert_eq!(p2.state, Some(turno_trace::js::PromiseState::Pending));
    assert_eq!(
        (p2.fulfill_reactions, p2.is_handled),
        (Some(0), Some(false))
    );
    assert_eq!(
        w.js.promises[&turno_trace::PromiseId(1)].is_handled,
        Some(true)
    );
    assert_eq!(w.js.queues[&Queue::Microtask].len(), 1);
    assert!(w.js.js_stack[0].contains("h08_raf_microtasks.js:10:23"));
    // The render step is marked and the console has what was printed.
    assert_eq!(index.marks().renders.len(), 1);
    let end = index.world_at(Cursor::new(HTML), index.len()).unwrap();
    assert_eq!(&*end.console.lines[0].1, "script microtask\n");
    assert_eq!(end.js.ended.map(|e| e.0), Some(0));
}

#[test]
fn header_problems_name_the_field() {
    let e = err("");
    assert_eq!((e.line, e.problem), (1, Problem::Header));
    let e = err("{\"format\":\"other\",\"version\":1}\n");
    assert_eq!((e.line, e.field.as_deref()), (1, Some("format")));
    let e = err("{\"format\":\"turno-trace\",\"version\":2}\n");
    assert_eq!(e.field.as_deref(), Some("version"));
    assert!(e.to_string().contains("version 2"), "{e}");
    let e = err("{\"format\":\"turno-js-trace\",\"version\":1,\"file\":\"a.js\"}\n");
    assert_eq!(e.field.as_deref(), Some("model"));
    let e = err("[1,2]\n");
    assert_eq!(e.problem, Problem::Header);
}

#[test]
fn event_problems_name_line_and_field() {
    let cases: &[(&str, u64, Option<&str>, Problem)] = &[
        ("{\"seq\":0,\"t_ns\":0,\"kind\":\"reject\"}", 2, Some("actor"), Problem::Field),
        ("{\"seq\":0,\"t_ns\":0,\"kind\":\"reject\",\"actor\":\"x\"}", 2, Some("actor"), Problem::Field),
        ("{\"seq\":0,\"t_ns\":0,\"kind\":\"enqueue\",\"actor\":1,\"lane\":\"side\",\"depth\":1}", 2, Some("lane"), Problem::Field),
        ("{\"seq\":0,\"t_ns\":0,\"kind\":\"spawn\",\"actor\":1,\"name\":\"a\",\"policy\":\"keep-most(3)\"}", 2, Some("policy"), Problem::Field),
        ("{\"seq\":0,\"t_ns\":-1,\"kind\":\"reject\",\"actor\":1}", 2, Some("t_ns"), Problem::Field),
        ("{\"t_ns\":0,\"kind\":\"reject\",\"actor\":1}", 2, Some("seq"), Problem::Field),
        ("{\"seq\":0,\"t_ns\":0,\"kind\":7}", 2, Some("kind"), Problem::Field),
        ("{\"seq\":0,\"t_ns\":0", 2, None, Problem::Syntax),
        ("\"just a string\"", 2, None, Problem::Syntax),
        ("{\"seq\":1,\"t_ns\":0,\"kind\":\"reject\",\"actor\":1}", 2, Some("seq"), Problem::Seq),
        (
            "{\"seq\":0,\"t_ns\":5,\"kind\":\"reject\",\"actor\":1}\n{\"seq\":1,\"t_ns\":4,\"kind\":\"reject\",\"actor\":1}",
            3,
            Some("t_ns"),
            Problem::Time,
        ),
        (
            "{\"seq\":0,\"t_ns\":0,\"kind\":\"reject\",\"actor\":1}\n{\"seq\":0,\"t_ns\":0,\"kind\":\"reject\",\"actor\":1}",
            3,
            Some("seq"),
            Problem::Seq,
        ),
    ];
    for (body, line, field, problem) in cases {
        let e = err(&format!("{H}{body}\n"));
        assert_eq!(
            (e.line, e.field.as_deref(), e.problem),
            (*line, *field, *problem),
            "{body}: {e}"
        );
    }
}

#[test]
fn non_utf8_and_deep_nesting_are_errors_not_panics() {
    let mut bytes = H.as_bytes().to_vec();
    bytes.extend_from_slice(b"{\"seq\":0,\"t_ns\":0,\"kind\":\"note\",\"text\":\"\xff\"}\n");
    let e = read_all(&bytes).unwrap_err();
    assert_eq!((e.line, e.problem), (2, Problem::Syntax));
    let deep = format!(
        "{H}{{\"seq\":0,\"t_ns\":0,\"kind\":\"x\",\"v\":{}{}}}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let e = read_all(deep.as_bytes()).unwrap_err();
    assert_eq!(e.problem, Problem::Syntax);
    // An unknown field of a known kind, nested too deep (the browser
    // test's hostile trace): the same error, not skipped.
    let deep = format!(
        "{H}{{\"seq\":0,\"t_ns\":0,\"kind\":\"note\",\"text\":\"x\",\"deep\":{}{}}}\n",
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    let e = read_all(deep.as_bytes()).unwrap_err();
    assert_eq!((e.line, e.problem), (2, Problem::Syntax));
    assert!(e.message.contains("recursion limit exceeded"), "{e}");
}

#[test]
fn unknown_kinds_and_fields_are_skipped_not_errors() {
    let text = format!(
        "{H}{{\"seq\":0,\"t_ns\":0,\"kind\":\"from_the_future\",\"x\":1}}\n\
         {{\"seq\":1,\"t_ns\":0,\"kind\":\"spawn\",\"actor\":1,\"name\":\"a\",\"parent\":0,\"policy\":\"reject(3)\",\"new\":true}}\n"
    );
    let mut r = Reader::new(text.as_bytes()).unwrap();
    let first = r.next().unwrap().unwrap();
    assert!(matches!(&first.kind, Kind::Other(o) if o.kind == "from_the_future"));
    let second = r.next().unwrap().unwrap();
    assert_eq!(
        second.kind,
        Kind::Actor(ActorEvent::Spawn {
            actor: ActorId(1),
            name: "a".into(),
            path: None,
            parent: Some(ActorId(0)),
            policy: Policy::Reject(3),
        })
    );
    assert!(r.next().is_none());
    assert_eq!(r.unknown_kinds(), 1);
}

#[test]
fn an_index_keeps_the_valid_prefix_and_the_error() {
    let text = format!(
        "{H}{{\"seq\":0,\"t_ns\":0,\"kind\":\"reject\",\"actor\":1}}\n{{\"seq\":5,\"t_ns\":0,\"kind\":\"reject\",\"actor\":1}}\n"
    );
    let index = Index::build(Cursor::new(&text)).unwrap();
    assert_eq!(index.len(), 1);
    assert_eq!(index.error().map(|e| e.line), Some(3));
    let w = index.world_at(Cursor::new(&text), 99).unwrap();
    assert_eq!(w.totals.rejected, 1);
}

#[test]
fn the_runtime_format_matches_its_document() {
    // The examples of docs/trace-format.md, byte for byte.
    let e = Event::new(
        12,
        10_000_000,
        Kind::Actor(ActorEvent::Enqueue {
            actor: ActorId(3),
            lane: turno_trace::Lane::User,
            depth: 1,
        }),
    );
    assert_eq!(
        e.to_line(),
        r#"{"seq":12,"t_ns":10000000,"kind":"enqueue","actor":3,"lane":"user","depth":1}"#
    );
    assert_eq!(
        Header::turno().to_line(),
        r#"{"format":"turno-trace","version":1}"#
    );
}

mod any_bytes {
    use std::io::Cursor;

    use proptest::prelude::*;
    use turno_trace::{Index, Reader};

    const SEED: &str = include_str!("data/node_combinators.jsonl");

    fn exercise(data: &[u8]) {
        if let Ok(reader) = Reader::new(data) {
            for event in reader {
                if let Err(e) = event {
                    assert!(e.line >= 2, "{e}");
                    break;
                }
            }
        }
        if let Ok(index) = Index::build_with(Cursor::new(data), 3) {
            let n = index.len();
            for k in [0, n / 2, n] {
                let w = index.world_at(Cursor::new(data), k).unwrap();
                let _ = w.wait_for();
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..400)) {
            exercise(&data);
        }

        #[test]
        fn mutated_real_traces_never_panic(at in 0usize..SEED.len(), len in 0usize..40, with in prop::collection::vec(any::<u8>(), 0..8)) {
            let mut data = SEED.as_bytes().to_vec();
            let end = (at + len).min(data.len());
            data.splice(at..end, with);
            exercise(&data);
        }
    }
}

/// A trace made as it is read, without end: the header, then `line(n)` for
/// event n; counts the bytes handed out.
struct Endless {
    line: fn(u64) -> Vec<u8>,
    next: u64,
    pending: Vec<u8>,
    at: usize,
    handed_out: std::rc::Rc<std::cell::Cell<u64>>,
}

impl Endless {
    fn new(line: fn(u64) -> Vec<u8>) -> (Self, std::rc::Rc<std::cell::Cell<u64>>) {
        let handed_out = std::rc::Rc::new(std::cell::Cell::new(0));
        let src = Endless {
            line,
            next: 0,
            pending: b"{\"format\":\"turno-js-trace\",\"version\":1,\"model\":\"node\",\"file\":\"endless.js\"}\n".to_vec(),
            at: 0,
            handed_out: handed_out.clone(),
        };
        (src, handed_out)
    }
}

impl std::io::Read for Endless {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.pending.len() {
            self.pending = (self.line)(self.next);
            self.next += 1;
            self.at = 0;
        }
        let n = out.len().min(self.pending.len() - self.at);
        out[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        self.handed_out.set(self.handed_out.get() + n as u64);
        Ok(n)
    }
}

#[test]
fn the_reader_streams_a_trace_without_end_in_bounded_memory() {
    // A reader that held the trace would never return from an endless one;
    // this one hands out each event as its line is read, and has read no
    // more than its buffer ahead of the last line it decoded.
    let (src, handed_out) = Endless::new(|n| {
        format!("{{\"seq\":{n},\"t_ns\":{n},\"kind\":\"output\",\"stream\":\"stdout\",\"text\":\"line {n}\\n\"}}\n")
            .into_bytes()
    });
    let reader = Reader::new(std::io::BufReader::with_capacity(8192, src)).unwrap();
    let mut consumed = 0u64;
    let header = b"{\"format\":\"turno-js-trace\",\"version\":1,\"model\":\"node\",\"file\":\"endless.js\"}\n".len() as u64;
    for (n, e) in reader.take(200_000).enumerate() {
        let e = e.unwrap();
        assert_eq!(e.seq, n as u64);
        consumed += format!("{{\"seq\":{n},\"t_ns\":{n},\"kind\":\"output\",\"stream\":\"stdout\",\"text\":\"line {n}\\n\"}}\n").len() as u64;
        if n % 10_000 == 0 {
            let ahead = handed_out.get() - header - consumed;
            assert!(ahead <= 8192, "read {ahead} bytes ahead at event {n}");
        }
    }
}

#[test]
fn an_endless_line_is_refused_after_the_line_limit() {
    let (src, handed_out) = Endless::new(|_| vec![b'a'; 64 << 10]);
    let mut reader = Reader::new(std::io::BufReader::new(src)).unwrap();
    let e = reader.next().unwrap().unwrap_err();
    assert_eq!((e.line, e.problem), (2, Problem::Syntax));
    assert!(e.message.contains("line longer than"), "{e}");
    assert!(handed_out.get() <= (turno_trace::reader::MAX_LINE + (128 << 10)) as u64);
}
