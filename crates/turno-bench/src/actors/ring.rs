//! `ring`: the Savina thread ring. [`NODES`] actors in a ring, each knowing
//! the next; a token carrying a hop count goes around, each actor passing
//! it on with the count minus one, until it reaches zero. The ring is built
//! once per implementation; a run injects a token of `n` hops at node 0 and
//! checks that it stops at node `n % NODES`.

use std::cell::Cell;
use std::rc::Rc;

use crossbeam_channel::{bounded, Sender};
use stakker::{actor, call, ret_nop, Stakker, CX};

use super::{enq, n_or, run_with_peers, stop_ractor, wait, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "ring";

/// Actors in the ring.
pub const NODES: usize = 1000;

/// Default hops per run.
pub const DEFAULT_N: u64 = 300_000;

/// Runs every implementation.
pub fn run(args: &Args, h: &mut Harness) {
    let n = n_or(args, DEFAULT_N);
    run_with_peers!(args, h, BENCH, n);
}

fn expected(n: u64) -> usize {
    (n % NODES as u64) as usize
}

// ---------------------------------------------------------------- turno

enum Msg {
    Link(turno::Addr<Msg>),
    Token(u64),
}

struct Node {
    index: usize,
    next: Option<turno::Addr<Msg>>,
    done: Sender<usize>,
}

impl turno::Actor for Node {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: Msg) {
        match msg {
            Msg::Link(next) => self.next = Some(next),
            Msg::Token(0) => {
                let _ = self.done.send(self.index);
            }
            Msg::Token(h) => enq(ctx.send(self.next.as_ref().expect("linked"), Msg::Token(h - 1))),
        }
    }
}

fn turno_impl(h: &mut Harness, imp: &str, n: u64) {
    let mut sys = Turno::new(imp);
    let (tx, rx) = bounded(1);
    let nodes: Vec<_> = (0..NODES)
        .map(|index| {
            let done = tx.clone();
            sys.spawn(turno::Props::new(), move || Node {
                index,
                next: None,
                done: done.clone(),
            })
        })
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        enq(node.try_send(Msg::Link(nodes[(i + 1) % NODES].clone())));
    }
    h.measure(BENCH, imp, n, || {
        enq(nodes[0].try_send(Msg::Token(n)));
        assert_eq!(sys.wait(&rx), expected(n));
    });
    drop(nodes);
    sys.close();
}

// ---------------------------------------------------------------- actix

mod ax {
    use actix::prelude::*;
    use tokio::sync::mpsc::UnboundedSender;

    pub struct Link(pub Addr<Node>);
    impl Message for Link {
        type Result = ();
    }
    pub struct Token(pub u64);
    impl Message for Token {
        type Result = ();
    }

    pub struct Node {
        pub index: usize,
        pub next: Option<Addr<Node>>,
        pub done: UnboundedSender<usize>,
    }
    impl Actor for Node {
        type Context = Context<Self>;
    }
    impl Handler<Link> for Node {
        type Result = ();
        fn handle(&mut self, Link(next): Link, _: &mut Context<Self>) {
            self.next = Some(next);
        }
    }
    impl Handler<Token> for Node {
        type Result = ();
        fn handle(&mut self, Token(h): Token, _: &mut Context<Self>) {
            match h {
                0 => {
                    let _ = self.done.send(self.index);
                }
                h => self.next.as_ref().expect("linked").do_send(Token(h - 1)),
            }
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, n: u64) {
    use actix::Actor as _;
    let sys = actix_rt::System::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let nodes: Vec<_> = sys.block_on(async {
        let nodes: Vec<_> = (0..NODES)
            .map(|index| {
                ax::Node {
                    index,
                    next: None,
                    done: tx.clone(),
                }
                .start()
            })
            .collect();
        for (i, node) in nodes.iter().enumerate() {
            node.do_send(ax::Link(nodes[(i + 1) % NODES].clone()));
        }
        nodes
    });
    h.measure(BENCH, "actix", n, || {
        sys.block_on(async {
            nodes[0].do_send(ax::Token(n));
            assert_eq!(rx.recv().await, Some(expected(n)));
        })
    });
}

// ---------------------------------------------------------------- ractor

mod rc {
    use crossbeam_channel::Sender;
    use ractor::{Actor, ActorProcessingErr, ActorRef};

