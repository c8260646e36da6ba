//! The fake payment gateway the submit's tests and example run against,
//! and the submit wired to it: a submit machine with seeded keys and the
//! two services asking the gateway actor. Test support, not the library's
//! API: `tests/*.rs` include it as `common::gateway`, and
//! `examples/idempotent_submit.rs` by path.
//!
//! The gateway charges with idempotency keys, looks up by key, and takes
//! injectable faults. The [`Ledger`] stands for the gateway's database: it
//! outlives a crash of the actor, and it is what tests count (`charges()`:
//! money actually taken). A charge with a key the ledger knows takes
//! nothing and answers the stored receipt.
//!
//! Faults ([`Fault`]) are drawn per request from a [`Faults`] plan:
//! latency, a timeout after executing (the charge is taken, the reply comes
//! too late), a lost reply (taken, never answered), a server error before
//! executing (nothing taken), an explicit decline, a crash (taken, then the
//! actor panics before answering).

#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use turno::{Actor, Addr, Context, ReplyTo};
use turno_chart::interpreter::Service;
use turno_chart::submit::{self, Submit, CHARGE, LOOKUP};
use turno_chart::Machine;

/// A submit of 42 whose keys are `key-<seed>-<n>`.
pub fn submit_machine(seed: u64) -> Arc<Machine<Value>> {
    keyed_submit(format!("key-{seed}"))
}

/// A submit of 42 whose keys are `<prefix>-<n>`.
pub fn keyed_submit(prefix: String) -> Arc<Machine<Value>> {
    let n = Arc::new(AtomicU64::new(0));
    let keys: submit::KeySource =
        Arc::new(move || format!("{prefix}-{}", n.fetch_add(1, Ordering::Relaxed)));
    Arc::new(Submit::new(42, keys).machine().unwrap())
}

/// `submit.charge` asking `gw`, failing after `timeout`.
pub fn charge_via(gw: &Addr<GatewayMsg>, timeout: Duration) -> Service<Value> {
    Service::ask(gw.clone(), timeout, |input, reply| GatewayMsg::Charge {
        key: input["key"].as_str().unwrap_or_default().to_string(),
        amount: input["amount"].as_u64().unwrap_or(0),
        reply,
    })
}

/// `submit.charge` (1 s timeout) and `submit.lookup` (500 ms) asking `gw`.
pub fn services(gw: &Addr<GatewayMsg>) -> Arc<HashMap<String, Service<Value>>> {
    services_with(charge_via(gw, Duration::from_millis(1000)), gw)
}

/// `charge` as `submit.charge`, and `submit.lookup` (500 ms) asking `gw`.
pub fn services_with(
    charge: Service<Value>,
    gw: &Addr<GatewayMsg>,
) -> Arc<HashMap<String, Service<Value>>> {
    let mut s = HashMap::new();
    s.insert(CHARGE.to_string(), charge);
    s.insert(
        LOOKUP.to_string(),
        Service::ask(gw.clone(), Duration::from_millis(500), |input, reply| {
            GatewayMsg::Lookup {
                key: input["key"].as_str().unwrap_or_default().to_string(),
                reply,
            }
        }),
    );
    Arc::new(s)
}

/// What the gateway has done: receipts by key, and every charge taken.
#[derive(Clone, Default)]
pub struct Ledger(Arc<Mutex<LedgerInner>>);

/// Called with `(key, amount, receipt)` for every charge taken.
type JournalFn = Arc<dyn Fn(&str, u64, &Value) + Send + Sync>;

#[derive(Default)]
struct LedgerInner {
    receipts: HashMap<String, Value>,
    charges: Vec<(String, u64)>,
    journal: Option<JournalFn>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// A ledger that already holds these charges, `(key, amount,
    /// receipt)` in the order taken: a database read back by a new process.
    pub fn with_charges(charges: impl IntoIterator<Item = (String, u64, Value)>) -> Self {
        let mut inner = LedgerInner::default();
        for (key, amount, receipt) in charges {
            inner.receipts.insert(key.clone(), receipt);
            inner.charges.push((key, amount));
        }
        Ledger(Arc::new(Mutex::new(inner)))
    }

    /// Calls `f(key, amount, receipt)` for every new charge, inside the
    /// charge and before the gateway answers: the write that makes a
    /// charge outlive the process (a test's database). A charge answered
    /// from a known key is not new and is not journaled.
    pub fn journal(self, f: impl Fn(&str, u64, &Value) + Send + Sync + 'static) -> Self {
        if let Ok(mut l) = self.0.lock() {
            l.journal = Some(Arc::new(f));
        }
        self
    }

    /// Money taken, one entry per charge: `(key, amount)`.
    pub fn charges(&self) -> Vec<(String, u64)> {
        self.0.lock().map(|l| l.charges.clone()).unwrap_or_default()
    }

    /// How many charges were taken with `key`.
    pub fn charges_for(&self, key: &str) -> usize {
        self.charges().iter().filter(|(k, _)| k == key).count()
    }

