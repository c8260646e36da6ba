//! Stable names: a name is unique among live siblings (the tree and the
//! turn's pending spawns), every actor has a path from the root, a restart
//! keeps it and a stop frees it. Run on the deterministic and the threaded
//! schedulers.

#![cfg(not(turno_loom))]

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{settle, spawn};
use parking_lot::Mutex;
use turno::trace::{ActorEvent, RingSink};
use turno::{
    Actor, ActorId, ActorPath, Addr, Context, Directive, NameError, Props, SpawnError, Supervision,
    System,
};

on_both! {
    top_level_names_are_unique_under_the_root => top_level_names_are_unique_under_the_root;
    a_name_is_refused_when_a_sibling_or_a_pending_spawn_has_it => a_name_is_refused_when_a_sibling_or_a_pending_spawn_has_it;
    a_restarted_child_keeps_its_name_and_path => a_restarted_child_keeps_its_name_and_path;
    a_stopped_childs_name_is_free_again => a_stopped_childs_name_is_free_again;
    a_stopped_top_level_name_is_free_again => a_stopped_top_level_name_is_free_again;
    the_decider_and_the_escalation_name_the_path => the_decider_and_the_escalation_name_the_path;
}

struct Idle;
impl Actor for Idle {
    type Msg = ();
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {}
}

/// The error for a second top-level actor named `name`.
fn duplicate_at_root(name: &str) -> SpawnError {
    SpawnError::DuplicateName {
        parent: ActorPath::root(),
        name: name.into(),
    }
}

// ----- the root -----------------------------------------------------------

fn top_level_names_are_unique_under_the_root(sys: &mut impl System) {
    let a = spawn(sys, Props::new().name("a"), || Idle);
    assert_eq!(a.path().as_str(), "/a");
    assert_eq!(a.name(), "a");
    let again = sys.spawn(Props::new().name("a"), || Idle).unwrap_err();
    assert_eq!(again, duplicate_at_root("a"));
    assert_eq!(
        again.to_string(),
        "cannot spawn \"a\" under /: a live sibling already has that name"
    );
    // Unnamed actors never clash; their segment is `$<id>`.
    let u1 = spawn(sys, Props::new(), || Idle);
    let u2 = spawn(sys, Props::new(), || Idle);
    assert_eq!(u1.path().as_str(), format!("/${}", u1.id().as_u64()));
    assert_eq!(u2.name(), format!("${}", u2.id().as_u64()));
    settle(sys);
    // Only the first "a" exists, and the lookup by path finds it.
    assert_eq!(sys.actor_count(), 3);
    assert_eq!(sys.actor_at("/a"), Some(a.id()));
    assert_eq!(sys.path(a.id()).unwrap().as_str(), "/a");
    assert_eq!(sys.name(a.id()).as_deref(), Some("a"));
    // Unnamed actors are found by id, not by path.
    assert_eq!(sys.actor_at(u1.path().as_str()), None);
    assert_eq!(sys.actor_at("/b"), None);
    // Names that cannot be a path segment.
    for (name, source) in [
        ("", NameError::Empty),
        ("x/y", NameError::Slash),
        ("$1", NameError::Reserved),
        ("tab\there", NameError::Control),
    ] {
        assert_eq!(
            sys.spawn(Props::new().name(name), || Idle).unwrap_err(),
            SpawnError::InvalidName {
                name: name.into(),
                source
            }
        );
    }
    assert_eq!(sys.actor_count(), 3);
}

// ----- siblings -------------------------------------------------------------