    pub enum Msg {
        Link(ActorRef<Msg>),
        Token(u64),
    }
    pub struct Node;
    pub struct State {
        index: usize,
        next: Option<ActorRef<Msg>>,
        done: Sender<usize>,
    }
    impl Actor for Node {
        type Msg = Msg;
        type State = State;
        type Arguments = (usize, Sender<usize>);
        async fn pre_start(
            &self,
            _: ActorRef<Msg>,
            (index, done): (usize, Sender<usize>),
        ) -> Result<State, ActorProcessingErr> {
            Ok(State {
                index,
                next: None,
                done,
            })
        }
        async fn handle(
            &self,
            _: ActorRef<Msg>,
            msg: Msg,
            st: &mut State,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                Msg::Link(next) => st.next = Some(next),
                Msg::Token(0) => {
                    let _ = st.done.send(st.index);
                }
                Msg::Token(h) => st.next.as_ref().expect("linked").cast(Msg::Token(h - 1))?,
            }
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, n: u64) {
    let rt = TokioRt::new(imp);
    let (tx, rx) = bounded(1);
    let (nodes, handles): (Vec<_>, Vec<_>) = rt.block_on(async {
        let mut v = Vec::new();
        for index in 0..NODES {
            v.push(
                ractor::Actor::spawn(None, rc::Node, (index, tx.clone()))
                    .await
                    .expect("spawn"),
            );
        }
        v.into_iter().unzip()
    });
    for (i, node) in nodes.iter().enumerate() {
        assert!(node
            .cast(rc::Msg::Link(nodes[(i + 1) % NODES].clone()))
            .is_ok());
    }
    h.measure(BENCH, imp, n, || {
        assert!(nodes[0].cast(rc::Msg::Token(n)).is_ok());
        assert_eq!(wait(&rx), expected(n));
    });
    let cells: Vec<_> = nodes.iter().map(|n| n.get_cell()).collect();
    stop_ractor(&rt, &cells, handles);
}

// ---------------------------------------------------------------- kameo

mod km {
    use crossbeam_channel::Sender;
    use kameo::actor::ActorRef;
    use kameo::message::{Context, Message};
    use kameo::Actor;

    pub struct Link(pub ActorRef<Node>);
    pub struct Token(pub u64);