    fn charge(&self, key: &str, amount: u64) -> Value {
        let mut l = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = l.receipts.get(key) {
            return r.clone();
        }
        let receipt =
            json!({"receipt": format!("r-{}", l.charges.len() + 1), "key": key, "amount": amount});
        if let Some(j) = &l.journal {
            j(key, amount, &receipt);
        }
        l.receipts.insert(key.to_string(), receipt.clone());
        l.charges.push((key.to_string(), amount));
        receipt
    }

    fn lookup(&self, key: &str) -> Option<Value> {
        let l = self.0.lock().unwrap_or_else(|p| p.into_inner());
        l.receipts.get(key).cloned()
    }
}

/// One injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer normally.
    None,
    /// Answer after this long.
    Latency(Duration),
    /// Execute, answer after this long (longer than the client waits).
    TimeoutAfterExecuting(Duration),
    /// Execute, never answer.
    LostReply,
    /// Answer a server error without executing.
    ServerErrorBeforeExecuting,
    /// Answer an explicit rejection without executing.
    Decline,
    /// Execute, then the actor panics before answering.
    Crash,
}

/// Which fault each request gets: a fixed script first, then `otherwise`.
#[derive(Clone)]
pub struct Faults {
    script: Arc<Mutex<Vec<Fault>>>,
    otherwise: Fault,
}

impl Faults {
    /// No faults.
    pub fn none() -> Self {
        Faults::script(Vec::new())
    }

    /// These faults, one per request in order (charges and lookups alike),
    /// then none.
    pub fn script(faults: Vec<Fault>) -> Self {
        let mut f = faults;
        f.reverse();
        Faults {
            script: Arc::new(Mutex::new(f)),
            otherwise: Fault::None,
        }
    }

    fn next(&self) -> Fault {
        self.script
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or(self.otherwise)
    }
}

/// A gateway request.
pub enum GatewayMsg {
    /// Take `amount` under `key` (idempotent by key).
    Charge {
        /// The idempotency key.
        key: String,
        /// How much.
        amount: u64,
        /// Where the answer goes: `Ok(receipt)` or `Err(problem)`.
        reply: ReplyTo<Result<Value, Value>>,
    },
    /// Is there a charge under `key`? `Ok({"found": receipt-or-null})`.
    Lookup {
        /// The idempotency key.
        key: String,
        /// Where the answer goes.
        reply: ReplyTo<Result<Value, Value>>,
    },
    /// A delayed answer (internal).
    Answer(ReplyTo<Result<Value, Value>>, Result<Value, Value>),
}

/// The gateway actor.
pub struct Gateway {
    ledger: Ledger,
    faults: Faults,
}

impl Gateway {
    /// A gateway over `ledger` with `faults`.
    pub fn new(ledger: Ledger, faults: Faults) -> Self {
        Gateway { ledger, faults }
    }

    fn answer(
        ctx: &mut Context<'_, Self>,
        after: Option<Duration>,
        reply: ReplyTo<Result<Value, Value>>,
        result: Result<Value, Value>,
    ) {
        match after {
            Some(d) => {
                ctx.send_after(d, GatewayMsg::Answer(reply, result));
            }
            None => {
                reply.reply(result);
            }
        }
    }
}

impl Actor for Gateway {
    type Msg = GatewayMsg;

    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: GatewayMsg) {
        match msg {
            GatewayMsg::Answer(reply, result) => {
                reply.reply(result);
            }
            GatewayMsg::Charge { key, amount, reply } => match self.faults.next() {
                Fault::None => {
                    Gateway::answer(ctx, None, reply, Ok(self.ledger.charge(&key, amount)))
                }
                Fault::Latency(d) => {
                    let r = self.ledger.charge(&key, amount);
                    Gateway::answer(ctx, Some(d), reply, Ok(r))
                }
                Fault::TimeoutAfterExecuting(d) => {
                    let r = self.ledger.charge(&key, amount);
                    Gateway::answer(ctx, Some(d), reply, Ok(r))
                }
                Fault::LostReply => {
                    self.ledger.charge(&key, amount);
                    drop(reply);
                }
                Fault::ServerErrorBeforeExecuting => {
                    Gateway::answer(ctx, None, reply, Err(json!({"server_error": 500})))
                }
                Fault::Decline => {
                    Gateway::answer(ctx, None, reply, Err(json!({"rejected": "declined"})))
                }
                Fault::Crash => {
                    self.ledger.charge(&key, amount);
                    panic!("gateway crashed after executing");
                }
            },
            GatewayMsg::Lookup { key, reply } => match self.faults.next() {
                Fault::None | Fault::Latency(_) | Fault::TimeoutAfterExecuting(_) => {
                    let found = self.ledger.lookup(&key).unwrap_or(Value::Null);
                    Gateway::answer(ctx, None, reply, Ok(json!({"found": found})))
                }
                Fault::LostReply => drop(reply),
                Fault::ServerErrorBeforeExecuting | Fault::Decline => {
                    Gateway::answer(ctx, None, reply, Err(json!({"server_error": 500})))
                }
                Fault::Crash => panic!("gateway crashed during a lookup"),
            },
        }
    }
}
