//! The threaded scheduler's affinity (`threaded.rs`, `idle.rs`): an actor
//! woken by a turn stays on that turn's worker, and another worker takes it
//! only when it has waited there, about `turno::threaded::WATCH`. What must
//! hold whatever the timing: an actor woken by a turn that then runs for a
//! long time is not stranded behind it, since the other worker, watching,
//! steals it while the long turn still runs.

#![cfg(not(turno_loom))]

use std::sync::mpsc;
use std::time::Duration;

use turno::{Actor, Addr, Context, Props, System, ThreadedSystem};

/// Reports on `ran` that it ran.
struct Woken {
    ran: mpsc::Sender<&'static str>,
    name: &'static str,
}

impl Actor for Woken {
    type Msg = ();
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, (): ()) {
        let _ = self.ran.send(self.name);
    }
}

/// Wakes both actors (the second takes the worker's LIFO slot, so the
/// first waits in the worker's deque), then blocks its worker until the
/// first has run, or 10 s.
struct Long {
    first: Addr<()>,
    second: Addr<()>,
    ran: mpsc::Receiver<&'static str>,
    outcome: mpsc::Sender<Result<(), String>>,
}

impl Actor for Long {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, (): ()) {
        assert!(ctx.send(&self.first, ()).is_enqueued());
        assert!(ctx.send(&self.second, ()).is_enqueued());
        let outcome = match self.ran.recv_timeout(Duration::from_secs(10)) {
            Ok("first") => Ok(()),
            Ok(other) => Err(format!("{other} ran first, from the LIFO slot")),
            Err(e) => Err(format!("the woken actor was stranded: {e}")),
        };
        let _ = self.outcome.send(outcome);
    }
}

/// Spawns the two actors a long turn wakes and the [`Long`] actor itself:
/// its address, and where its outcome comes.
fn long_turn(sys: &ThreadedSystem) -> (Addr<()>, mpsc::Receiver<Result<(), String>>) {
    let (ran_tx, ran_rx) = mpsc::channel();
    let (first_tx, second_tx) = (ran_tx.clone(), ran_tx);
    let first = sys
        .spawn(Props::new(), move || Woken {
            ran: first_tx.clone(),
            name: "first",
        })
        .unwrap();
    let second = sys
        .spawn(Props::new(), move || Woken {
            ran: second_tx.clone(),
            name: "second",
        })
        .unwrap();
    let (outcome_tx, outcome_rx) = mpsc::channel();
    let mut parts = Some((first, second, ran_rx, outcome_tx));
    let long = sys
        .spawn(Props::new(), move || {
            let (first, second, ran, outcome) = parts.take().expect("spawned once");
            Long {
                first,
                second,
                ran,
                outcome,
            }
        })
        .unwrap();
    (long, outcome_rx)
}

#[test]
fn an_actor_woken_behind_a_long_turn_is_stolen_while_it_runs() {
    for _ in 0..20 {
        let sys = ThreadedSystem::builder().threads(2).build();
        let (long, outcome_rx) = long_turn(&sys);
        assert!(sys.wait_idle(Duration::from_secs(5)));
        assert!(long.try_send(()).is_enqueued());
        let outcome = outcome_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the long turn reports");
        outcome.expect("the other worker ran the woken actor during the long turn");
        sys.shutdown(Duration::from_secs(5)).unwrap();
    }
}

/// What the hub of a star gets: the start, or a spoke's token back.
enum Hub {
    Start(Vec<Addr<Addr<Hub>>>),
    Back(Addr<Addr<Hub>>),
}

/// The hub of a star of actors (as chameneos's mall, every message passes
/// through it, so the star's actors settle on one worker, whose deque keeps
/// the spokes woken by the hub's turns while it drains them): each token a
/// spoke sends back goes out again until `until`; then the hub sends `go`
/// to the long turn's actor, once (taking it).
struct Star {
    until: std::time::Instant,
    go: Option<Addr<()>>,
}

impl Actor for Star {
    type Msg = Hub;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: Hub) {
        let me = ctx.addr();
        match msg {
            Hub::Start(spokes) => {
                for spoke in &spokes {
                    assert!(ctx.send(spoke, me.clone()).is_enqueued());
                }
            }
            Hub::Back(spoke) if std::time::Instant::now() < self.until => {
                assert!(ctx.send(&spoke, me).is_enqueued());
            }
            Hub::Back(_) => {
                if let Some(go) = self.go.take() {
                    assert!(ctx.send(&go, ()).is_enqueued());
                }
            }
        }
    }
}

/// A spoke of the star: sends the token back to the hub.
struct Spoke;

impl Actor for Spoke {
    type Msg = Addr<Hub>;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, hub: Addr<Hub>) {
        let me = ctx.addr();
        assert!(ctx.send(&hub, Hub::Back(me)).is_enqueued());
    }
}

/// The same, after the other worker has watched a backlog that kept
/// draining for a while (a star of a hub and six spokes: the spokes wait in
/// the busy worker's deque and are run within a nap), which grows the
/// watcher's nap towards `WATCH_MAX`: when the long turn comes, the actor
/// behind it is still stolen while it runs.
#[test]
fn an_actor_behind_a_long_turn_is_stolen_after_a_backlog_that_kept_draining() {
    for _ in 0..5 {
        let sys = ThreadedSystem::builder().threads(2).build();
        let (long, outcome_rx) = long_turn(&sys);
        let until = std::time::Instant::now() + Duration::from_millis(60);
        let spokes: Vec<Addr<Addr<Hub>>> = (0..6)
            .map(|_| sys.spawn(Props::new(), || Spoke).unwrap())
            .collect();
        let go = long.clone();
        let hub = sys
            .spawn(Props::new(), move || Star {
                until,
                go: Some(go.clone()),
            })
            .unwrap();
        assert!(hub.try_send(Hub::Start(spokes)).is_enqueued());
        let outcome = outcome_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the long turn reports");
        outcome.expect("the other worker ran the woken actor during the long turn");
        sys.shutdown(Duration::from_secs(5)).unwrap();
    }
}
