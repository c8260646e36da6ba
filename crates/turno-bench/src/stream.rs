//! The `stream` bench: throughput of one consumer fed by one producer (spsc)
//! or by `--producers` producers (mpsc), through
//!
//! - a bounded channel of capacity 1024 whose full buffer makes producers
//!   wait: turno's [`buffered()`] stream with [`Policy::Suspend`]`(1024)`,
//!   against tokio's `mpsc::channel(1024)`, flume, crossbeam-channel, kanal
//!   and async-channel `bounded(1024)`;
//! - a rendezvous channel (capacity 0): turno's [`rendezvous()`] against
//!   flume, crossbeam-channel and kanal `bounded(0)` (tokio mpsc and
//!   async-channel have no capacity 0).
//!
//! Every implementation is driven the same way: producers are OS threads
//! using the blocking send, the consumer is the calling thread using the
//! blocking receive; a run sends `n` `u64`s in total and ends when the
//! consumer has received all of them.

use std::thread;

use turno::stream::{buffered, rendezvous};
use turno::Policy;

use crate::harness::Harness;
use crate::Args;

/// The bounded cases' capacity.
pub const CAPACITY: usize = 1024;

/// Runs one transfer of `n` messages: `producers` threads each send their
/// share through `send`; the caller receives through `recv` until all came.
fn drive<S, R>(
    n: u64,
    producers: usize,
    tx: S,
    mut rx: R,
    send: fn(&S, u64),
    recv: fn(&mut R) -> bool,
) where
    S: Clone + Send + 'static,
{
    let per = n / producers as u64;
    let handles: Vec<_> = (0..producers)
        .map(|_| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..per {
                    send(&tx, i);
                }
            })
        })
        .collect();
    drop(tx);
    for _ in 0..per * producers as u64 {
        assert!(recv(&mut rx), "a channel ended early");
    }
    for h in handles {
        h.join().expect("producer panicked");
    }
}

/// One implementation of a case: name, and a run for (n, producers).
type Impl = (&'static str, fn(u64, usize));

fn bounded_impls() -> Vec<Impl> {
    vec![
        ("turno", |n, p| {
            let (tx, rx) = buffered::<u64>(Policy::Suspend(CAPACITY));
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| assert!(tx.send_blocking(i).is_enqueued()),
                |rx| rx.next_blocking().is_some(),
            );
        }),
        ("tokio-mpsc", |n, p| {
            let (tx, rx) = tokio::sync::mpsc::channel::<u64>(CAPACITY);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.blocking_send(i).unwrap(),
                |rx| rx.blocking_recv().is_some(),
            );
        }),
        ("flume", |n, p| {
            let (tx, rx) = flume::bounded::<u64>(CAPACITY);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send(i).unwrap(),
                |rx| rx.recv().is_ok(),
            );
        }),
        ("crossbeam-channel", |n, p| {
            let (tx, rx) = crossbeam_channel::bounded::<u64>(CAPACITY);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send(i).unwrap(),
                |rx| rx.recv().is_ok(),
            );
        }),
        ("kanal", |n, p| {
            let (tx, rx) = kanal::bounded::<u64>(CAPACITY);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send(i).unwrap(),
                |rx| rx.recv().is_ok(),
            );
        }),
        ("async-channel", |n, p| {
            let (tx, rx) = async_channel::bounded::<u64>(CAPACITY);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send_blocking(i).unwrap(),
                |rx| rx.recv_blocking().is_ok(),
            );
        }),
    ]
}

fn rendezvous_impls() -> Vec<Impl> {
    vec![
        ("turno", |n, p| {
            let (tx, rx) = rendezvous::<u64>();
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send_blocking(i).unwrap(),
                |rx| rx.recv_blocking().is_ok(),
            );
        }),
        ("flume", |n, p| {
            let (tx, rx) = flume::bounded::<u64>(0);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send(i).unwrap(),
                |rx| rx.recv().is_ok(),
            );
        }),
        ("crossbeam-channel", |n, p| {
            let (tx, rx) = crossbeam_channel::bounded::<u64>(0);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send(i).unwrap(),
                |rx| rx.recv().is_ok(),
            );
        }),
        ("kanal", |n, p| {
            let (tx, rx) = kanal::bounded::<u64>(0);
            drive(
                n,
                p,
                tx,
                rx,
                |tx, i| tx.send(i).unwrap(),
                |rx| rx.recv().is_ok(),
            );
        }),
    ]
}

/// Runs the bench. Default `n`: 1,000,000 messages for the bounded cases,
/// 100,000 for the rendezvous cases (each message is a hand-off); `--n N`
/// sets N for the bounded cases and N / 10 for the rendezvous cases.
pub fn run(args: &Args, h: &mut Harness) {
    let p = args.producers.max(1);
    let bounded_n = args.n.unwrap_or(1_000_000);
    let rendezvous_n = args.n.map(|n| n / 10).unwrap_or(100_000).max(1);
    let cases: [(String, u64, usize, Vec<Impl>); 4] = [
        (
            format!("stream/spsc_bounded_{CAPACITY}"),
            bounded_n,
            1,
            bounded_impls(),
        ),
        (
            format!("stream/mpsc{p}_bounded_{CAPACITY}"),
            bounded_n,
            p,
            bounded_impls(),
        ),
        (
            "stream/spsc_rendezvous".into(),
            rendezvous_n,
            1,
            rendezvous_impls(),
        ),
        (
            format!("stream/mpsc{p}_rendezvous"),
            rendezvous_n,
            p,
            rendezvous_impls(),
        ),
    ];
    for (bench, n, producers, impls) in cases {
        let n = n / producers as u64 * producers as u64;
        for (imp, f) in impls {
            if args.selected(&bench, imp) {
                h.measure(&bench, imp, n, || f(n, producers));
            }
        }
    }
}
