//! What is particular to the local scheduler: first come first served,
//! batches, real-time timers, sends from other threads. (The core
//! behaviours it shares with the other schedulers are in `core_on_both.rs`.)

#![cfg(not(turno_loom))]

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use turno::{Actor, Addr, Context, LocalSystem, Policy, Props, System};

/// Reports `(me, n)` for every message.
struct Report {
    me: u32,
    out: mpsc::Sender<(u32, u32)>,
}
impl Actor for Report {
    type Msg = u32;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, n: u32) {
        self.out.send((self.me, n)).unwrap();
    }
}

fn reporters(sys: &LocalSystem, k: u32, out: &mpsc::Sender<(u32, u32)>) -> Vec<Addr<u32>> {
    (0..k)
        .map(|me| {
            let out = out.clone();
            sys.spawn(Props::new(), move || Report {
                me,
                out: out.clone(),
            })
            .unwrap()
        })
        .collect()
}

#[test]
fn actors_run_in_the_order_they_became_runnable() {
    let (tx, rx) = mpsc::channel();
    let mut sys = LocalSystem::new();
    let a = reporters(&sys, 3, &tx);
    sys.run_until_idle();
    // 2 becomes runnable first, then 0, then 1; each has two messages.
    for i in [2usize, 0, 1] {
        assert!(a[i].try_send(10).is_enqueued());
    }
    for i in [1usize, 0, 2] {
        assert!(a[i].try_send(20).is_enqueued());
    }
    assert_eq!(sys.run_until_idle(), 6);
    let seen: Vec<_> = rx.try_iter().collect();
    // A batch runs an actor's whole mailbox: order by who became runnable.
    assert_eq!(seen, [(2, 10), (2, 20), (0, 10), (0, 20), (1, 10), (1, 20)]);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

/// Sends one message to each of its targets, in order.
struct Fan {
    targets: Vec<Addr<u32>>,
}
impl Actor for Fan {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u32) {
        for t in &self.targets {
            assert!(ctx.send(t, n).is_enqueued());
        }
    }
}

