//! The fast decoder against the checked one (the reference): on every line
//! of the recorded traces and of one line per kind of both families, and on
//! those lines edited (fields deleted, repeated, moved, renamed, given other
//! values; bytes spliced in), whatever the fast decoder accepts the checked
//! one accepts with the same event.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use proptest::prelude::*;

use super::decode;
use crate::event::{Event, Format};
use crate::reader::{parse_event_checked, ACTOR_KINDS, JS_KINDS};

const JS: &[&str] = &[
    include_str!("../../tests/data/every_kind_js.jsonl"),
    include_str!("../../tests/data/node_combinators.jsonl"),
    include_str!("../../tests/data/html_raf.jsonl"),
    include_str!("../../tests/data/html_anim_input.jsonl"),
    include_str!("../../tests/data/worker_messages.jsonl"),
];
const ACTOR: &[&str] = &[
    include_str!("../../tests/data/every_kind_actor.jsonl"),
    include_str!("../../tests/data/overload_keep_oldest.jsonl"),
    include_str!("../../tests/data/chart_crossing.jsonl"),
    include_str!("../../tests/data/cluster_sim.jsonl"),
];

/// Every event line of the traces above (headers left out), each kind's
/// lines first as they come, at most `per_kind` lines of each kind.
fn lines(per_kind: usize) -> Vec<(Format, &'static str)> {
    let mut seen = std::collections::HashMap::<(Format, String), usize>::new();
    let mut v = Vec::new();
    for (format, texts) in [(Format::TurnoJs, JS), (Format::Turno, ACTOR)] {
        for text in texts {
            for l in text.lines().skip(1) {
                let kind = kind_of(l);
                let n = seen.entry((format, kind)).or_default();
                if *n < per_kind {
                    *n += 1;
                    v.push((format, l));
                }
            }
        }
    }
    v
}

fn kind_of(line: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["kind"].as_str().unwrap().to_owned()
}

fn checked(format: Format, bytes: &[u8]) -> Option<Event> {
    parse_event_checked(format, bytes, 1).ok()
}

/// What the property is: the fast decoder never decides differently.
fn agree(format: Format, bytes: &[u8]) -> Result<bool, String> {
    match decode(format, bytes) {
        None => Ok(false),
        Some(fast) => match parse_event_checked(format, bytes, 1) {
            Ok(c) if c == fast => Ok(true),
            other => Err(format!(
                "{}\nfast:    {fast:?}\nchecked: {other:?}",
                String::from_utf8_lossy(bytes)
            )),
        },
    }
}

#[test]
fn the_samples_have_every_kind_as_the_writer_writes_it() {
    // The cluster's kinds are sampled from the simulated cluster's
    // recorded trace, as its writer wrote them.
    for (format, texts, kinds) in [
        (Format::TurnoJs, &[JS[0]][..], JS_KINDS),
        (Format::Turno, &[ACTOR[0], ACTOR[3]][..], ACTOR_KINDS),
    ] {
        let mut have = BTreeSet::new();
        for l in texts.iter().flat_map(|t| t.lines().skip(1)) {
            let e = checked(format, l.as_bytes()).unwrap_or_else(|| panic!("{l}"));
            // Written back byte for byte: the samples are in the writer's
            // shape (field order, what is left out when absent).
            assert_eq!(e.to_line(), l);
            have.insert(e.kind_name());
        }
        let want: BTreeSet<String> = kinds.iter().map(|k| k.to_string()).collect();
        assert_eq!(have, want, "{format:?}");
    }
}

#[test]
fn the_fast_path_takes_every_line_of_the_real_traces() {
    for (format, l) in lines(usize::MAX) {
        assert_eq!(agree(format, l.as_bytes()), Ok(true), "{l}");
    }
}

