//! Routing between nodes (feature `cluster`) on the simulated broker: a
//! message accepted by any node reaches the shard's owner; after the owner
//! dies it reaches the node that took the shard over; with no owner at all
//! the caller hears `Unknown` at the deadline.

#![cfg(feature = "cluster")]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::{log_machine, msg, stored_context, T0};
use serde_json::Value;
use turno::DetSystem;
use turno_cluster::node::{Node, NodeConfig};
use turno_cluster::sim::{Faults, SimBroker, SimTransport};
use turno_entity::cluster::{EntityNode, Outcome, RouteConfig};
use turno_entity::{Ack, EntityHost, HostConfig};
use turno_store::{ManualClock, Store};

type Entities = EntityNode<DetSystem, SimTransport, DetSystem, Value>;

struct World {
    broker: SimBroker,
    clock: Arc<ManualClock>,
    store: Store,
    nodes: Vec<Entities>,
    since_tick: Duration,
}

fn config() -> HostConfig {
    HostConfig {
        shards: 4,
        lease_ttl: Duration::from_millis(1_000),
        idle: Duration::from_secs(60),
        due_batch: 16,
    }
}

impl World {
    fn new(names: &[&str]) -> World {
        let clock = ManualClock::new(T0);
        let store = Store::memory().with_clock(clock.clone());
        let broker = SimBroker::new(7, Faults::none());
        let mut w = World {
            broker,
            clock,
            store,
            nodes: Vec::new(),
            since_tick: Duration::ZERO,
        };
        for (i, name) in names.iter().enumerate() {
            w.start(name, i as u64);
        }
        w
    }

    fn start(&mut self, name: &str, seed: u64) {
        let node = Node::new(
            name,
            1,
            DetSystem::new(seed),
            self.broker.transport(name, Duration::ZERO),
            NodeConfig::default(),
        )
        .unwrap();
        let host = EntityHost::new(
            DetSystem::new(100 + seed),
            self.store.clone(),
            format!("{name}/1"),
            log_machine(),
            config(),
        );
        let mut n = EntityNode::new(node, host, RouteConfig::default()).unwrap();
        n.tick().unwrap();
        self.nodes.push(n);
    }

    fn step(&mut self) {
        let d = Duration::from_millis(10);
        self.broker.advance(d);
        self.clock.advance(d);
        self.since_tick += d;
        let tick = self.since_tick >= Duration::from_millis(200);
        if tick {
            self.since_tick = Duration::ZERO;
        }
        for n in &mut self.nodes {
            n.pump();
            n.host_mut().system_mut().run_until_idle().unwrap();
            if tick {
                n.tick().unwrap();
            }
        }
    }

    /// Delivers through node `via` and runs until the outcome.
    fn deliver(&mut self, via: usize, key: &str, seq: u64, within: Duration) -> Outcome {
        let got = Rc::new(RefCell::new(None));
        let g = got.clone();
        self.nodes[via].deliver(key, seq, msg(seq, false), within, move |o| {
            *g.borrow_mut() = Some(o)
        });
        for _ in 0..2_000 {
            if let Some(o) = got.borrow_mut().take() {
                return o;
            }
            self.step();
        }
        panic!("no outcome for {key}/{seq}");
    }
}

fn seqs(store: &Store, key: &str) -> Vec<u64> {
    stored_context(store, key).unwrap()["seqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn any_node_routes_to_the_owner_and_after_its_death_to_the_next() {
    let mut w = World::new(&["a", "b", "c"]);
    // a took every shard first.
    assert_eq!(w.nodes[0].host().held().len(), 4);
    for _ in 0..30 {
        w.step(); // heartbeats: the nodes know each other
    }
    let secs = Duration::from_secs(5);
    assert_eq!(
        w.deliver(2, "k", 1, secs),
        Outcome::Acked {
            ack: Ack::Applied,
            owner: "a/1".into()
        }
    );
    assert!(w.nodes[2].stats().forwarded >= 1);
    assert!(w.nodes[0].stats().served >= 1);
    // Sent again: a duplicate, acknowledged, applied once.
    assert_eq!(
        w.deliver(1, "k", 1, secs),
        Outcome::Acked {
            ack: Ack::Duplicate { applied: 1 },
            owner: "a/1".into()
        }
    );

    // a dies: c retries until b (or c) took the shards over.
    w.nodes.remove(0);
    let o = w.deliver(1, "k", 2, secs);
    let Outcome::Acked {
        ack: Ack::Applied,
        owner,
    } = o
    else {
        panic!("{o:?}");
    };
    assert!(owner == "b/1" || owner == "c/1", "{owner}");
    assert_eq!(seqs(&w.store, "k"), [1, 2]);
}

#[test]
fn with_no_owner_at_all_the_caller_hears_unknown_at_the_deadline() {
    let mut w = World::new(&["a", "b"]);
    for _ in 0..30 {
        w.step();
    }
    // a owns everything and is gone; b takes nothing (its share is none).
    w.nodes[1].host_mut().set_share(0);
    w.nodes.remove(0);
    let o = w.deliver(0, "k", 1, Duration::from_millis(400));
    assert!(matches!(o, Outcome::Unknown { .. }), "{o:?}");
    assert_eq!(w.nodes[0].stats().unknown, 1);
    assert!(w.store.get_entity("log", "k").unwrap().is_none());
}
