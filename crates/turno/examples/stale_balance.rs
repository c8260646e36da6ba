//! The stale-balance bug, done the turno way.
//!
//! The bug, in async code with a lock-free "read, await, write":
//!
//! ```text
//! async fn charge(&self, amount) {
//!     let balance = self.balance;          // read
//!     payment.charge(amount).await;        // the turn is split here
//!     self.balance = balance - amount;     // write a stale value
//! }
//! ```
//!
//! Two concurrent charges both read 100; both write their own result; one
//! debit is lost. In turno a handler cannot `await`: the payment is
//! *delegated* (an ask to the payment gateway), its outcome comes back as a
//! correlated message, and while it is in flight the account is in an
//! explicit `Charging` state that stashes other charges. The second charge
//! runs after the first has written its balance: no lost update, by the
//! shape of the code rather than by a lock.
//!
//! Run it: `cargo run -p turno --example stale_balance`.

use std::time::Duration;
use turno::System;

use turno::{Actor, Addr, Context, DetSystem, Props, ReplyTo, RequestId, Response};

/// How long the account waits for the gateway.
pub const PAYMENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The payment gateway: answers after `latency` (virtual time).
pub struct Gateway {
    /// Time to answer each charge.
    pub latency: Duration,
}

/// Messages of the gateway.
pub enum GatewayMsg {
    /// Charge a card.
    Charge {
        /// Amount in cents.
        amount: u64,
        /// Where the receipt goes.
        reply: ReplyTo<Receipt>,
    },
    /// Internal: the charge is done.
    Done(u64, ReplyTo<Receipt>),
}

/// The gateway's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The amount charged.
    pub amount: u64,
}

impl Actor for Gateway {
    type Msg = GatewayMsg;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: GatewayMsg) {
        match m {
            GatewayMsg::Charge { amount, reply } => {
                ctx.send_after(self.latency, GatewayMsg::Done(amount, reply));
            }
            GatewayMsg::Done(amount, reply) => {
                reply.reply(Receipt { amount });
            }
        }
    }
}

/// What a customer is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChargeOutcome {
    /// Paid; the balance after the debit.
    Paid {
        /// Balance after this charge.
        balance: u64,
    },
    /// Not enough money: nothing was charged.
    Insufficient,
    /// The gateway did not answer in time: the charge may or may not have
    /// happened (resolve by idempotency key, see turno-chart).
    Unknown,
}

/// Messages of the account.
pub enum AccountMsg {
    /// A customer wants to pay `amount`.
    Charge {
        /// Amount in cents.
        amount: u64,
        /// Where the outcome goes.
        reply: ReplyTo<ChargeOutcome>,
    },
    /// The gateway's response for the charge in flight.
    Payment(Response<Receipt>),
}

/// The account's behaviour: idle, or waiting for one payment.
enum State {
    Idle,
    Charging {
        request: RequestId,
        amount: u64,
        customer: ReplyTo<ChargeOutcome>,
    },
}

/// An account with a balance; one charge in flight at a time.
pub struct Account {
    balance: u64,
    gateway: Addr<GatewayMsg>,
    state: State,
}

impl Account {
    /// An idle account.
    pub fn new(balance: u64, gateway: Addr<GatewayMsg>) -> Self {
        Account {
            balance,
            gateway,
            state: State::Idle,
        }
    }
}