    #[derive(Actor)]
    pub struct Node {
        pub index: usize,
        pub next: Option<ActorRef<Node>>,
        pub done: Sender<usize>,
    }
    impl Message<Link> for Node {
        type Reply = ();
        async fn handle(&mut self, Link(next): Link, _: &mut Context<Self, ()>) {
            self.next = Some(next);
        }
    }
    impl Message<Token> for Node {
        type Reply = ();
        async fn handle(&mut self, Token(h): Token, _: &mut Context<Self, ()>) {
            match h {
                0 => {
                    let _ = self.done.send(self.index);
                }
                h => {
                    let next = self.next.as_ref().expect("linked");
                    assert!(next.tell(Token(h - 1)).await.is_ok());
                }
            }
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, n: u64) {
    use kameo::actor::Spawn;
    let rt = TokioRt::new(imp);
    let (tx, rx) = bounded(1);
    let nodes: Vec<_> = rt.block_on(async {
        let nodes: Vec<_> = (0..NODES)
            .map(|index| {
                km::Node::spawn(km::Node {
                    index,
                    next: None,
                    done: tx.clone(),
                })
            })
            .collect();
        for (i, node) in nodes.iter().enumerate() {
            assert!(node
                .tell(km::Link(nodes[(i + 1) % NODES].clone()))
                .await
                .is_ok());
        }
        nodes
    });
    h.measure(BENCH, imp, n, || {
        assert!(nodes[0].tell(km::Token(n)).blocking_send().is_ok());
        assert_eq!(wait(&rx), expected(n));
    });
    rt.block_on(async {
        for node in &nodes {
            let _ = node.stop_gracefully().await;
        }
        for node in &nodes {
            node.wait_for_shutdown().await;
        }
    });
}

// ---------------------------------------------------------------- stakker

struct SNode {
    index: usize,
    next: Option<stakker::Actor<SNode>>,
    out: Rc<Cell<usize>>,
}

impl SNode {
    fn init(_: CX![], index: usize, out: Rc<Cell<usize>>) -> Option<Self> {
        Some(SNode {
            index,
            next: None,
            out,
        })
    }
    fn link(&mut self, _: CX![], next: stakker::Actor<SNode>) {
        self.next = Some(next);
    }
    fn token(&mut self, _: CX![], h: u64) {
        match h {
            0 => self.out.set(self.index),
            h => call!([self.next.as_ref().expect("linked")], token(h - 1)),
        }
    }
}

fn stakker_impl(h: &mut Harness, _imp: &str, n: u64) {
    let mut s = Stakker::new(std::time::Instant::now());
    let out = Rc::new(Cell::new(usize::MAX));
    let nodes: Vec<_> = (0..NODES)
        .map(|i| actor!(s, SNode::init(i, out.clone()), ret_nop!()))
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        let next: stakker::Actor<SNode> = (*nodes[(i + 1) % NODES]).clone();
        call!([node], link(next));
    }
    s.run(std::time::Instant::now(), false);
    h.measure(BENCH, "stakker", n, || {
        out.set(usize::MAX);
        call!([nodes[0]], token(n));
        s.run(std::time::Instant::now(), false);
        assert_eq!(out.get(), expected(n));
    });
}

// ---------------------------------------------------------------- tokio

fn tokio_impl(h: &mut Harness, imp: &str, n: u64) {
    use tokio::sync::mpsc;
    let rt = TokioRt::new(imp);
    let (done, rx) = bounded(1);
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..NODES).map(|_| mpsc::channel::<u64>(1024)).unzip();
    for (index, mut inbox) in rxs.into_iter().enumerate() {
        let next = txs[(index + 1) % NODES].clone();
        let done = done.clone();
        rt.spawn(async move {
            while let Some(h) = inbox.recv().await {
                match h {
                    0 => {
                        let _ = done.send(index);
                    }
                    h => {
                        if next.send(h - 1).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
    h.measure(BENCH, imp, n, || {
        assert!(txs[0].blocking_send(n).is_ok());
        assert_eq!(wait(&rx), expected(n));
    });
    drop(txs);
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, n: u64) {
    // A hop is a thread wake-up here: a tenth of the hops keeps the run short.
    let n = (n / 10).max(1);
    let (done, rx) = bounded(1);
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..NODES).map(|_| bounded::<u64>(1024)).unzip();
    let threads: Vec<_> = rxs
        .into_iter()
        .enumerate()
        .map(|(index, inbox)| {
            let next = txs[(index + 1) % NODES].clone();
            let done = done.clone();
            std::thread::spawn(move || {
                for h in inbox {
                    match h {
                        // u64::MAX: shut down (passed on once around).
                        u64::MAX => {
                            let _ = next.send(u64::MAX);
                            break;
                        }
                        0 => {
                            let _ = done.send(index);
                        }
                        h => next.send(h - 1).expect("next alive"),
                    }
                }
            })
        })
        .collect();
    h.measure(BENCH, "crossbeam", n, || {
        txs[0].send(n).expect("node 0 alive");
        assert_eq!(wait(&rx), expected(n));
    });
    txs[0].send(u64::MAX).expect("node 0 alive");
    drop(txs);
    for t in threads {
        t.join().expect("ring thread");
    }
}