/// What the supervisor under test was asked to do, and what it saw.
enum SupMsg {
    /// Spawn one child per name, in one turn.
    Spawn(Vec<&'static str>),
    /// Stop the live child with this name.
    Stop(&'static str),
    /// Crash the child with this name.
    Crash(&'static str),
    /// A watched child ended.
    Ended(ActorId),
}

type Results = Arc<Mutex<Vec<Result<(ActorId, String), SpawnError>>>>;

struct Sup {
    results: Results,
    children: Vec<Addr<WMsg>>,
    /// Spawn this name again as soon as the child that had it has ended.
    respawn_on_end: Option<&'static str>,
}

impl Actor for Sup {
    type Msg = SupMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: SupMsg) {
        match m {
            SupMsg::Spawn(names) => {
                for name in names {
                    self.spawn(ctx, name);
                }
            }
            SupMsg::Stop(name) => {
                let child = self.children.iter().find(|c| c.name() == name).unwrap();
                let id = child.id();
                ctx.watch(child, move |_, _| SupMsg::Ended(id));
                ctx.stop_actor(id);
                self.respawn_on_end = Some(name);
            }
            SupMsg::Crash(name) => {
                let child = self.children.iter().find(|c| c.name() == name).unwrap();
                let _ = ctx.send(child, WMsg::Crash);
            }
            SupMsg::Ended(id) => {
                self.children.retain(|c| c.id() != id);
                if let Some(name) = self.respawn_on_end.take() {
                    self.spawn(ctx, name);
                }
            }
        }
    }
}

impl Sup {
    fn spawn(&mut self, ctx: &mut Context<'_, Self>, name: &'static str) {
        let r = ctx.spawn(Props::new().name(name), || Worker);
        let r = r.map(|a| {
            let seen = (a.id(), a.path().to_string());
            self.children.push(a);
            seen
        });
        self.results.lock().push(r);
    }
}

fn sup(sys: &impl System, name: &str, supervision: Supervision) -> (Addr<SupMsg>, Results) {
    let results = Results::default();
    let r = results.clone();
    let addr = spawn(
        sys,
        Props::new().name(name).supervision(supervision),
        move || Sup {
            results: r.clone(),
            children: Vec::new(),
            respawn_on_end: None,
        },
    );
    (addr, results)
}

enum WMsg {
    Crash,
}

struct Worker;
impl Actor for Worker {
    type Msg = WMsg;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, m: WMsg) {
        match m {
            WMsg::Crash => panic!("worker crashed"),
        }
    }
}

fn ok_path(r: &Result<(ActorId, String), SpawnError>) -> &str {
    &r.as_ref().expect("spawned").1
}

fn dup_under(r: &Result<(ActorId, String), SpawnError>, parent: &str, name: &str) {
    match r {
        Err(SpawnError::DuplicateName { parent: p, name: n }) => {
            assert_eq!((p.as_str(), n.as_str()), (parent, name));
        }
        other => panic!("expected a duplicate {name:?} under {parent}, got {other:?}"),
    }
}

fn a_name_is_refused_when_a_sibling_or_a_pending_spawn_has_it(sys: &mut impl System) {
    let (s, results) = sup(sys, "sup", Supervision::default());
    let (other, other_results) = sup(sys, "other", Supervision::default());
    // Twice in one turn: the second sees the first, still pending.
    let _ = s.try_send(SupMsg::Spawn(vec!["w", "w", "v"]));
    settle(sys);
    {
        let r = results.lock();
        assert_eq!(r.len(), 3);
        assert_eq!(ok_path(&r[0]), "/sup/w");
        dup_under(&r[1], "/sup", "w");
        assert_eq!(ok_path(&r[2]), "/sup/v");
        assert_eq!(
            r[1].as_ref().unwrap_err().to_string(),
            "cannot spawn \"w\" under /sup: a live sibling already has that name"
        );
    }
    // In a later turn: the first is in the tree now.
    let _ = s.try_send(SupMsg::Spawn(vec!["w"]));
    // A cousin may have the same name, and so may a child of a top-level
    // actor and a top-level actor.
    let _ = other.try_send(SupMsg::Spawn(vec!["w", "sup"]));
    settle(sys);
    dup_under(&results.lock()[3], "/sup", "w");
    let o = other_results.lock();
    assert_eq!(ok_path(&o[0]), "/other/w");
    assert_eq!(ok_path(&o[1]), "/other/sup");
    let first_w = results.lock()[0].as_ref().unwrap().0;
    assert_eq!(sys.actor_at("/sup/w"), Some(first_w));
    assert_eq!(sys.actor_at("/other/w"), Some(o[0].as_ref().unwrap().0));
    assert_eq!(sys.children(s.id()).len(), 2);
    assert_eq!(sys.actor_count(), 6);
}

// ----- restart and stop -----------------------------------------------------

fn a_restarted_child_keeps_its_name_and_path(sys: &mut impl System) {
    let (s, results) = sup(sys, "sup", Supervision::default());
    let _ = s.try_send(SupMsg::Spawn(vec!["w"]));
    settle(sys);
    let w = results.lock()[0].as_ref().unwrap().0;
    let _ = s.try_send(SupMsg::Crash("w"));
    settle(sys);
    assert_eq!(sys.restarts(w), 1);
    assert!(sys.is_alive(w));
    assert_eq!(sys.path(w).unwrap().as_str(), "/sup/w");
    assert_eq!(sys.actor_at("/sup/w"), Some(w));
    // Still its name: a new "w" is refused.
    let _ = s.try_send(SupMsg::Spawn(vec!["w"]));
    settle(sys);
    dup_under(&results.lock()[1], "/sup", "w");
    assert_eq!(sys.children(s.id()), vec![w]);
}

fn a_stopped_childs_name_is_free_again(sys: &mut impl System) {
    let (s, results) = sup(sys, "sup", Supervision::default());
    let _ = s.try_send(SupMsg::Spawn(vec!["w"]));
    settle(sys);
    let first = results.lock()[0].as_ref().unwrap().0;
    // Stop it, and spawn "w" again in the turn that hears it has ended.
    let _ = s.try_send(SupMsg::Stop("w"));
    settle(sys);
    let r = results.lock();
    assert_eq!(r.len(), 2);
    let (second, path) = r[1].as_ref().expect("the name was free again");
    assert_ne!(*second, first);
    assert_eq!(path, "/sup/w");
    assert!(!sys.is_alive(first));
    assert_eq!(sys.actor_at("/sup/w"), Some(*second));
    assert_eq!(sys.children(s.id()), vec![*second]);
}

fn a_stopped_top_level_name_is_free_again(sys: &mut impl System) {
    let a = spawn(sys, Props::new().name("a"), || Idle);
    sys.stop(a.id());
    settle(sys);
    assert!(!sys.is_alive(a.id()));
    assert_eq!(sys.actor_at("/a"), None);
    let b = sys.spawn(Props::new().name("a"), || Idle).unwrap();
    assert_ne!(b.id(), a.id());
    assert_eq!(b.path().as_str(), "/a");
    settle(sys);
    assert_eq!(sys.actor_at("/a"), Some(b.id()));
}

// ----- supervision messages ---------------------------------------------------

fn the_decider_and_the_escalation_name_the_path(sys: &mut impl System) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let escalate = Supervision::default().decider(move |f| {
        s2.lock().push((f.actor, f.path.to_string()));
        Directive::Escalate
    });
    let (s, results) = sup(sys, "sup", escalate);
    let _ = s.try_send(SupMsg::Spawn(vec!["w"]));
    settle(sys);
    let w = results.lock()[0].as_ref().unwrap().0;
    let _ = s.try_send(SupMsg::Crash("w"));
    settle(sys);
    assert_eq!(seen.lock().as_slice(), [(w, "/sup/w".to_string())]);
    // The supervisor failed in turn and the root restarted it, under its
    // path; its failed child stopped first and freed its name.
    assert_eq!(sys.restarts(s.id()), 1);
    assert_eq!(sys.actor_at("/sup"), Some(s.id()));
    assert!(!sys.is_alive(w));
    assert_eq!(sys.actor_at("/sup/w"), None);
    let _ = s.try_send(SupMsg::Spawn(vec!["w"]));
    settle(sys);
    let again = results.lock()[1].as_ref().expect("the name is free").0;
    assert_ne!(again, w);
}

