//! A small supervision tree for the tests: a parent with children a, b, c
//! that log their starts and stops and panic on demand, and a watcher.

use std::sync::Arc;

use parking_lot::Mutex;
use turno::{Actor, ActorId, Addr, Context, ExitReason, Props};

/// What the actors did, in order.
pub type Log = Arc<Mutex<Vec<String>>>;

/// A child that logs its starts and stops and panics on `Crash`.
pub struct Child {
    pub name: &'static str,
    pub log: Log,
}

/// A child's messages.
pub enum CMsg {
    /// Panic in the handler.
    Crash,
    /// Log "ping <name>".
    Ping,
}

impl Actor for Child {
    type Msg = CMsg;
    fn started(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.lock().push(format!("start {}", self.name));
    }
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.lock().push(format!("stop {}", self.name));
    }
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, m: CMsg) {
        match m {
            CMsg::Crash => panic!("{} crashed", self.name),
            CMsg::Ping => self.log.lock().push(format!("ping {}", self.name)),
        }
    }
}

/// Spawns children a, b, c (again on every start) and hands their addresses
/// out; logs its own stop.
pub struct Parent {
    pub log: Log,
    pub out: Arc<Mutex<Vec<Addr<CMsg>>>>,
}

impl Actor for Parent {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let mut out = self.out.lock();
        out.clear();
        for name in ["a", "b", "c"] {
            let log = self.log.clone();
            out.push(
                ctx.spawn(Props::new().name(name), move || Child {
                    name,
                    log: log.clone(),
                })
                .unwrap(),
            );
        }
    }
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.log.lock().push("stop parent".into());
    }
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {}
}

/// Watches one child and records how it ended.
pub struct Watcher {
    pub target: Addr<CMsg>,
    pub seen: Arc<Mutex<Vec<(ActorId, ExitReason)>>>,
}

impl Actor for Watcher {
    type Msg = (ActorId, ExitReason);
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.watch(&self.target, |id, why| (id, why));
    }
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, m: (ActorId, ExitReason)) {
        self.seen.lock().push(m);
    }
}
