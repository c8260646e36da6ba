//! Records one trace of a small simulated cluster and writes it to the
//! path given: three nodes, `a` telling, sending to and asking actors on
//! `b` and `c` (a reject mailbox that fills, a keep-newest one that
//! evicts, an actor that answers asks), on the simulated broker.
//!
//! `cargo run -p turno-cluster --example cluster_trace -- cluster.jsonl`,
//! then `turno inspect cluster.jsonl`. Prints the nodes, one a line.

use std::time::Duration;

use turno::{Actor, Context, DetSystem, Policy, Props, System};
use turno_cluster::node::{Node, NodeConfig, RemoteAddr, RemoteReplyTo};
use turno_cluster::sim::{Faults, SimBroker, SimTransport};

struct Sink;
impl Actor for Sink {
    type Msg = u32;
    fn handle(&mut self, _: &mut Context<'_, Self>, _: u32) {}
}

struct Doubler;
impl Actor for Doubler {
    type Msg = (u32, RemoteReplyTo<u32>);
    fn handle(&mut self, _: &mut Context<'_, Self>, (n, reply): Self::Msg) {
        reply.reply(n * 2);
    }
}

type SimNode = Node<DetSystem, SimTransport>;

fn node(broker: &SimBroker, name: &str, seed: u64) -> SimNode {
    let trace = broker.record();
    let sys = DetSystem::builder()
        .metrics(false)
        .seed(seed)
        .trace(trace.sink(name, 1))
        .build();
    let t = broker.transport(name, Duration::ZERO);
    let mut n = Node::new(name, 1, sys, t, NodeConfig::default()).expect("a fresh client");
    n.register::<u32>("u32").expect("one registration");
    n
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: cluster_trace OUT.jsonl");
        std::process::exit(2);
    };
    let broker = SimBroker::new(1, Faults::none());
    let trace = broker.record();
    let mut a = node(&broker, "a", 1);
    let mut b = node(&broker, "b", 2);
    let mut c = node(&broker, "c", 3);
    let s = b.system();
    let inbox = s
        .spawn(
            Props::new().name("inbox").mailbox(Policy::Reject(2)),
            || Sink,
        )
        .expect("spawned");
    let doubler = s
        .spawn(Props::new().name("doubler"), || Doubler)
        .expect("spawned");
    b.export(&inbox).expect("exported");
    b.export_ask(&doubler, |n: u32, r| (n, r))
        .expect("exported");
    let latest = c
        .system()
        .spawn(
            Props::new().name("latest").mailbox(Policy::KeepNewest(1)),
            || Sink,
        )
        .expect("spawned");
    c.export(&latest).expect("exported");
    let step = |nodes: &mut [&mut SimNode], ticks: u32| {
        for _ in 0..ticks {
            broker.advance(Duration::from_millis(1));
            for n in nodes.iter_mut() {
                n.pump();
                let _ = n.system_mut().run_until_idle();
                n.pump();
            }
        }
    };
    // The nodes meet (heartbeats), so tells have somewhere to go.
    step(&mut [&mut a, &mut b, &mut c], 20);
    let inbox_at = RemoteAddr::<u32>::new("b", "/inbox");
    let doubler_at = RemoteAddr::<u32>::new("b", "/doubler");
    let latest_at = RemoteAddr::<u32>::new("c", "/latest");
    let second = Duration::from_secs(1);
    for n in 0..3 {
        a.send(&inbox_at, &n, second, |_| {}).expect("encodes");
    }
    a.tell(&latest_at, &10).expect("encodes");
    a.tell(&latest_at, &11).expect("encodes");
    a.ask(
        &doubler_at,
        &21,
        second,
        |_: turno_cluster::node::RemoteResponse<u32>| {},
    )
    .expect("encodes");
    // b's and c's systems run only after both messages to each are queued,
    // so the reject mailbox fills and the keep-newest one evicts.
    step(&mut [&mut a], 3);
    broker.advance(Duration::from_millis(2));
    b.pump();
    c.pump();
    step(&mut [&mut a, &mut b, &mut c], 10);
    if let Err(e) = trace.write_to(&path) {
        eprintln!("cluster_trace: writing {path}: {e}");
        std::process::exit(1);
    }
    let m = turno_trace::cluster::Messages::build(trace.text().as_bytes()).expect("readable");
    for n in m.nodes {
        println!("{n}");
    }
}
