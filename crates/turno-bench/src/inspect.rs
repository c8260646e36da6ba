//! `inspect`: the inspector on a million-event trace. Opening (the one
//! streaming pass that validates, indexes and checkpoints) and one step
//! (the world at a random step from its checkpoint, what the event moved,
//! and the JSON the page receives), for both trace families.
//!
//! Two traces are generated into the temp directory (`--n` events each,
//! default 1,000,002 for the JavaScript one as in the browser test's `BIG`
//! run):
//!
//! - `js`: the browser test's shape: a promise job per five events
//!   (`enqueue` with a `js_stack`, `dequeue`, `stack_push`, `output`,
//!   `stack_pop`) and a `time_advance` every hundred jobs;
//! - `actor`: an overloaded keep-oldest(64) mailbox: `enqueue`s, drops,
//!   turns and timers over 16 actors.
//!
//! Cases, each with its peers in the same run:
//!
//! - `inspect/open_js`, `inspect/open_actor`: `turno_inspect::Loaded::open`
//!   (what `turno inspect` does before serving); `turno_trace::Reader`
//!   alone (decode and validate, no index); `serde_json::Value` per line
//!   (how the reader decoded every line before its typed fast path: the
//!   first half of that work); `serde_json::IgnoredAny` per line (the
//!   JSON syntax floor: no value is built);
//! - `inspect/step_js`, `inspect/step_actor`: `Loaded::step` at 200
//!   pseudo-random steps plus its JSON, recorded as the median and the
//!   slowest step (n = 1: per second is steps per second).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use turno_inspect::Loaded;
use turno_trace::Reader;

use crate::harness::Harness;
use crate::Args;

/// Default events per trace (the browser test's `BIG` trace).
pub const DEFAULT_N: u64 = 1_000_002;
/// The implementations measured (for `--only`).
const IMPLS: [&str; 4] = [
    "turno-inspect",
    "turno-trace Reader",
    "serde_json Value",
    "serde_json IgnoredAny",
];
/// Steps timed per trace.
pub const STEPS: usize = 200;