impl Actor for Account {
    type Msg = AccountMsg;

    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: AccountMsg) {
        match (&self.state, m) {
            (State::Idle, AccountMsg::Charge { amount, reply }) => {
                if amount > self.balance {
                    reply.reply(ChargeOutcome::Insufficient);
                    return;
                }
                match ctx.ask(
                    &self.gateway,
                    |r| GatewayMsg::Charge { amount, reply: r },
                    PAYMENT_TIMEOUT,
                    AccountMsg::Payment,
                ) {
                    Ok(request) => {
                        self.state = State::Charging {
                            request,
                            amount,
                            customer: reply,
                        }
                    }
                    Err(_) => {
                        reply.reply(ChargeOutcome::Unknown);
                    }
                }
            }
            // One payment at a time: later charges wait, in order.
            (State::Charging { .. }, m @ AccountMsg::Charge { .. }) => {
                if let Err(full) = ctx.stash(m) {
                    if let AccountMsg::Charge { reply, .. } = full.msg {
                        reply.reply(ChargeOutcome::Unknown);
                    }
                }
            }
            (State::Charging { .. }, AccountMsg::Payment(response)) => {
                let State::Charging {
                    request,
                    amount,
                    customer,
                } = std::mem::replace(&mut self.state, State::Idle)
                else {
                    unreachable!("matched Charging above")
                };
                // The runtime only delivers the response to the pending request.
                debug_assert!(!ctx.is_pending(request));
                let outcome = match response {
                    Response::Reply(receipt) => {
                        self.balance -= receipt.amount.min(amount);
                        ChargeOutcome::Paid {
                            balance: self.balance,
                        }
                    }
                    Response::TimedOut => ChargeOutcome::Unknown,
                };
                customer.reply(outcome);
                ctx.unstash_all();
            }
            // A response while idle cannot happen: stale replies never reach
            // the handler.
            (State::Idle, AccountMsg::Payment(_)) => {}
        }
    }
}

/// A customer that charges once and records the outcome.
pub struct Customer {
    /// The account to charge.
    pub account: Addr<AccountMsg>,
    /// The amount.
    pub amount: u64,
    /// Where the outcome is recorded.
    pub outcome: std::sync::Arc<std::sync::Mutex<Option<ChargeOutcome>>>,
}

impl Actor for Customer {
    type Msg = Response<ChargeOutcome>;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let amount = self.amount;
        let _ = ctx.ask(
            &self.account,
            |reply| AccountMsg::Charge { amount, reply },
            Duration::from_secs(60),
            |r| r,
        );
    }
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, m: Response<ChargeOutcome>) {
        if let Response::Reply(outcome) = m {
            *self.outcome.lock().unwrap() = Some(outcome);
        }
    }
}

/// What [`two_charges`] observed.
pub struct Run {
    /// Each customer's outcome, in the order the charges were given.
    pub outcomes: [Option<ChargeOutcome>; 2],
    /// Payment replies the account discarded as stale.
    pub stale_replies: u64,
}

/// Runs two concurrent charges against an account of `balance`.
pub fn two_charges(seed: u64, balance: u64, a: u64, b: u64, latency: Duration) -> Run {
    let mut sys = DetSystem::new(seed);
    let gateway = sys
        .spawn(Props::new().name("gateway"), move || Gateway { latency })
        .unwrap();
    let account = sys
        .spawn(Props::new().name("account"), move || {
            Account::new(balance, gateway.clone())
        })
        .unwrap();
    let outcomes: Vec<_> = [a, b]
        .into_iter()
        .map(|amount| {
            let outcome = std::sync::Arc::new(std::sync::Mutex::new(None));
            let (acc, o) = (account.clone(), outcome.clone());
            sys.spawn(Props::new(), move || Customer {
                account: acc.clone(),
                amount,
                outcome: o.clone(),
            })
            .unwrap();
            outcome
        })
        .collect();
    sys.advance(Duration::from_secs(10)).unwrap();
    let first = outcomes[0].lock().unwrap().clone();
    let second = outcomes[1].lock().unwrap().clone();
    Run {
        outcomes: [first, second],
        stale_replies: account.stale_replies(),
    }
}

#[allow(dead_code)]
fn main() {
    let [first, second] = two_charges(1, 100, 30, 50, Duration::from_millis(300)).outcomes;
    println!("balance 100, two concurrent charges of 30 and 50:");
    println!("  charge 30 -> {first:?}");
    println!("  charge 50 -> {second:?}");
    println!(
        "the second charge waited in the stash while the first was in flight: no lost update."
    );
}
