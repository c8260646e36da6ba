//! One face for both schedulers, so the core tests run on each.

#![allow(dead_code)]

pub mod tree;

use std::time::Duration;

use turno::ThreadedSystem;
use turno::{Actor, ActorId, Addr, DetSystem, Props};

/// What the core tests need from a system.
pub trait Sys {
    /// Spawns a top-level actor.
    fn spawn<A: Actor>(
        &mut self,
        props: Props,
        f: impl FnMut() -> A + Send + 'static,
    ) -> Addr<A::Msg>;
    /// Asks an actor to stop.
    fn stop(&mut self, id: ActorId);
    /// Runs until nothing is runnable (deterministic) or waits for that (threaded).
    fn settle(&mut self);
    /// Lets `d` of time pass (virtual or real), then settles.
    fn sleep(&mut self, d: Duration);
    /// Liveness.
    fn is_alive(&self, id: ActorId) -> bool;
    /// Restart count.
    fn restarts(&self, id: ActorId) -> u32;
    /// Children in start order.
    fn children(&self, id: ActorId) -> Vec<ActorId>;
    /// Dead letters so far.
    fn dead_letters(&self) -> u64;
}

impl Sys for DetSystem {
    fn spawn<A: Actor>(
        &mut self,
        props: Props,
        f: impl FnMut() -> A + Send + 'static,
    ) -> Addr<A::Msg> {
        DetSystem::spawn(self, props, f).unwrap()
    }
    fn stop(&mut self, id: ActorId) {
        DetSystem::stop(self, id)
    }
    fn settle(&mut self) {
        self.run_until_idle().unwrap();
    }
    fn sleep(&mut self, d: Duration) {
        self.advance(d).unwrap();
    }
    fn is_alive(&self, id: ActorId) -> bool {
        DetSystem::is_alive(self, id)
    }
    fn restarts(&self, id: ActorId) -> u32 {
        DetSystem::restarts(self, id)
    }
    fn children(&self, id: ActorId) -> Vec<ActorId> {
        DetSystem::children(self, id)
    }
    fn dead_letters(&self) -> u64 {
        DetSystem::dead_letters(self)
    }
}

impl Sys for ThreadedSystem {
    fn spawn<A: Actor>(
        &mut self,
        props: Props,
        f: impl FnMut() -> A + Send + 'static,
    ) -> Addr<A::Msg> {
        ThreadedSystem::spawn(self, props, f).unwrap()
    }
    fn stop(&mut self, id: ActorId) {
        ThreadedSystem::stop(self, id)
    }
    fn settle(&mut self) {
        assert!(
            self.wait_idle(Duration::from_secs(10)),
            "the system did not settle"
        );
    }
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
        self.settle();
    }
    fn is_alive(&self, id: ActorId) -> bool {
        ThreadedSystem::is_alive(self, id)
    }
    fn restarts(&self, id: ActorId) -> u32 {
        ThreadedSystem::restarts(self, id)
    }
    fn children(&self, id: ActorId) -> Vec<ActorId> {
        ThreadedSystem::children(self, id)
    }
    fn dead_letters(&self) -> u64 {
        ThreadedSystem::dead_letters(self)
    }
}

/// Defines `#[test] fn $name` twice: on the deterministic scheduler (several
/// seeds) and on the threaded one (2 workers, and 1 worker).
#[macro_export]
macro_rules! on_both {
    ($($name:ident => $body:ident;)*) => {
        mod det {
            $(#[test]
            fn $name() {
                for seed in 0..8 {
                    let mut sys = turno::DetSystem::new(seed);
                    super::$body(&mut sys);
                }
            })*
        }
        mod threaded {
            $(#[test]
            fn $name() {
                for threads in [2, 1] {
                    let mut sys = turno::ThreadedSystem::builder().threads(threads).build();
                    super::$body(&mut sys);
                    sys.shutdown(std::time::Duration::from_secs(10)).unwrap();
                }
            })*
        }
    };
}