/// A turn's first wake-up of an idle actor is claimed and kept in the
/// owner's hand-off slot, the next ones go to the run queue: the run
/// queue must still hold them in the order they were made.
#[test]
fn actors_woken_by_a_turn_run_in_the_order_it_woke_them() {
    let (tx, rx) = mpsc::channel();
    let mut sys = LocalSystem::new();
    let a = reporters(&sys, 3, &tx);
    let targets = vec![a[2].clone(), a[0].clone(), a[1].clone()];
    let fan = sys.spawn(Props::new(), move || Fan {
        targets: targets.clone(),
    });
    let fan = fan.unwrap();
    sys.run_until_idle();
    assert!(fan.try_send(7).is_enqueued());
    // The fan's turn and one turn of each of the three.
    assert_eq!(sys.run_until_idle(), 4);
    let seen: Vec<_> = rx.try_iter().collect();
    assert_eq!(seen, [(2, 7), (0, 7), (1, 7)]);
    // Again, now that each has run once (their words idle again).
    assert!(fan.try_send(8).is_enqueued());
    assert_eq!(sys.run_until_idle(), 4);
    let seen: Vec<_> = rx.try_iter().collect();
    assert_eq!(seen, [(2, 8), (0, 8), (1, 8)]);
    // An actor queued before the fan runs before the one the fan's turn
    // wakes (and claims into the hand-off slot) after it.
    let one = Fan {
        targets: vec![a[2].clone()],
    };
    let fan_of_one = sys.spawn(Props::new(), move || Fan {
        targets: one.targets.clone(),
    });
    let fan_of_one = fan_of_one.unwrap();
    sys.run_until_idle();
    assert!(fan_of_one.try_send(9).is_enqueued());
    assert!(a[0].try_send(9).is_enqueued());
    assert_eq!(sys.run_until_idle(), 3);
    let seen: Vec<_> = rx.try_iter().collect();
    assert_eq!(seen, [(0, 9), (2, 9)]);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_batch_of_one_turn_takes_turns_round_robin() {
    let (tx, rx) = mpsc::channel();
    let mut sys = LocalSystem::builder().batch(1).build();
    let a = reporters(&sys, 2, &tx);
    sys.run_until_idle();
    for n in 0..3 {
        assert!(a[0].try_send(n).is_enqueued());
    }
    for n in 0..3 {
        assert!(a[1].try_send(n).is_enqueued());
    }
    sys.run_until_idle();
    let seen: Vec<_> = rx.try_iter().collect();
    assert_eq!(seen, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

/// Sets a timer of `delay` and reports when it fired.
struct Alarm {
    delay: Duration,
    out: mpsc::Sender<Duration>,
}
impl Actor for Alarm {
    type Msg = bool;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.send_after(self.delay, true);
    }
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _fired: bool) {
        self.out.send(ctx.now().since_start()).unwrap();
    }
}

#[test]
fn timers_fire_on_real_time_and_not_before() {
    let (tx, rx) = mpsc::channel();
    let mut sys = LocalSystem::new();
    let delay = Duration::from_millis(30);
    let t0 = sys.now().since_start();
    sys.spawn(Props::new(), move || Alarm {
        delay,
        out: tx.clone(),
    })
    .unwrap();
    sys.run_until_idle();
    assert!(rx.try_recv().is_err(), "fired before its deadline");
    assert!(sys.next_deadline().is_some());
    // `sleep` runs the system through the deadline.
    assert!(sys.sleep(Duration::from_millis(60)));
    let at = rx.try_recv().expect("the timer fired during sleep");
    assert!(
        at >= t0 + delay,
        "fired at {at:?}, set at {t0:?} for {delay:?}"
    );
    assert!(sys.next_deadline().is_none());
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

#[test]
fn mail_from_another_thread_runs_on_the_next_run() {
    let (tx, rx) = mpsc::channel();
    let mut sys = LocalSystem::new();
    let a = reporters(&sys, 1, &tx).remove(0);
    sys.run_until_idle();
    std::thread::spawn(move || {
        for n in 0..100 {
            assert!(a.try_send(n).is_enqueued());
        }
    })
    .join()
    .unwrap();
    assert!(
        rx.try_recv().is_err(),
        "nothing runs outside the owner's calls"
    );
    assert_eq!(sys.run_until_idle(), 100);
    let seen: Vec<u32> = rx.try_iter().map(|(_, n)| n).collect();
    assert_eq!(seen, (0..100).collect::<Vec<_>>());
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

/// Keeps sending itself a message: never idle.
struct Spinner;
impl Actor for Spinner {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _: ()) {
        let me = ctx.addr();
        ctx.tell(&me, ());
    }
}

#[test]
fn settle_gives_up_on_a_message_loop_after_its_timeout() {
    let mut sys = LocalSystem::new();
    let s = sys.spawn(Props::new(), || Spinner).unwrap();
    assert!(s.try_send(()).is_enqueued());
    assert!(!sys.settle(Duration::from_millis(50)));
    assert!(sys.turns() > 0);
    sys.stop(s.id());
    assert!(sys.settle(Duration::from_secs(5)));
    assert_eq!(sys.actor_count(), 0);
}

/// Passes each number on to `next` (or to itself), counting down to 0.
struct Relay {
    next: Option<Addr<u32>>,
    out: mpsc::Sender<u32>,
}
impl Actor for Relay {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u32) {
        self.out.send(n).unwrap();
        if n > 0 {
            let to = self.next.clone().unwrap_or_else(|| ctx.addr());
            ctx.tell(&to, n - 1);
        }
    }
}

/// Runs a whole other local system inside its turn, after waking `peer`
/// (an actor of its own system) and before its turn ends.
struct Host {
    peer: Addr<u32>,
    inner_seen: mpsc::Sender<u32>,
}
impl Actor for Host {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _m: ()) {
        ctx.tell(&self.peer, 3);
        let mut inner = LocalSystem::new();
        let out = self.inner_seen.clone();
        let a = inner
            .spawn(Props::new(), move || Relay {
                next: None,
                out: out.clone(),
            })
            .unwrap();
        assert!(a.try_send(5).is_enqueued());
        // start + six messages, all the inner system's own
        assert_eq!(inner.run_until_idle(), 7);
        inner.shutdown(Duration::from_secs(5)).unwrap();
    }
}

/// An actor woken by a turn is queued by the system it belongs to: a
/// system run inside a turn of another keeps its own actors, and the outer
/// system still runs the actor that turn woke before the inner system ran.
/// (A guard for any thread-local shortcut in the run queue: such a shortcut
/// fails this when the inner system takes the outer's wake-ups.)
#[test]
fn a_system_run_inside_a_turn_keeps_each_systems_actors_apart() {
    let (tx, rx) = mpsc::channel();
    let (inner_tx, inner_rx) = mpsc::channel();
    let mut outer = LocalSystem::new();
    let out = tx.clone();
    let peer = outer
        .spawn(Props::new(), move || Relay {
            next: None,
            out: out.clone(),
        })
        .unwrap();
    let host = outer
        .spawn(Props::new(), move || Host {
            peer: peer.clone(),
            inner_seen: inner_tx.clone(),
        })
        .unwrap();
    assert_eq!(outer.run_until_idle(), 2); // the two starts
    assert!(host.try_send(()).is_enqueued());
    // the host's turn, then the peer's four messages (3, 2, 1, 0)
    assert_eq!(outer.run_until_idle(), 5);
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [3, 2, 1, 0]);
    assert_eq!(inner_rx.try_iter().collect::<Vec<_>>(), [5, 4, 3, 2, 1, 0]);
    outer.shutdown(Duration::from_secs(5)).unwrap();
}