/// A flat JSON object line as its `"key":value` pairs, in order.
fn pairs(line: &str) -> Vec<(String, String)> {
    let inner = &line[1..line.len() - 1];
    let (mut out, mut depth, mut in_str, mut esc, mut start) = (Vec::new(), 0, false, false, 0);
    for (i, c) in inner.char_indices() {
        if in_str {
            match c {
                _ if esc => esc = false,
                '\\' => esc = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&inner[start..]);
    out.into_iter()
        .map(|p| {
            let (k, v) = p.split_once("\":").unwrap();
            (k[1..].to_owned(), v.to_owned())
        })
        .collect()
}

fn join(pairs: &[(String, String)]) -> String {
    let body: Vec<String> = pairs.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", body.join(","))
}

/// Values of other types and shapes, and values other fields take.
const VALUES: &[&str] = &[
    "null",
    "0",
    "1",
    "-1",
    "-0",
    "1.5",
    "1.0",
    "1e2",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "\"\"",
    "\"x\"",
    "\"\\u0041\"",
    "\"user\"",
    "\"keep-newest(2)\"",
    "\"timers\"",
    "\"enqueue\"",
    "[]",
    "[\"a\"]",
    "[1]",
    "[{\"animation\":1,\"label\":\"a\"}]",
    "{}",
    "{\"id\":\"s\",\"kind\":\"atomic\"}",
    "true",
    "false",
    // What serde_json skips without the checks it makes when it parses.
    "1e400",
    "\"\\ud800\"",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "[{\"id\":\"s\",\"parent\":null,\"kind\":\"atomic\",\"x\":1e400}]",
    "[{\"source\":\"s\",\"event\":null,\"targets\":[],\"x\":\"\\ud800\"}]",
    "[{\"animation\":1,\"label\":\"a\",\"x\":1e400}]",
];

/// Envelope keys, keys of some kinds, an unknown key, an escaped one.
const KEYS: &[&str] = &[
    "seq",
    "t_ns",
    "kind",
    "js_stack",
    "loop",
    "actor",
    "depth",
    "label",
    "queue",
    "id",
    "x",
    "\\u0073eq",
];

/// Pieces spliced into the bytes: duplicate keys, floats, nulls, escapes,
/// other kinds, brackets.
const PIECES: &[&str] = &[
    ",\"kind\":\"dequeue\"",
    ",\"kind\":\"enqueue\"",
    ",\"seq\":1",
    ",\"js_stack\":null",
    ",\"js_stack\":[1]",
    ",\"loop\":1",
    ",\"loop\":-1",
    ",\"loop\":null",
    ",\"label\":\"x\"",
    "1.0",
    "-1",
    "null",
    "\"",
    "\\u0041",
    "[",
    "]",
    "{",
    "}",
    " ",
    "1e2",
];

#[derive(Clone, Debug)]
enum Edit {
    Delete(prop::sample::Index),
    Repeat(prop::sample::Index),
    Move(prop::sample::Index, prop::sample::Index),
    Value(prop::sample::Index, prop::sample::Index),
    Key(prop::sample::Index, prop::sample::Index),
}

fn apply(p: &mut Vec<(String, String)>, e: &Edit) {
    if p.is_empty() {
        return;
    }
    match e {
        Edit::Delete(i) => {
            p.remove(i.index(p.len()));
        }
        Edit::Repeat(i) => {
            let x = p[i.index(p.len())].clone();
            p.push(x);
        }
        Edit::Move(i, j) => {
            let x = p.remove(i.index(p.len()));
            p.insert(j.index(p.len() + 1), x);
        }
        Edit::Value(i, v) => {
            let n = p.len();
            // Half the time another field's value, else one of VALUES.
            let pool = VALUES.len() + n;
            let k = v.index(pool);
            let value = if k < VALUES.len() {
                VALUES[k].to_owned()
            } else {
                p[k - VALUES.len()].1.clone()
            };
            p[i.index(n)].1 = value;
        }
        Edit::Key(i, k) => {
            let n = p.len();
            p[i.index(n)].0 = KEYS[k.index(KEYS.len())].to_owned();
        }
    }
}

/// Every single edit of every line (one line per kind and trace), exactly.
#[test]
fn every_single_edit_is_decided_alike() {
    let mut accepted = 0;
    let mut total = 0;
    for (format, l) in lines(1) {
        let base = pairs(l);
        let n = base.len();
        let mut edited = Vec::new();
        for i in 0..n {
            let mut p = base.clone();
            p.remove(i);
            edited.push(p);
            let mut p = base.clone();
            p.push(base[i].clone());
            edited.push(p);
            for j in 0..n {
                let mut p = base.clone();
                let x = p.remove(i);
                p.insert(j, x);
                edited.push(p);
            }
            for v in VALUES {
                let mut p = base.clone();
                p[i].1 = v.to_string();
                edited.push(p);
            }
            for k in KEYS {
                let mut p = base.clone();
                p[i].0 = k.to_string();
                edited.push(p);
            }
        }
        for v in VALUES {
            let mut p = base.clone();
            p.push(("x".into(), v.to_string()));
            edited.push(p);
        }
        for p in edited {
            let text = join(&p);
            total += 1;
            match agree(format, text.as_bytes()) {
                Ok(true) => accepted += 1,
                Ok(false) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
    // Not vacuous: many edits leave a line the fast path still takes
    // (optional fields left out, fields after `kind` in another order,
    // unknown fields, other valid values).
    assert!(accepted * 10 > total, "{accepted} of {total}");
}

/// The writer's field order is not required after `kind`: any order of
/// the fields after it is decoded by the fast path.
#[test]
fn fields_after_kind_in_any_order_take_the_fast_path() {
    for (format, l) in lines(1) {
        let mut p = pairs(l);
        let at = p.iter().position(|(k, _)| k == "kind").unwrap() + 1;
        p[at..].reverse();
        let text = join(&p);
        assert_eq!(agree(format, text.as_bytes()), Ok(true), "{text}");
    }
}

fn edit() -> impl Strategy<Value = Edit> {
    let i = any::<prop::sample::Index>;
    prop_oneof![
        i().prop_map(Edit::Delete),
        i().prop_map(Edit::Repeat),
        (i(), i()).prop_map(|(a, b)| Edit::Move(a, b)),
        (i(), i()).prop_map(|(a, b)| Edit::Value(a, b)),
        (i(), i()).prop_map(|(a, b)| Edit::Key(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Whatever the fast path accepts, the checked path accepts with the
    /// same event, for lines of every kind of both families after a few
    /// edits of their fields and bytes: the fast path changes speed, never
    /// meaning.
    #[test]
    fn the_fast_path_agrees_with_the_checked_one(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 0..4),
        splices in prop::collection::vec((any::<prop::sample::Index>(), 0usize..4, any::<prop::sample::Index>()), 0..3),
    ) {
        static ALL: LazyLock<Vec<(Format, &str)>> = LazyLock::new(|| lines(3));
        let (format, line) = ALL[which.index(ALL.len())];
        let mut p = pairs(line);
        for e in &edits {
            apply(&mut p, e);
        }
        let mut bytes = join(&p).into_bytes();
        for (at, cut, piece) in splices {
            let at = at.index(bytes.len() + 1);
            let end = (at + cut).min(bytes.len());
            bytes.splice(at..end, PIECES[piece.index(PIECES.len())].bytes());
        }
        if let Err(e) = agree(format, &bytes) {
            prop_assert!(false, "{}", e);
        }
    }
}
