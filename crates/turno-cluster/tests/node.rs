//! The node's protocol on the simulated broker, one behaviour at a time:
//! a verdict for each policy, nobody listening, a silent receiver, asks
//! with timeouts and stale replies, watches across nodes, undecodable and
//! unregistered messages.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use turno::{Actor, Context, DetSystem, Policy, Props, System};
use turno_cluster::node::{
    Node, NodeConfig, RemoteAddr, RemoteReplyTo, RemoteResponse, RemoteVerdict,
};
use turno_cluster::sim::{ClientState, Faults, SimBroker, SimTransport};
use turno_cluster::wire::{Codec, RemoteExit};

#[derive(Debug, Serialize, Deserialize)]
struct Job(u32);

#[derive(Debug, Serialize, Deserialize)]
struct Other(String);

struct Sink;
impl Actor for Sink {
    type Msg = Job;
    fn handle(&mut self, _: &mut Context<'_, Self>, _: Job) {}
}

struct Doubler;
impl Actor for Doubler {
    type Msg = (Job, RemoteReplyTo<u32>);
    fn handle(&mut self, _: &mut Context<'_, Self>, (j, r): Self::Msg) {
        let _ = r.reply(j.0 * 2);
    }
}

type N = Node<DetSystem, SimTransport>;

fn node(broker: &SimBroker, name: &str, codec: Codec) -> N {
    let config = NodeConfig {
        codec,
        heartbeat_every: Duration::from_millis(10),
        down_after: Duration::from_millis(50),
        ..NodeConfig::default()
    };
    let mut n = Node::new(
        name,
        1,
        DetSystem::new(7),
        broker.transport(name, Duration::ZERO),
        config,
    )
    .unwrap();
    n.register::<Job>("job").unwrap();
    n
}

/// Moves time in 1 ms steps, pumping both nodes and running their systems
/// only when `run` says so.
fn tick(broker: &SimBroker, nodes: &mut [&mut N], ms: u64, run: bool) {
    for _ in 0..ms {
        for n in nodes.iter_mut() {
            n.pump();
            if run {
                n.system_mut().run_until_idle().unwrap();
            }
            n.pump();
        }
        broker.advance(Duration::from_millis(1));
    }
}

type Log<T> = Rc<RefCell<Vec<T>>>;

fn log<T>() -> Log<T> {
    Rc::new(RefCell::new(Vec::new()))
}

#[test]
fn a_send_answers_with_the_receiving_mailboxs_verdict_under_each_policy() {
    for codec in [Codec::Postcard, Codec::Json] {
        let broker = SimBroker::new(1, Faults::none());
        let mut a = node(&broker, "a", codec);
        let mut b = node(&broker, "b.eu", Codec::Postcard);
        for (name, policy) in [
            ("old", Policy::KeepOldest(1)),
            ("new", Policy::KeepNewest(1)),
            ("reject", Policy::Reject(1)),
            ("suspend", Policy::Suspend(1)),
        ] {
            let addr = b
                .system()
                .spawn(Props::new().name(name).mailbox(policy), || Sink)
                .unwrap();
            b.export(&addr).unwrap();
        }
        let gone = b
            .system()
            .spawn(Props::new().name("gone"), || Sink)
            .unwrap();
        b.export(&gone).unwrap();
        b.system().stop(gone.id());
        b.system_mut().run_until_idle().unwrap();
        let got: Log<(String, RemoteVerdict)> = log();
        for path in ["/old", "/new", "/reject", "/suspend", "/gone", "/nobody"] {
            for i in 0..2 {
                let got = got.clone();
                let to = RemoteAddr::<Job>::new("b.eu", path);
                let p = path.to_owned();
                a.send(&to, &Job(i), Duration::from_millis(20), move |v| {
                    got.borrow_mut().push((p, v))
                })
                .unwrap();
            }
        }
        // The receiver does not run its actors meanwhile: mailboxes fill.
        tick(&broker, &mut [&mut a, &mut b], 5, false);
        let one = Some(0);
        let expected = [
            ("/old", RemoteVerdict::Enqueued { remaining: one }),
            ("/old", RemoteVerdict::Dropped),
            ("/new", RemoteVerdict::Enqueued { remaining: one }),
            ("/new", RemoteVerdict::Evicting),
            ("/reject", RemoteVerdict::Enqueued { remaining: one }),
            ("/reject", RemoteVerdict::Rejected),
            // The second send to `/suspend` waits for room (no verdict yet).
            ("/suspend", RemoteVerdict::Enqueued { remaining: one }),
            ("/gone", RemoteVerdict::Closed),
            ("/gone", RemoteVerdict::Closed),
            ("/nobody", RemoteVerdict::Closed),
            ("/nobody", RemoteVerdict::Closed),
        ];
        let got: Vec<_> = got.borrow().iter().map(|(p, v)| (p.clone(), *v)).collect();
        let expected: Vec<_> = expected.iter().map(|(p, v)| (p.to_string(), *v)).collect();
        assert_eq!(got, expected, "codec {codec:?}");
        assert_eq!(a.stats().sends, 12);
        assert_eq!(a.stats().sent_with(RemoteVerdict::Closed), 4);
        assert_eq!(b.stats().sends_decided.total(), 11);
        assert_eq!(b.stats().sends_waited, 1);
        assert_eq!(a.pending(), (1, 0));
    }
}

#[test]
fn nobody_listening_is_closed_at_once_and_a_silent_receiver_is_unknown_at_the_deadline() {
    let broker = SimBroker::new(2, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let got: Log<(u64, RemoteVerdict)> = log();
    let to = RemoteAddr::<Job>::new("b", "/sink");
    let g = got.clone();
    a.send(&to, &Job(1), Duration::from_secs(5), move |v| {
        g.borrow_mut().push((1, v))
    })
    .unwrap();
    tick(&broker, &mut [&mut a], 2, true);
    assert_eq!(
        *got.borrow(),
        [(1, RemoteVerdict::Closed)],
        "no responders: answered after one latency, not at the deadline"
    );

    // A receiver that is there but paused: no answer, Unknown at the deadline.
    let mut b = node(&broker, "b", Codec::Postcard);
    let sink = b
        .system()
        .spawn(Props::new().name("sink"), || Sink)
        .unwrap();
    b.export(&sink).unwrap();
    broker.set_state(b.transport(), ClientState::Paused);
    let g = got.clone();
    a.send(&to, &Job(2), Duration::from_millis(30), move |v| {
        g.borrow_mut().push((2, v))
    })
    .unwrap();
    tick(&broker, &mut [&mut a], 28, true);
    assert_eq!(got.borrow().len(), 1, "nothing before the deadline");
    tick(&broker, &mut [&mut a], 3, true);
    assert_eq!(got.borrow()[1], (2, RemoteVerdict::Unknown));
    assert_eq!(a.stats().sent_with(RemoteVerdict::Unknown), 1);
    assert_eq!(a.pending(), (0, 0));
}

#[test]
fn asks_reply_time_out_and_late_replies_are_counted_stale() {
    let broker = SimBroker::new(3, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let mut b = node(&broker, "b", Codec::Postcard);
    let d = b
        .system()
        .spawn(Props::new().name("double"), || Doubler)
        .unwrap();
    b.export_ask(&d, |j: Job, r| (j, r)).unwrap();
    let got: Log<RemoteResponse<u32>> = log();
    let to = RemoteAddr::<Job>::new("b", "/double");
    let g = got.clone();
    a.ask(&to, &Job(21), Duration::from_millis(50), move |r| {
        g.borrow_mut().push(r)
    })
    .unwrap();
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(*got.borrow(), [RemoteResponse::Reply(42)]);

    // The asked node does not run its actor before the deadline: time out,
    // then the reply comes and is stale.
    let g = got.clone();
    a.ask(&to, &Job(5), Duration::from_millis(20), move |r| {
        g.borrow_mut().push(r)
    })
    .unwrap();
    tick(&broker, &mut [&mut a, &mut b], 25, false);
    assert_eq!(got.borrow()[1], RemoteResponse::TimedOut);
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(got.borrow().len(), 2, "the late reply is not handed over");
    assert_eq!(a.stats().stale_replies, 1);
    assert_eq!(
        (
            a.stats().asks,
            a.stats().asks_replied,
            a.stats().asks_timed_out
        ),
        (2, 1, 1)
    );

    // An abandoned (superseded) request: its reply is stale too.
    let g = got.clone();
    let req = a
        .ask(&to, &Job(6), Duration::from_millis(50), move |r| {
            g.borrow_mut().push(r)
        })
        .unwrap();
    assert!(a.abandon(req));
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(got.borrow().len(), 2);
    assert_eq!(a.stats().stale_replies, 2);

    // Asking an actor that is not there: not delivered, closed.
    let g = got.clone();
    let nobody = RemoteAddr::<Job>::new("b", "/nobody");
    a.ask(&nobody, &Job(1), Duration::from_millis(50), move |r| {
        g.borrow_mut().push(r)
    })
    .unwrap();
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(
        got.borrow()[2],
        RemoteResponse::NotDelivered(RemoteVerdict::Closed)
    );
}

struct Fragile;
impl Actor for Fragile {
    type Msg = Job;
    fn handle(&mut self, _: &mut Context<'_, Self>, j: Job) {
        panic!("job {} is too heavy", j.0);
    }
}

#[test]
fn a_remote_watcher_learns_why_an_actor_ended() {
    let broker = SimBroker::new(5, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let mut b = node(&broker, "b", Codec::Json);
    let f = b
        .system()
        .spawn(Props::new().name("fragile"), || Fragile)
        .unwrap();
    b.export(&f).unwrap();
    tick(&broker, &mut [&mut a, &mut b], 20, true);
    let got: Log<RemoteExit> = log();
    let g = got.clone();
    a.watch(&RemoteAddr::<Job>::new("b", "/fragile"), move |r| {
        g.borrow_mut().push(r)
    });
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    // Each job fails a turn; past its supervisor's restarts it fails for
    // good.
    let to = RemoteAddr::<Job>::new("b", "/fragile");
    for i in 0..10 {
        a.tell(&to, &Job(i)).unwrap();
        tick(&broker, &mut [&mut a, &mut b], 2, true);
        if !b.system().is_alive(f.id()) {
            break;
        }
    }
    assert!(!b.system().is_alive(f.id()), "the actor failed for good");
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    let got = got.borrow();
    assert_eq!(got.len(), 1, "{got:?}");
    match &got[0] {
        RemoteExit::Failed(why) => assert!(why.contains("too heavy"), "{why}"),
        other => panic!("the watcher learned {other:?}"),
    }
}

#[test]
fn watchers_learn_of_a_stop_and_of_a_node_declared_down() {
    let broker = SimBroker::new(4, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let mut b = node(&broker, "b", Codec::Postcard);
    let x = b.system().spawn(Props::new().name("x"), || Sink).unwrap();
    let y = b.system().spawn(Props::new().name("y"), || Sink).unwrap();
    b.export(&x).unwrap();
    b.export(&y).unwrap();
    tick(&broker, &mut [&mut a, &mut b], 20, true);
    assert_eq!(a.peer("b"), Some(1), "heartbeats made b known");
    let got: Log<(&str, RemoteExit)> = log();
    for (p, tag) in [("/x", "x"), ("/y", "y"), ("/z", "z")] {
        let g = got.clone();
        a.watch(&RemoteAddr::<Job>::new("b", p), move |r| {
            g.borrow_mut().push((tag, r))
        });
    }
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(*got.borrow(), [("z", RemoteExit::NoSuchActor)]);
    b.system().stop(x.id());
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(got.borrow()[1], ("x", RemoteExit::Stopped));

    // b crashes (SIGKILL): a declares it down within down_after plus one
    // heartbeat, and y's watcher learns it.
    broker.set_state(b.transport(), ClientState::Crashed);
    let b_ref = b.me().clone();
    drop(b);
    let t0 = broker.now();
    while got.borrow().len() < 3 {
        tick(&broker, &mut [&mut a], 1, true);
        assert!(
            broker.now() - t0 < Duration::from_millis(80),
            "not detected in time"
        );
    }
    assert_eq!(got.borrow()[2], ("y", RemoteExit::NodeDown(b_ref)));
    assert_eq!(a.peer("b"), None);
}

#[test]
fn a_paused_node_that_comes_back_is_a_new_incarnation() {
    let broker = SimBroker::new(5, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let mut b = node(&broker, "b", Codec::Postcard);
    tick(&broker, &mut [&mut a, &mut b], 20, true);
    assert_eq!(a.peer("b"), Some(1));
    broker.set_state(b.transport(), ClientState::Paused);
    tick(&broker, &mut [&mut a], 100, true);
    assert_eq!(a.peer("b"), None, "declared down while paused");
    broker.set_state(b.transport(), ClientState::Up);
    tick(&broker, &mut [&mut a, &mut b], 30, true);
    assert_eq!(
        b.me().inc,
        2,
        "b noticed its pause and took a new incarnation"
    );
    assert_eq!(a.peer("b"), Some(2));
    assert_eq!(b.retired_stats().len(), 1);
}

#[test]
fn tells_are_ordered_per_sender_and_losses_are_counted_by_the_receiver() {
    let broker = SimBroker::new(6, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let mut b = node(&broker, "b", Codec::Postcard);
    let sink = b
        .system()
        .spawn(
            Props::new().name("sink").mailbox(Policy::KeepOldest(1000)),
            || Sink,
        )
        .unwrap();
    b.export(&sink).unwrap();
    let to = RemoteAddr::<Job>::new("b", "/sink");
    assert!(
        !a.tell(&to, &Job(0)).unwrap(),
        "b not known up yet: not sent"
    );
    assert_eq!(a.stats().tells_unsent, 1);
    tick(&broker, &mut [&mut a, &mut b], 20, true);
    for i in 0..100 {
        assert!(a.tell(&to, &Job(i)).unwrap());
    }
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(b.stats().tells_decided.enqueued, 100);
    // Now a lossy, reordering network.
    broker.set_faults(Faults {
        drop: 200,
        duplicate: 100,
        latency: Duration::from_micros(100),
        jitter: Duration::from_millis(3),
    });
    for i in 0..300 {
        let _ = a.tell(&to, &Job(i));
        if i % 10 == 0 {
            tick(&broker, &mut [&mut a, &mut b], 1, true);
        }
    }
    broker.set_faults(Faults::none());
    tick(&broker, &mut [&mut a, &mut b], 50, true);
    let s = b.stats();
    let sent = a.stats().tells_out.values().sum::<u64>();
    assert_eq!(sent, 400);
    assert_eq!(
        s.tells_decided.total() + s.tells_lost,
        400,
        "every tell decided or counted lost"
    );
    assert!(s.tells_lost > 0 && s.tells_duplicate > 0, "{s:?}");
    assert_eq!(
        sink.stats().offered,
        s.tells_decided.total(),
        "each decided tell offered to the mailbox once"
    );
}

#[test]
fn undecodable_and_unregistered_messages_are_closed_and_counted_never_delivered() {
    let broker = SimBroker::new(7, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let mut b = node(&broker, "b", Codec::Postcard);
    let sink = b
        .system()
        .spawn(Props::new().name("sink"), || Sink)
        .unwrap();
    b.export(&sink).unwrap();
    // The sender does not know the type: refused before anything is sent.
    let err = a.send(
        &RemoteAddr::<Other>::new("b", "/sink"),
        &Other("x".into()),
        Duration::from_millis(10),
        |_| {},
    );
    assert!(err.is_err());
    // The sender knows "other" but the receiver's actor takes "job" only.
    a.register::<Other>("other").unwrap();
    let got: Log<RemoteVerdict> = log();
    let g = got.clone();
    a.send(
        &RemoteAddr::<Other>::new("b", "/sink"),
        &Other("x".into()),
        Duration::from_millis(10),
        move |v| g.borrow_mut().push(v),
    )
    .unwrap();
    // Garbage on the actor's subject.
    let mut raw = broker.transport("raw", Duration::ZERO);
    turno_cluster::transport::Transport::publish(
        &mut raw,
        "turno.b.a.sink",
        None,
        vec![0, 0xff, 0xff],
    )
    .unwrap();
    tick(&broker, &mut [&mut a, &mut b], 5, true);
    assert_eq!(*got.borrow(), [RemoteVerdict::Closed]);
    assert_eq!(b.stats().undecodable, 1);
    assert_eq!(sink.stats().offered, 0);
}

#[test]
fn a_node_cut_off_comes_back_new_and_the_others_keep_their_incarnations() {
    let broker = SimBroker::new(8, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let mut b = node(&broker, "b", Codec::Postcard);
    let mut c = node(&broker, "c", Codec::Postcard);
    tick(&broker, &mut [&mut a, &mut b, &mut c], 20, true);
    assert_eq!((a.peer("c"), c.peer("a")), (Some(1), Some(1)));
    broker.set_state(c.transport(), ClientState::Partitioned);
    tick(&broker, &mut [&mut a, &mut b, &mut c], 100, true);
    assert_eq!((a.peer("c"), b.peer("c")), (None, None), "c declared down");
    assert_eq!((c.peer("a"), c.peer("b")), (None, None), "c heard nobody");
    broker.set_state(c.transport(), ClientState::Up);
    tick(&broker, &mut [&mut a, &mut b, &mut c], 50, true);
    assert_eq!(
        c.me().inc,
        2,
        "the node that was cut off is a new incarnation"
    );
    assert_eq!((a.me().inc, b.me().inc), (1, 1), "the others are not");
    assert_eq!((a.peer("c"), b.peer("c")), (Some(2), Some(2)));
    assert_eq!((c.peer("a"), c.peer("b")), (Some(1), Some(1)));
}

#[test]
fn a_send_to_a_full_suspend_mailbox_waits_for_room_in_order_then_is_full() {
    let broker = SimBroker::new(3, Faults::none());
    let mut a = node(&broker, "a", Codec::Postcard);
    let config = NodeConfig {
        heartbeat_every: Duration::from_millis(10),
        down_after: Duration::from_millis(50),
        suspend_wait: Duration::from_millis(30),
        suspend_waiters: 2,
        ..NodeConfig::default()
    };
    let mut b = Node::new(
        "b",
        1,
        DetSystem::new(7),
        broker.transport("b", Duration::ZERO),
        config,
    )
    .unwrap();
    b.register::<Job>("job").unwrap();
    let sink = b
        .system()
        .spawn(
            Props::new().name("slow").mailbox(Policy::Suspend(1)),
            || Sink,
        )
        .unwrap();
    b.export(&sink).unwrap();
    let to = RemoteAddr::<Job>::new("b", "/slow");
    let got: Log<(u32, RemoteVerdict)> = log();
    let send = |a: &mut N, n: u32| {
        let g = got.clone();
        a.send(&to, &Job(n), Duration::from_millis(500), move |v| {
            g.borrow_mut().push((n, v))
        })
        .unwrap();
    };
    for n in 0..4 {
        send(&mut a, n);
    }
    // The actor does not run: one message fits, two wait, one is past the
    // bound of waiters.
    tick(&broker, &mut [&mut a, &mut b], 10, false);
    assert_eq!(
        *got.borrow(),
        [
            (0, RemoteVerdict::Enqueued { remaining: Some(0) }),
            (3, RemoteVerdict::Full)
        ]
    );
    assert_eq!(b.stats().sends_waited, 2);
    // Room frees: the waiting sends get it in their order of arrival.
    tick(&broker, &mut [&mut a, &mut b], 10, true);
    assert_eq!(
        got.borrow()[2..],
        [
            (1, RemoteVerdict::Enqueued { remaining: Some(0) }),
            (2, RemoteVerdict::Enqueued { remaining: Some(0) })
        ]
    );
    // A wait that runs out is answered Full.
    for n in 4..6 {
        send(&mut a, n);
    }
    tick(&broker, &mut [&mut a, &mut b], 50, false);
    assert_eq!(
        got.borrow()[4..],
        [
            (4, RemoteVerdict::Enqueued { remaining: Some(0) }),
            (5, RemoteVerdict::Full)
        ]
    );
    assert_eq!(a.stats().sends, 6);
    assert_eq!(b.stats().sends_decided.total(), 6);
}

#[test]
fn sends_past_the_bound_of_pending_requests_are_unsent() {
    let broker = SimBroker::new(4, Faults::none());
    let config = NodeConfig {
        max_pending: 2,
        ..NodeConfig::default()
    };
    let mut a = Node::new(
        "a",
        1,
        DetSystem::new(1),
        broker.transport("a", Duration::ZERO),
        config,
    )
    .unwrap();
    a.register::<Job>("job").unwrap();
    let to = RemoteAddr::<Job>::new("b", "/nobody");
    let got: Log<RemoteVerdict> = log();
    for n in 0..3 {
        let g = got.clone();
        a.send(&to, &Job(n), Duration::from_secs(1), move |v| {
            g.borrow_mut().push(v)
        })
        .unwrap();
    }
    assert_eq!(*got.borrow(), [RemoteVerdict::Unsent]);
    assert_eq!(a.pending(), (2, 0));
}