// ----- the trace and the escalation text (deterministic) --------------------

#[test]
fn the_trace_records_each_path_and_the_escalation_names_the_child() {
    let ring = RingSink::new(4096);
    let mut sys = turno::DetSystem::builder()
        .seed(3)
        .trace(ring.clone())
        .build();
    let escalate = Supervision::default().decider(|_| Directive::Escalate);
    let (s, _results) = sup(&sys, "sup", escalate);
    let _ = s.try_send(SupMsg::Spawn(vec!["w"]));
    sys.run_until_idle().unwrap();
    let _ = s.try_send(SupMsg::Crash("w"));
    sys.run_until_idle().unwrap();
    let events = ring.events();
    let spawns: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            ActorEvent::Spawn { name, path, .. } => Some((name.clone(), path.clone()?)),
            _ => None,
        })
        .collect();
    assert_eq!(
        spawns,
        [("sup".into(), "/sup".into()), ("w".into(), "/sup/w".into())]
    );
    let sup_failure = events
        .iter()
        .find_map(|e| match &e.kind {
            ActorEvent::Fail { actor, error } if actor.0 == s.id().as_u64() => Some(error.clone()),
            _ => None,
        })
        .expect("the supervisor failed");
    assert!(
        sup_failure.starts_with("child /sup/w (#2) failed and could not be restarted: "),
        "{sup_failure}"
    );
}

// ----- threads racing for one name ------------------------------------------

#[test]
fn threads_spawning_one_name_at_once_get_one_actor() {
    for _ in 0..20 {
        let sys = Arc::new(turno::ThreadedSystem::builder().threads(2).build());
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (sys, barrier) = (sys.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    sys.spawn(Props::new().name("only"), || Idle)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "{results:?}");
        for r in results.iter().filter(|r| r.is_err()) {
            assert_eq!(r.as_ref().unwrap_err(), &duplicate_at_root("only"));
        }
        assert_eq!(sys.actor_at("/only"), Some(won[0].id()));
        assert_eq!(sys.actor_count(), 1);
        let sys = Arc::into_inner(sys).expect("the threads are joined");
        sys.shutdown(Duration::from_secs(10)).unwrap();
    }
}
