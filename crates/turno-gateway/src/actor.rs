//! The gateway as a turno actor: every charge and lookup is one turn, so two
//! requests with one key cannot interleave their claim and completion.

use std::time::Duration;

use serde_json::Value;
use turno::{Actor, Context, ReplyTo};

use crate::fault::{Fault, Faults};
use crate::ledger::{Charged, Found, Ledger};

/// Where an answer goes: typed, or as an invoked service's result (the
/// shape turno-chart's `Service::ask` hands a chart; see
/// [`Charged::into_result`] and [`Found::into_result`]).
pub enum Reply<T> {
    /// The typed outcome.
    Typed(ReplyTo<T>),
    /// The outcome as `Ok(output)` or `Err(error)`.
    Result(ReplyTo<Result<Value, Value>>),
}

impl<T: Send + 'static> Reply<T> {
    fn send(self, outcome: T, as_result: impl FnOnce(T) -> Result<Value, Value>) {
        match self {
            Reply::Typed(r) => {
                r.reply(outcome);
            }
            Reply::Result(r) => {
                r.reply(as_result(outcome));
            }
        }
    }
}

/// A gateway request.
pub enum GatewayMsg {
    /// Charge `request` once under `key`.
    Charge {
        /// The idempotency key.
        key: String,
        /// What to charge (its JSON text is the request's fingerprint).
        request: Value,
        /// This request's fault; `None` draws the next from the actor's
        /// [`Faults`] plan.
        fault: Option<Fault>,
        /// Where the outcome goes.
        reply: Reply<Charged>,
    },
    /// What does the gateway know of `key`?
    Lookup {
        /// The idempotency key.
        key: String,
        /// This request's fault; `None` draws the next from the plan.
        fault: Option<Fault>,
        /// Where the answer goes.
        reply: Reply<Found>,
    },
    /// A delayed answer to a charge (the actor's own timer).
    Answer(Reply<Charged>, Charged),
}

impl GatewayMsg {
    /// A charge whose outcome is an invoked service's result: what
    /// turno-chart's `Service::ask` builds, given the invocation's input
    /// (`{"key", ...}`; the whole input is the request).
    pub fn charge_from_input(input: Value, reply: ReplyTo<Result<Value, Value>>) -> GatewayMsg {
        GatewayMsg::Charge {
            key: input["key"].as_str().unwrap_or_default().to_string(),
            request: input,
            fault: None,
            reply: Reply::Result(reply),
        }
    }

    /// A lookup whose answer is an invoked service's result, given the
    /// invocation's input (`{"key"}`).
    pub fn lookup_from_input(input: Value, reply: ReplyTo<Result<Value, Value>>) -> GatewayMsg {
        GatewayMsg::Lookup {
            key: input["key"].as_str().unwrap_or_default().to_string(),
            fault: None,
            reply: Reply::Result(reply),
        }
    }
}

/// The gateway actor: a [`Ledger`] and a [`Faults`] plan. Restarted after a
/// [`Fault::Crash`] by whoever supervises it, it keeps the ledger (the
/// ledger is the gateway's database, not its memory).
pub struct GatewayActor {
    ledger: Ledger,
    faults: Faults,
}

impl GatewayActor {
    /// A gateway over `ledger`, with `faults` for requests that name none.
    pub fn new(ledger: Ledger, faults: Faults) -> Self {
        GatewayActor { ledger, faults }
    }

    fn charge(
        &mut self,
        ctx: &mut Context<'_, Self>,
        key: &str,
        request: &Value,
        fault: Fault,
        reply: Reply<Charged>,
    ) {
        let answer_after = |ctx: &mut Context<'_, Self>, d: Duration, reply, outcome| {
            ctx.send_after(d, GatewayMsg::Answer(reply, outcome));
        };
        match fault {
            Fault::None => reply.send(self.ledger.charge(key, request), Charged::into_result),
            Fault::Latency(d) | Fault::TimeoutAfterExecuting(d) => {
                let outcome = self.ledger.charge(key, request);
                answer_after(ctx, d, reply, outcome);
            }
            Fault::LostReply => {
                self.ledger.charge(key, request);
                drop(reply);
            }
            Fault::ServerErrorBeforeExecuting => reply.send(
                Charged::Failed("injected server error: nothing was charged".into()),
                Charged::into_result,
            ),
            Fault::Decline => reply.send(Charged::Declined, Charged::into_result),
            Fault::Crash => {
                self.ledger.charge(key, request);
                panic!("injected: the gateway crashed after charging");
            }
        }
    }

    fn lookup(&mut self, key: &str, fault: Fault, reply: Reply<Found>) {
        match fault {
            Fault::None | Fault::Latency(_) | Fault::TimeoutAfterExecuting(_) => {
                reply.send(self.ledger.lookup(key), Found::into_result)
            }
            Fault::LostReply => drop(reply),
            Fault::ServerErrorBeforeExecuting | Fault::Decline => reply.send(
                Found::Failed("injected: lookups are down".into()),
                Found::into_result,
            ),
            Fault::Crash => panic!("injected: the gateway crashed during a lookup"),
        }
    }
}

impl Actor for GatewayActor {
    type Msg = GatewayMsg;

    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: GatewayMsg) {
        match msg {
            GatewayMsg::Charge {
                key,
                request,
                fault,
                reply,
            } => {
                let fault = fault.unwrap_or_else(|| self.faults.next());
                self.charge(ctx, &key, &request, fault, reply);
            }
            GatewayMsg::Lookup { key, fault, reply } => {
                let fault = fault.unwrap_or_else(|| self.faults.next());
                self.lookup(&key, fault, reply);
            }
            GatewayMsg::Answer(reply, outcome) => reply.send(outcome, Charged::into_result),
        }
    }
}
