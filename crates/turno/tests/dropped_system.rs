//! A system dropped without `shutdown` leaves no actor behind (an actor's
//! cell holds its own address, so an actor nobody ends would never be
//! freed). A dropped `LocalSystem` or `ThreadedSystem` stops its actors at
//! once (`stopped` hooks run, mail still queued becomes dead letters); a
//! dropped `DetSystem` is the death of the simulated process: no turn runs,
//! nothing more is traced, and the actors are freed with their mail.

#![cfg(not(turno_loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use turno::trace::RingSink;
use turno::{Actor, Context, DetSystem, LocalSystem, Props, System, ThreadedSystem};

/// Holds a token (so the test sees when it is freed), spawns one child of
/// its own kind on start when asked to, and counts its `stopped` hook.
struct Holder {
    _token: Arc<()>,
    stopped: Arc<AtomicUsize>,
    with_child: bool,
}

impl Actor for Holder {
    type Msg = u32;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if self.with_child {
            let (token, stopped) = (self._token.clone(), self.stopped.clone());
            ctx.spawn(Props::new(), move || Holder {
                _token: token.clone(),
                stopped: stopped.clone(),
                with_child: false,
            })
            .unwrap();
        }
    }

    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _n: u32) {}

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.stopped.fetch_add(1, Ordering::SeqCst);
    }
}

/// Two parents with a child each, run until idle, then one more message
/// queued to each parent; `settle` runs the system.
fn populate<S: System>(
    sys: &mut S,
    settle: fn(&mut S),
    token: &Arc<()>,
    stopped: &Arc<AtomicUsize>,
) -> Vec<turno::Addr<u32>> {
    let parents: Vec<_> = (0..2)
        .map(|_| {
            let (t, s) = (token.clone(), stopped.clone());
            sys.spawn(Props::new(), move || Holder {
                _token: t.clone(),
                stopped: s.clone(),
                with_child: true,
            })
            .unwrap()
        })
        .collect();
    settle(sys);
    assert_eq!(sys.actor_count(), 4);
    for p in &parents {
        assert!(p.try_send(7).is_enqueued());
    }
    parents
}

fn dropping_stops_and_frees<S: System>(mut sys: S, settle: fn(&mut S)) {
    let token = Arc::new(());
    let stopped = Arc::new(AtomicUsize::new(0));
    drop(populate(&mut sys, settle, &token, &stopped));
    assert!(Arc::strong_count(&token) > 1);
    drop(sys);
    assert_eq!(
        stopped.load(Ordering::SeqCst),
        4,
        "every actor's stopped hook ran"
    );
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "every actor, and its factory, freed"
    );
}

#[test]
fn a_dropped_deterministic_system_frees_its_actors_without_a_turn() {
    let ring = RingSink::new(1024);
    let mut sys = DetSystem::builder().seed(3).trace(ring.clone()).build();
    let token = Arc::new(());
    let stopped = Arc::new(AtomicUsize::new(0));
    let parents = populate(
        &mut sys,
        |s| {
            s.run_until_idle().unwrap();
        },
        &token,
        &stopped,
    );
    let traced = ring.events().len();
    drop(sys);
    assert_eq!(stopped.load(Ordering::SeqCst), 0, "no hook ran");
    assert_eq!(
        ring.events().len(),
        traced,
        "nothing traced after the last step"
    );
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "every actor, and its factory, freed"
    );
    // An address kept past the system answers that its actor is gone.
    assert!(matches!(parents[0].try_send(8), turno::Verdict::Closed(8)));
}

#[test]
fn a_dropped_local_system_stops_and_frees_its_actors() {
    dropping_stops_and_frees(LocalSystem::new(), |s| {
        s.run_until_idle();
    });
}

#[test]
fn a_dropped_threaded_system_stops_and_frees_its_actors() {
    dropping_stops_and_frees(ThreadedSystem::new(), |s| {
        assert!(s.settle(std::time::Duration::from_secs(10)));
    });
}