fn js_trace(path: &Path, n: u64) -> std::io::Result<()> {
    let mut f = BufWriter::new(File::create(path)?);
    writeln!(
        f,
        r#"{{"format":"turno-js-trace","version":1,"model":"node","file":"big.js"}}"#
    )?;
    let (mut seq, mut t, mut i) = (0u64, 0u64, 0u64);
    while seq < n {
        let mut bodies = vec![
            format!(
                r#""kind":"enqueue","queue":"microtask","id":{i},"label":"PromiseJob","js_stack":["<main> (big.js:{}:1)"]"#,
                i % 50 + 1
            ),
            format!(r#""kind":"dequeue","queue":"microtask","id":{i}"#),
            r#""kind":"stack_push","frame":"promise reaction: f","depth":1"#.to_owned(),
            format!(r#""kind":"output","stream":"stdout","text":"line {i}\n""#),
            r#""kind":"stack_pop","frame":"promise reaction: f","depth":0"#.to_owned(),
        ];
        let advance = i % 100 == 0;
        if advance {
            bodies.push(format!(
                r#""kind":"time_advance","from_ns":{t},"to_ns":{}"#,
                t + 1000
            ));
        }
        for body in bodies {
            writeln!(f, r#"{{"seq":{seq},"t_ns":{t},{body}}}"#)?;
            seq += 1;
        }
        if advance {
            t += 1000;
        }
        i += 1;
    }
    f.flush()
}

fn actor_trace(path: &Path, n: u64) -> std::io::Result<()> {
    const ACTORS: u64 = 16;
    const CAP: u64 = 64;
    let mut f = BufWriter::new(File::create(path)?);
    writeln!(f, r#"{{"format":"turno-trace","version":1}}"#)?;
    let mut seq = 0u64;
    let mut t = 0u64;
    let mut ev = |f: &mut BufWriter<File>, t: u64, body: String| {
        let r = writeln!(f, r#"{{"seq":{seq},"t_ns":{t},{body}}}"#);
        seq += 1;
        r
    };
    for a in 1..=ACTORS {
        ev(
            &mut f,
            t,
            format!(
                r#""kind":"spawn","actor":{a},"name":"worker-{a}","parent":null,"policy":"keep-oldest({CAP})""#
            ),
        )?;
    }
    let mut depth = [0u64; ACTORS as usize + 1];
    let mut written = ACTORS;
    let mut i = 0u64;
    while written < n {
        let a = i % ACTORS + 1;
        t += 1000;
        // Three messages arrive for every one handled: the mailbox fills
        // and keep-oldest drops the rest.
        for _ in 0..3 {
            if depth[a as usize] < CAP {
                depth[a as usize] += 1;
                ev(
                    &mut f,
                    t,
                    format!(
                        r#""kind":"enqueue","actor":{a},"lane":"user","depth":{}"#,
                        depth[a as usize]
                    ),
                )?;
            } else {
                ev(
                    &mut f,
                    t,
                    format!(
                        r#""kind":"drop","actor":{a},"policy":"keep_oldest","which":"incoming""#
                    ),
                )?;
            }
            written += 1;
        }
        if depth[a as usize] > 0 {
            depth[a as usize] -= 1;
            ev(
                &mut f,
                t,
                format!(r#""kind":"turn_start","actor":{a},"what":"message""#),
            )?;
            ev(
                &mut f,
                t,
                format!(r#""kind":"turn_end","actor":{a},"ok":true"#),
            )?;
            written += 2;
        }
        if i % 97 == 0 {
            ev(
                &mut f,
                t,
                format!(
                    r#""kind":"timer_set","actor":{a},"timer":{i},"deadline_ns":{}"#,
                    t + 5_000_000
                ),
            )?;
            written += 1;
        }
        i += 1;
    }
    f.flush()
}

fn per_line(path: &Path, mut each: impl FnMut(&[u8])) {
    let file = File::open(path).expect("the generated trace opens");
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    while r.read_until(b'\n', &mut buf).expect("the trace reads") > 0 {
        each(&buf);
        buf.clear();
    }
}

/// Pseudo-random steps in `0..=len` (a fixed LCG: the same steps every run).
fn steps(len: u64) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..STEPS)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) % (len + 1)
        })
        .collect()
}

fn family(name: &str, path: &Path, args: &Args, h: &mut Harness) {
    let open = format!("inspect/open_{name}");
    let lines = {
        let mut n = 0u64;
        per_line(path, |_| n += 1);
        n - 1
    };
    if args.selected(&open, "turno-inspect") {
        h.measure(&open, "turno-inspect", lines, || {
            let l = Loaded::open(path, None).expect("the generated trace opens");
            assert_eq!(l.index().len(), lines);
            assert!(l.index().error().is_none());
        });
    }
    if args.selected(&open, "turno-trace Reader") {
        h.measure(&open, "turno-trace Reader", lines, || {
            let file = File::open(path).expect("the generated trace opens");
            let r = Reader::new(BufReader::with_capacity(1 << 16, file)).expect("a header");
            let mut n = 0u64;
            for e in r {
                e.expect("a valid event");
                n += 1;
            }
            assert_eq!(n, lines);
        });
    }
    if args.selected(&open, "serde_json Value") {
        h.measure(&open, "serde_json Value", lines, || {
            per_line(path, |l| {
                std::hint::black_box(serde_json::from_slice::<serde_json::Value>(l).ok());
            })
        });
    }
    if args.selected(&open, "serde_json IgnoredAny") {
        h.measure(&open, "serde_json IgnoredAny", lines, || {
            per_line(path, |l| {
                std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(l).ok());
            })
        });
    }
    let step = format!("inspect/step_{name}");
    if args.selected(&step, "turno-inspect") {
        let l = Loaded::open(path, None).expect("the generated trace opens");
        let ks = steps(l.index().len());
        let mut times: Vec<f64> = ks
            .iter()
            .map(|&k| {
                let t0 = Instant::now();
                let view = l.step(k).expect("a step of a valid trace");
                let json = serde_json::to_vec(&view).expect("a view serialises");
                std::hint::black_box(json);
                t0.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        h.record(&step, "turno-inspect median", 1, times[times.len() / 2]);
        h.record(&step, "turno-inspect slowest", 1, times[times.len() - 1]);
    }
}

/// Writes a trace of `n` events to a path.
type Writer = fn(&Path, u64) -> std::io::Result<()>;

/// Runs the `inspect` bench.
pub fn run(args: &Args, h: &mut Harness) {
    let n = args.n.unwrap_or(DEFAULT_N);
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    let traces: [(&str, PathBuf, Writer); 2] = [
        (
            "js",
            dir.join(format!("turno-bench-js-{pid}.jsonl")),
            js_trace,
        ),
        (
            "actor",
            dir.join(format!("turno-bench-actor-{pid}.jsonl")),
            actor_trace,
        ),
    ];
    for (name, path, write) in traces {
        let wanted = IMPLS.iter().any(|i| {
            args.selected(&format!("inspect/open_{name}"), i)
                || args.selected(&format!("inspect/step_{name}"), i)
        });
        if !wanted {
            continue;
        }
        write(&path, n).expect("the trace is written to the temp directory");
        family(name, &path, args, h);
        let _ = std::fs::remove_file(&path);
    }
}
