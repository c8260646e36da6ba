//! The core tests run on every scheduler through `turno::System`; these are
//! the few helpers they share.

#![allow(dead_code)]

pub mod tree;

use std::time::Duration;

use turno::{Actor, Addr, Props, System};

/// Spawns a top-level actor on either system (valid props: unwraps).
pub fn spawn<A: Actor>(
    sys: &impl System,
    props: Props,
    f: impl FnMut() -> A + Send + 'static,
) -> Addr<A::Msg> {
    sys.spawn(props, f).unwrap()
}

/// Runs until nothing is runnable (deterministic) or waits for that (threaded).
pub fn settle(sys: &mut impl System) {
    assert!(
        sys.settle(Duration::from_secs(10)),
        "the system did not settle"
    );
}

/// Lets `d` of time pass (virtual or real), then settles.
pub fn sleep(sys: &mut impl System, d: Duration) {
    assert!(sys.sleep(d), "the system did not settle");
}

/// Defines `#[test] fn $name` on every scheduler: the deterministic one
/// (several seeds), the threaded one (2 workers, and 1 worker) and the
/// local one (the default batch, and batches of one turn).
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
        mod local {
            $(#[test]
            fn $name() {
                for batch in [turno::local::DEFAULT_BATCH, 1] {
                    let mut sys = turno::LocalSystem::builder().batch(batch).build();
                    super::$body(&mut sys);
                    sys.shutdown(std::time::Duration::from_secs(10)).unwrap();
                }
            })*
        }
    };
}
