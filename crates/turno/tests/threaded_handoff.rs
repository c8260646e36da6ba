//! The threaded scheduler's hand-off accounting: an actor woken by a turn
//! waits in that worker's LIFO slot without being counted as pending (the
//! running batch's count passes to it), and is counted the moment it is
//! displaced to the stealable deque. `wait_idle` must still never return
//! while any message is in flight. A race detector: each test repeats its
//! run many times on two workers. And the LIFO run limit: on one worker, a
//! ping-pong pair lets an actor waiting in the deque run after a few
//! hand-offs.

#![cfg(not(turno_loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use turno::{Actor, Addr, Context, Props, System, ThreadedSystem};

enum Msg {
    Peers(Vec<Addr<Msg>>),
    /// Handle, and pass `n - 1` to `fan` peers.
    Go(u32),
}

/// Counts what it handles and fans each message out to its peers.
struct Fan {
    fan: usize,
    peers: Vec<Addr<Msg>>,
    handled: Arc<AtomicU64>,
}

impl Actor for Fan {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Peers(p) => self.peers = p,
            Msg::Go(n) => {
                self.handled.fetch_add(1, Ordering::SeqCst);
                if n > 0 {
                    for peer in self.peers.iter().take(self.fan) {
                        assert!(ctx.send(peer, Msg::Go(n - 1)).is_enqueued());
                    }
                }
            }
        }
    }
}

/// `actors` actors in a ring, each sending to the next `fan`; a message of
/// depth `depth` is injected `injections` times. After `wait_idle`, every
/// message of the cascade must have been handled already.
fn cascade(actors: usize, fan: usize, depth: u32, injections: u64, rounds: usize) {
    let total_per_injection: u64 = (0..=depth).map(|d| (fan as u64).pow(d)).sum();
    for round in 0..rounds {
        let sys = ThreadedSystem::builder().threads(2).build();
        let handled = Arc::new(AtomicU64::new(0));
        let addrs: Vec<Addr<Msg>> = (0..actors)
            .map(|_| spawn_fan(&sys, fan, handled.clone()))
            .collect();
        for (i, a) in addrs.iter().enumerate() {
            let peers = (1..=fan).map(|k| addrs[(i + k) % actors].clone()).collect();
            assert!(a.try_send(Msg::Peers(peers)).is_enqueued());
        }
        assert!(sys.wait_idle(Duration::from_secs(10)));
        for k in 0..injections {
            assert!(addrs[k as usize % actors]
                .try_send(Msg::Go(depth))
                .is_enqueued());
        }
        assert!(
            sys.wait_idle(Duration::from_secs(30)),
            "round {round}: still busy"
        );
        // Read at once: wait_idle returning means nothing is in flight.
        let seen = handled.load(Ordering::SeqCst);
        assert_eq!(
            seen,
            injections * total_per_injection,
            "round {round}: wait_idle returned with messages in flight"
        );
        drop(addrs);
        sys.shutdown(Duration::from_secs(10)).unwrap();
    }
}

fn spawn_fan(sys: &ThreadedSystem, fan: usize, handled: Arc<AtomicU64>) -> Addr<Msg> {
    sys.spawn(Props::new(), move || Fan {
        fan,
        peers: Vec::new(),
        handled: handled.clone(),
    })
    .unwrap()
}

/// A chain: every turn hands exactly one actor off (the LIFO slot's
/// count passes along the chain, the shared counter is never touched).
#[test]
fn wait_idle_waits_for_a_chain_of_hand_offs() {
    cascade(4, 1, 2_000, 2, 40);
}

/// A fan-out: every turn wakes two actors, so the first is displaced from
/// the LIFO slot to the deque (counted there) and may be stolen and
/// finished by the other worker before the waking batch ends.
#[test]
fn wait_idle_waits_for_displaced_and_stolen_hand_offs() {
    cascade(16, 2, 9, 3, 40);
}

/// One of a ping-pong pair: counts its turns and bounces the ball.
struct Bouncer {
    other: Option<Addr<Ball>>,
    /// On its first ball, wakes this one too, before its partner (so the
    /// partner takes the LIFO slot and this one waits in the deque).
    first: Option<Addr<Ball>>,
    turns: Arc<AtomicU64>,
}

enum Ball {
    Partner(Addr<Ball>),
    Hit(u32),
}

impl Actor for Bouncer {
    type Msg = Ball;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: Ball) {
        match msg {
            Ball::Partner(p) => self.other = Some(p),
            Ball::Hit(n) => {
                self.turns.fetch_add(1, Ordering::SeqCst);
                if let Some(waiting) = self.first.take() {
                    assert!(ctx.send(&waiting, Ball::Hit(0)).is_enqueued());
                }
                if n > 0 {
                    let other = self.other.as_ref().expect("partnered");
                    assert!(ctx.send(other, Ball::Hit(n - 1)).is_enqueued());
                }
            }
        }
    }
}

/// Records the pair's turns so far when it runs.
struct Waiting {
    pair_turns: Arc<AtomicU64>,
    seen: Arc<AtomicU64>,
}

impl Actor for Waiting {
    type Msg = Ball;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _msg: Ball) {
        self.seen
            .store(self.pair_turns.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

/// The LIFO run limit on one worker: a ping-pong pair hands the ball off
/// through the LIFO slot, and after a few hand-offs in a row an actor
/// waiting in the worker's deque runs before the pair goes on (it would
/// wait for all 2 000 turns without the limit, and a hand-off run at the
/// limit must not jump the deque when it holds entries).
#[test]
fn a_ping_pong_pair_lets_an_actor_in_the_deque_run() {
    for _ in 0..20 {
        let sys = ThreadedSystem::builder().threads(1).build();
        let turns = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(AtomicU64::new(u64::MAX));
        let waiting = sys
            .spawn(Props::new(), {
                let (pair_turns, seen) = (turns.clone(), seen.clone());
                move || Waiting {
                    pair_turns: pair_turns.clone(),
                    seen: seen.clone(),
                }
            })
            .unwrap();
        let bouncer = |first: Option<Addr<Ball>>| {
            let turns = turns.clone();
            move || Bouncer {
                other: None,
                first: first.clone(),
                turns: turns.clone(),
            }
        };
        let ping = sys.spawn(Props::new(), bouncer(Some(waiting))).unwrap();
        let pong = sys.spawn(Props::new(), bouncer(None)).unwrap();
        assert!(ping.try_send(Ball::Partner(pong.clone())).is_enqueued());
        assert!(pong.try_send(Ball::Partner(ping.clone())).is_enqueued());
        assert!(sys.wait_idle(Duration::from_secs(10)));
        assert!(ping.try_send(Ball::Hit(1_999)).is_enqueued());
        assert!(sys.wait_idle(Duration::from_secs(10)));
        assert_eq!(turns.load(Ordering::SeqCst), 2_000);
        let ran_after = seen.load(Ordering::SeqCst);
        assert!(
            ran_after <= 8,
            "the waiting actor ran after {ran_after} of the pair's turns"
        );
        sys.shutdown(Duration::from_secs(5)).unwrap();
    }
}
