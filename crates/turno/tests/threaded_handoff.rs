//! The threaded scheduler's hand-off accounting: an actor woken by a turn
//! waits in that worker's LIFO slot without being counted as pending (the
//! running batch's count passes to it), and is counted the moment it is
//! displaced to the stealable deque. `wait_idle` must still never return
//! while any message is in flight. A race detector: each test repeats its
//! run many times on two workers.

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