/// Actors woken by turns and actors woken from another thread while the
/// system runs are all run, each exactly as often as it has mail.
#[test]
fn a_ring_driven_from_two_threads_loses_nothing() {
    let (tx, rx) = mpsc::channel();
    let mut sys = LocalSystem::new();
    let out = tx.clone();
    let last = sys
        .spawn(Props::new(), move || Relay {
            next: None,
            out: out.clone(),
        })
        .unwrap();
    let out = tx.clone();
    let first = sys
        .spawn(Props::new(), move || Relay {
            next: Some(last.clone()),
            out: out.clone(),
        })
        .unwrap();
    sys.run_until_idle();
    let outside = {
        let first = first.clone();
        std::thread::spawn(move || {
            for _ in 0..200 {
                assert!(first.try_send(0).is_enqueued());
                std::thread::yield_now();
            }
        })
    };
    assert!(first.try_send(1000).is_enqueued());
    while !outside.is_finished() {
        sys.run_until_idle();
    }
    outside.join().unwrap();
    sys.run_until_idle();
    let seen: Vec<u32> = rx.try_iter().collect();
    // 1000 down to 0 through the chain (1001 turns), plus 200 zeros from
    // outside.
    assert_eq!(seen.len(), 1001 + 200);
    assert_eq!(seen.iter().filter(|&&n| n == 0).count(), 201);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}

/// A player of [`turns_and_other_threads_share_a_running_systems_mailboxes_exactly`].
enum Play {
    Peer(Addr<Play>),
    /// A ping with this many hops left.
    Ping(u64),
    /// Mail from another thread.
    Extra,
}

struct Player {
    peer: Option<Addr<Play>>,
    pings: Arc<AtomicU64>,
    extras: Arc<AtomicU64>,
}

impl Actor for Player {
    type Msg = Play;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: Play) {
        match msg {
            Play::Peer(peer) => self.peer = Some(peer),
            Play::Ping(left) => {
                self.pings.fetch_add(1, Relaxed);
                if left > 1 {
                    let peer = self.peer.clone().unwrap();
                    assert!(ctx.send(&peer, Play::Ping(left - 1)).is_enqueued());
                }
            }
            Play::Extra => {
                self.extras.fetch_add(1, Relaxed);
            }
        }
    }
}

/// Pings between two actors of a running system (each sent by a turn, on
/// the owner's thread, through the claimed hand-off) and mail from two
/// other threads to the same two actors, while the owner runs the system
/// in short slices, meet in the same bounded mailboxes: every ping and
/// every message admitted from outside is handled exactly once.
#[test]
fn turns_and_other_threads_share_a_running_systems_mailboxes_exactly() {
    const ROUNDS: u64 = 20;
    const HOPS: u64 = 2000;
    const EXTRAS: u64 = 300;
    let pings = Arc::new(AtomicU64::new(0));
    let extras = Arc::new(AtomicU64::new(0));
    let mut sys = LocalSystem::new();
    let player = |sys: &LocalSystem| {
        let (pings, extras) = (pings.clone(), extras.clone());
        sys.spawn(Props::new().mailbox(Policy::Reject(4096)), move || Player {
            peer: None,
            pings: pings.clone(),
            extras: extras.clone(),
        })
        .unwrap()
    };
    let (a, b) = (player(&sys), player(&sys));
    assert!(a.try_send(Play::Peer(b.clone())).is_enqueued());
    assert!(b.try_send(Play::Peer(a.clone())).is_enqueued());
    sys.run_until_idle();
    let mut admitted = 0;
    for round in 0..ROUNDS {
        assert!(a.try_send(Play::Ping(HOPS)).is_enqueued());
        let senders: Vec<_> = [a.clone(), b.clone()]
            .into_iter()
            .map(|to| {
                std::thread::spawn(move || {
                    let mut admitted = 0;
                    for i in 0..EXTRAS {
                        admitted += u64::from(to.try_send(Play::Extra).is_enqueued());
                        if i % 16 == round % 16 {
                            std::thread::yield_now();
                        }
                    }
                    admitted
                })
            })
            .collect();
        while senders.iter().any(|s| !s.is_finished()) {
            sys.run_for(Duration::from_micros(200));
        }
        for s in senders {
            admitted += s.join().unwrap();
        }
        sys.run_until_idle();
    }
    assert_eq!(pings.load(Relaxed), ROUNDS * HOPS);
    assert_eq!(
        admitted,
        ROUNDS * 2 * EXTRAS,
        "a 4096 mailbox refuses none of these"
    );
    assert_eq!(extras.load(Relaxed), admitted);
    sys.shutdown(Duration::from_secs(5)).unwrap();
}
