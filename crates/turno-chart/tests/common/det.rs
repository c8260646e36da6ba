//! Driving a DetSystem the way the crash tests do.

#![allow(dead_code)] // each test binary uses its own part

use turno::DetSystem;

/// Runs until nothing is runnable and no timer is pending, moving virtual
/// time from deadline to deadline.
pub fn settle(sys: &mut DetSystem) {
    for _ in 0..1000 {
        sys.run_until_idle().unwrap();
        match sys.next_deadline() {
            Some(d) => {
                sys.advance_to(d).unwrap();
            }
            None => return,
        }
    }
    panic!("did not settle");
}

/// Runs one turn at a time (moving time to the next deadline when nothing
/// is runnable) until `done()` or nothing is left to run.
pub fn step_until(sys: &mut DetSystem, mut done: impl FnMut() -> bool) {
    let mut guard = 0;
    while !done() && guard < 10_000 {
        if !sys.step() {
            match sys.next_deadline() {
                Some(d) => {
                    sys.advance_to(d).unwrap();
                }
                None => break,
            }
        }
        guard += 1;
    }
}
