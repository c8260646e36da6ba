// What this machine charges for moving work between its CPUs: CHUNKS equal
// chunks of a compute loop over a 32 KiB table, run either all by one thread
// or alternately by two threads that hand over through a channel (not
// pinned: the scheduler puts them on different CPUs when it can), each chunk
// followed by a 0.5 ms sleep as a turno worker's idle gap. Prints the wall
// time; BENCHMARKS.md reads its two-workers-against-one figures by it.
//
//   rustc -O -o /tmp/vcpu-handover crates/turno-bench/scripts/vcpu-handover.rs
//   for i in 1 2 3; do for m in one two; do nice -n -15 /tmp/vcpu-handover $m 12 20000000; done; done
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn chunk(iters: u64) -> u64 {
    let mut table = vec![0u64; 4096];
    let mut x: u64 = 1;
    for i in 0..iters {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = (x >> 52) as usize;
        table[k] = table[k].wrapping_add(i);
    }
    table.iter().sum::<u64>() ^ x
}

fn rest() {
    std::thread::sleep(Duration::from_micros(500));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 || (args[1] != "one" && args[1] != "two") {
        eprintln!("usage: vcpu-handover one|two CHUNKS ITERATIONS_PER_CHUNK");
        std::process::exit(2);
    }
    let chunks: u32 = args[2].parse().expect("CHUNKS: a number");
    let iters: u64 = args[3].parse().expect("ITERATIONS_PER_CHUNK: a number");
    let start = Instant::now();
    let check = if args[1] == "one" {
        std::thread::spawn(move || {
            (0..chunks).fold(0u64, |acc, _| {
                let r = chunk(iters);
                rest();
                acc.wrapping_add(r)
            })
        })
        .join()
        .unwrap()
    } else {
        // Each thread runs a chunk when handed the number of chunks left,
        // then hands the rest to the other; 0 ends both.
        let (to_a, from_b) = mpsc::channel::<u32>();
        let (to_b, from_a) = mpsc::channel::<u32>();
        let worker = |inbox: mpsc::Receiver<u32>, other: mpsc::Sender<u32>| {
            std::thread::spawn(move || {
                let mut acc = 0u64;
                while let Ok(left) = inbox.recv() {
                    if left == 0 {
                        let _ = other.send(0);
                        break;
                    }
                    acc = chunk(iters).wrapping_add(acc);
                    rest();
                    let _ = other.send(left - 1);
                }
                acc
            })
        };
        let a = worker(from_b, to_b);
        let b = worker(from_a, to_a.clone());
        to_a.send(chunks).unwrap();
        a.join().unwrap().wrapping_add(b.join().unwrap())
    };
    println!(
        "{} {chunks} chunks: {:.1} ms (check {check:x})",
        args[1],
        start.elapsed().as_secs_f64() * 1e3
    );
}
