//! Contained panics do not reach the process's panic hook, unless the
//! system is built with `print_panics(true)`; other panics still do. (Its
//! own test binary: the panic hook is process-wide.)

#![cfg(not(turno_loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use turno::System;

use turno::{Actor, Context, DetSystem, Props};

struct Boom;

impl Actor for Boom {
    type Msg = ();
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {
        panic!("contained");
    }
}

fn one_failure(sys: &mut DetSystem) {
    let a = sys.spawn(Props::new(), || Boom).unwrap();
    let _ = a.try_send(());
    sys.run_until_idle().unwrap();
    assert_eq!(sys.restarts(a.id()), 1);
}

#[test]
fn contained_panics_are_quiet_unless_asked() {
    let printed = Arc::new(AtomicUsize::new(0));
    let p = printed.clone();
    std::panic::set_hook(Box::new(move |_| {
        p.fetch_add(1, Ordering::SeqCst);
    }));
    one_failure(&mut DetSystem::new(1));
    assert_eq!(printed.load(Ordering::SeqCst), 0, "quiet by default");
    one_failure(&mut DetSystem::builder().print_panics(true).build());
    assert_eq!(printed.load(Ordering::SeqCst), 1, "loud when asked");
    // A panic outside any turn still reaches the hook.
    let _ = std::panic::catch_unwind(|| panic!("outside"));
    assert_eq!(printed.load(Ordering::SeqCst), 2);
    let _ = std::panic::take_hook();
}
