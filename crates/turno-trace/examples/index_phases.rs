//! Times the phases of opening a trace, in wall and CPU time: reading the
//! bytes, the JSON syntax alone, decoding and validating (`Reader`), and
//! the whole index (decode, apply, checkpoints). Usage:
//! `cargo run --release -p turno-trace --example index_phases -- TRACE
//! [PHASE...]` (phases by the start of their names, e.g. `Index`; all
//! without one).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::time::Instant;

use turno_trace::{Index, Reader};

/// CPU time of this process (user + system), in seconds.
fn cpu() -> f64 {
    // /proc/self/stat fields 14 and 15: utime and stime in clock ticks.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // After the `)`, field 3 (state) is index 0, so utime (14) is 11.
    (ticks(11) + ticks(12)) / 100.0
}

fn phase(name: &str, f: impl FnOnce() -> u64) {
    let only: Vec<String> = std::env::args().skip(2).collect();
    if !only.is_empty() && !only.iter().any(|o| name.starts_with(o.as_str())) {
        return;
    }
    let (w, c) = (Instant::now(), cpu());
    let n = f();
    println!(
        "{name:<28} wall {:>7.3} s  cpu {:>7.3} s  ({n})",
        w.elapsed().as_secs_f64(),
        cpu() - c
    );
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: index_phases TRACE");
    phase("read bytes", || {
        let mut v = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut v).unwrap();
        v.len() as u64
    });
    phase("lines + IgnoredAny", || {
        let mut r = BufReader::with_capacity(1 << 16, File::open(&path).unwrap());
        let (mut buf, mut n) = (Vec::new(), 0);
        while r.read_until(b'\n', &mut buf).unwrap() > 0 {
            let _ = serde_json::from_slice::<serde::de::IgnoredAny>(&buf);
            buf.clear();
            n += 1;
        }
        n
    });
    phase("Reader (decode, validate)", || {
        let r = Reader::new(BufReader::with_capacity(
            1 << 16,
            File::open(&path).unwrap(),
        ))
        .unwrap();
        let mut n = 0;
        for e in r {
            e.expect("a valid event");
            n += 1;
        }
        n
    });
    phase("Index::build", || {
        Index::build(File::open(&path).unwrap()).unwrap().len()
    });
}
