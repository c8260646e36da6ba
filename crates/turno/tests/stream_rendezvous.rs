//! The rendezvous channel: send completes only when received, cancellation
//! delivers nothing, close semantics, many producers and consumers.

#![cfg(not(turno_loom))]

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures::StreamExt;
use turno::stream::{rendezvous, RecvError, SendError};

struct Flag(AtomicBool);
impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn flag() -> (Arc<Flag>, Waker) {
    let f = Arc::new(Flag(AtomicBool::new(false)));
    (f.clone(), Waker::from(f))
}

#[test]
fn send_waits_until_a_receiver_takes_the_element() {
    let (tx, rx) = rendezvous::<u32>();
    let (woken, waker) = flag();
    let mut cx = Context::from_waker(&waker);
    let mut send = Box::pin(tx.send(1));
    assert!(send.as_mut().poll(&mut cx).is_pending());
    assert!(send.as_mut().poll(&mut cx).is_pending(), "no receiver yet");
    assert_eq!(rx.try_recv(), Some(1));
    assert!(
        woken.0.load(Ordering::SeqCst),
        "the sender is woken when taken"
    );
    assert_eq!(send.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), None, "nothing is buffered");
}

#[test]
fn a_waiting_receiver_is_woken_by_a_sender() {
    let (tx, rx) = rendezvous::<u32>();
    let (woken, waker) = flag();
    let mut cx = Context::from_waker(&waker);
    let mut recv = Box::pin(rx.recv());
    assert!(recv.as_mut().poll(&mut cx).is_pending());
    let mut send = Box::pin(tx.send(5));
    assert!(send
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending());
    assert!(woken.0.load(Ordering::SeqCst));
    assert_eq!(recv.as_mut().poll(&mut cx), Poll::Ready(Ok(5)));
    assert_eq!(send.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
}

#[test]
fn a_cancelled_send_delivers_nothing() {
    let (tx, rx) = rendezvous::<u32>();
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut send = Box::pin(tx.send(1));
        assert!(send.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(rx.try_recv(), None);
}

#[test]
fn a_cancelled_receiver_passes_its_wake_up_on() {
    let (tx, rx) = rendezvous::<u32>();
    let rx2 = rx.clone();
    let (_, w1) = flag();
    let (woken2, w2) = flag();
    let mut r1 = Box::pin(rx.recv());
    let mut r2 = Box::pin(rx2.recv());
    assert!(r1.as_mut().poll(&mut Context::from_waker(&w1)).is_pending());
    assert!(r2.as_mut().poll(&mut Context::from_waker(&w2)).is_pending());
    let mut send = Box::pin(tx.send(3));
    assert!(send
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending());
    assert!(
        !woken2.0.load(Ordering::SeqCst),
        "only the first receiver is woken"
    );
    drop(r1); // woken, but gone without taking
    assert!(woken2.0.load(Ordering::SeqCst), "the wake-up is passed on");
    assert_eq!(
        r2.as_mut().poll(&mut Context::from_waker(&w2)),
        Poll::Ready(Ok(3))
    );
}

#[test]
fn close_fails_waiting_and_later_sends_and_ends_receivers() {
    let (tx, rx) = rendezvous::<u32>();
    let mut cx = Context::from_waker(Waker::noop());
    let mut send = Box::pin(tx.send(1));
    assert!(send.as_mut().poll(&mut cx).is_pending());
    rx.close();
    assert_eq!(send.as_mut().poll(&mut cx), Poll::Ready(Err(SendError(1))));
    assert_eq!(tx.send_blocking(2), Err(SendError(2)));
    assert_eq!(rx.recv_blocking(), Err(RecvError));
    assert!(tx.is_closed());
}

#[test]
fn dropping_all_senders_ends_the_receivers_and_all_receivers_closes() {
    let (tx, rx) = rendezvous::<u32>();
    let t = std::thread::spawn(move || rx.recv_blocking());
    std::thread::sleep(Duration::from_millis(20));
    drop(tx);
    assert_eq!(t.join().unwrap(), Err(RecvError));

    let (tx, rx) = rendezvous::<u32>();
    let t = std::thread::spawn(move || tx.send_blocking(8));
    std::thread::sleep(Duration::from_millis(20));
    drop(rx);
    assert_eq!(t.join().unwrap(), Err(SendError(8)));
}

/// What a rendezvous promises: a send completes only once a receiver has
/// taken its element. The test holds the receiver back before each element
/// and checks that the producer's send is still waiting; a buffered channel
/// of any capacity would let the first send complete with nobody receiving.
#[test]
fn a_send_completes_only_when_a_receiver_takes_the_element() {
    const N: u32 = 50;
    let (tx, rx) = rendezvous::<u32>();
    let sent = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let s = sent.clone();
    let producer = std::thread::spawn(move || {
        for i in 0..N {
            tx.send_blocking(i).unwrap();
            s.store(i + 1, Ordering::SeqCst);
        }
    });
    for i in 0..N {
        // Nobody receives for a while: the send of `i` must not complete.
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(
            sent.load(Ordering::SeqCst),
            i,
            "send {i} completed before a receiver took it"
        );
        assert_eq!(rx.recv_blocking(), Ok(i));
        // Taken: the send of `i` completes.
        while sent.load(Ordering::SeqCst) < i + 1 {
            std::thread::yield_now();
        }
    }
    producer.join().unwrap();
}

#[test]
fn many_producers_many_consumers_deliver_each_element_exactly_once() {
    let (tx, rx) = rendezvous::<u32>();
    let producers: Vec<_> = (0..3)
        .map(|p| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    tx.send_blocking(p * 10_000 + i).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let consumers: Vec<_> = (0..3)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Ok(v) = rx.recv_blocking() {
                    got.push(v);
                }
                got
            })
        })
        .collect();
    drop(rx);
    for p in producers {
        p.join().unwrap();
    }
    let mut all: Vec<u32> = consumers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    all.sort_unstable();
    let mut expected: Vec<u32> = (0..3)
        .flat_map(|p| (0..2000).map(move |i| p * 10_000 + i))
        .collect();
    expected.sort_unstable();
    assert_eq!(all, expected);
}

#[test]
fn the_receiver_is_a_stream() {
    let (tx, rx) = rendezvous::<u32>();
    let producer = std::thread::spawn(move || {
        for i in 0..10 {
            tx.send_blocking(i).unwrap();
        }
    });
    let got = futures::executor::block_on(rx.collect::<Vec<_>>());
    producer.join().unwrap();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
}
