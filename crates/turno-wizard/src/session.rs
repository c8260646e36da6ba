//! One signup session: a statechart actor on the turno runtime.
//!
//! [`SessionActor`] owns the chart's snapshot and runs the pure core
//! (`turno_chart::transition`, `invocation_done`): one macrostep per turn.
//! It persists the snapshot after every macrostep, starts the `charge` and
//! lookup invocations as futures piped back into the actor (a result
//! for an invocation that is no longer in flight is stale and dropped by the
//! core), and answers the web layer with a [`View`].
//!
//! It is its own small interpreter rather than `turno_chart`'s `ChartActor`
//! because the web layer talks to it in the chart's own turns: an event is
//! refused unless the session is at the form's step, checked in the turn
//! that takes the event, and answered with the view after the macrostep;
//! faults are armed and the time to live runs out as messages too.
//! `ChartMsg` is a closed set (events, timers, results, subscriptions) with
//! no room for such requests. Its clock is the wall clock (milliseconds since the Unix
//! epoch), so the deadlines in a persisted snapshot (the submit's 3 s in
//! `uncertain`, its lookup backoff) mean the same after a restart; delayed
//! events are turno timers ([`Context::send_after`]) that fire them through
//! `turno_chart::fire_scheduled`. Restore goes through
//! `turno_chart::persist` with the submit's sanitizer: a charge in flight
//! when the snapshot was written is never re-run; the chart resumes in
//! `uncertain` and asks the gateway by key (see [`crate::machine`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};
use turno::{Actor, Context, ReplyTo, RequestId, Response};
use turno_chart::persist::Persist;
use turno_chart::{
    fire_scheduled, initial_transition_at, invocation_done, transition_in_place, Action,
    ChartError, Delivery, Event, Machine, Snapshot, Status,
};

use crate::client::{self, Faults, Lookup};
use crate::machine::{self, step_of};
use crate::persist::{Persisted, Persister};

/// What the session shares with the rest of the server.
pub struct Env {
    /// The gateway.
    pub gateway: SocketAddr,
    /// The writer.
    pub persister: Persister,
    /// Tears the wizard server down (the fault panel's crash).
    pub crash: Arc<dyn Fn() + Send + Sync>,
    /// How long a session lives after its last step (its snapshot's time
    /// to live in the store).
    pub ttl: std::time::Duration,
    /// Drops a session from the server's table (it expired).
    pub evict: Arc<dyn Fn(&str) + Send + Sync>,
}

/// What a page needs to know about a session.
#[derive(Clone, Debug, Serialize)]
pub struct View {
    /// The session id.
    pub sid: String,
    /// Macrosteps taken.
    pub rev: u64,
    /// The page to show (`personal`, `payment.card`, `submit.sending`...).
    pub step: String,
    /// The state value, as XState shows it.
    pub value: Value,
    /// Active state ids (for the diagram).
    pub active: Vec<String>,
    /// `active` or `done`.
    pub status: &'static str,
    /// The chart's context (holds no volatile field).
    pub context: Value,
    /// The idempotency key of the current submit, once minted.
    pub key: Option<String>,
    /// The faults armed for the next charge.
    pub faults: Faults,
    /// The draft-link token.
    pub link: String,
}

/// Why an event was refused before reaching the chart.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The form was made for another step (an old tab, a replay).
    StaleStep {
        /// The step the form was for.
        form: String,
        /// The step the session is at.
        current: String,
    },
}

/// A session actor's messages.
pub enum SessionMsg {
    /// An event from a page. With `step`, only if the session is at that
    /// step (checked in the same turn as the event, so nothing slips in).
    Event {
        /// The event.
        event: Event,
        /// The step the form was for.
        step: Option<String>,
        /// The view after the macrostep, or why it was refused.
        reply: ReplyTo<Result<View, Refusal>>,
    },
    /// The current view.
    View(ReplyTo<View>),
    /// Arms faults for the next charge.
    Faults(Faults, ReplyTo<View>),
    /// The session's time to live, counted from the step `rev`, is over:
    /// unless a later step renewed it, the actor leaves memory (its
    /// snapshot has expired in the store too).
    Expire {
        /// The step the timer was armed at.
        rev: u64,
    },
    /// A delayed event of the chart is due.
    Timer {
        /// Its send id.
        id: String,
        /// Which scheduling of it.
        seq: u64,
    },
    /// An invocation finished.
    Done {
        /// Invocation id.
        id: String,
        /// Which start of it.
        generation: u64,
        /// Its outcome.
        result: Result<Value, Value>,
    },
}

/// One session's chart. See the [module docs](self).
pub struct SessionActor {
    sid: String,
    link: String,
    machine: Arc<Machine<Value>>,
    env: Arc<Env>,
    snap: Option<Snapshot<Value>>,
    restore: Option<Persisted>,
    rev: u64,
    faults: Faults,
    running: HashMap<(String, u64), RequestId>,
    actions: Vec<Action>,
}

impl SessionActor {
    /// A new session at the first step.
    pub fn new(sid: String, link: String, machine: Arc<Machine<Value>>, env: Arc<Env>) -> Self {
        SessionActor {
            sid,
            link,
            machine,
            env,
            snap: None,
            restore: None,
            rev: 0,
            faults: Faults::default(),
            running: HashMap::new(),
            actions: Vec::new(),
        }
    }

    /// A session restored from its persisted snapshot.
    pub fn restored(
        sid: String,
        p: Persisted,
        machine: Arc<Machine<Value>>,
        env: Arc<Env>,
    ) -> Self {
        let mut s = SessionActor::new(sid, p.link.clone(), machine, env);
        s.restore = Some(p);
        s
    }

    fn snap(&self) -> &Snapshot<Value> {
        self.snap.as_ref().expect("started")
    }

    fn view(&self) -> View {
        let s = self.snap();
        let value = s.value(&self.machine).to_json();
        let step = step_of(&value);
        let done = s.status != Status::Active || step == "completed" || step == "submit.abandoned";
        View {
            sid: self.sid.clone(),
            rev: self.rev,
            step,
            value,
            active: s
                .active_ids(&self.machine)
                .iter()
                .map(|x| x.to_string())
                .collect(),
            status: if done { "done" } else { "active" },
            context: s.context.clone(),
            key: s.context["key"].as_str().map(str::to_owned),
            faults: self.faults.clone(),
            link: self.link.clone(),
        }
    }

    /// After a macrostep: persist (a draft too when a step was completed),
    /// then carry out the actions.
    fn after_step(&mut self, ctx: &mut Context<'_, Self>, before: &str) {
        self.rev += 1;
        // Every step renews the snapshot's time to live in the store; the
        // actor in memory lives exactly as long.
        ctx.send_after(self.env.ttl, SessionMsg::Expire { rev: self.rev });
        let view = self.view();
        let draft =
            (view.step != before).then(|| json!({"step": view.step, "context": view.context}));
        let chart = Persist::new(&self.machine)
            .to_value(self.snap())
            .unwrap_or_else(|e| panic!("session {}: {e}", self.sid));
        let p = Persisted {
            rev: self.rev,
            link: self.link.clone(),
            chart,
        };
        let durable = self.env.persister.put(&self.sid, &p, draft);
        let mut durable = Some(durable);
        let actions = std::mem::take(&mut self.actions);
        for a in &actions {
            match a {
                Action::StartInvoke {
                    id,
                    src,
                    input,
                    generation,
                } => {
                    self.start(ctx, id, src, input, *generation, durable.take());
                }
                Action::Schedule { id, seq, due_ms } => {
                    let wait = due_ms.saturating_sub(wall_ms());
                    ctx.send_after(
                        std::time::Duration::from_millis(wait),
                        SessionMsg::Timer {
                            id: id.clone(),
                            seq: *seq,
                        },
                    );
                }
                // A cancelled timer still fires, and `fire_scheduled`
                // finds it gone: stale.
                Action::StopInvoke { id, generation } => {
                    if let Some(req) = self.running.remove(&(id.clone(), *generation)) {
                        ctx.abandon(req);
                    }
                }
                _ => {}
            }
        }
        self.actions = actions;
        self.actions.clear();
    }

    fn start(
        &mut self,
        ctx: &mut Context<'_, Self>,
        id: &str,
        src: &str,
        input: &Value,
        generation: u64,
        durable: Option<tokio::sync::oneshot::Receiver<Result<(), String>>>,
    ) {
        let view = self.view();
        let gateway = self.env.gateway;
        let key = input["key"].as_str().unwrap_or_default().to_owned();
        let faults = self.faults.clone();
        let c = &view.context;
        let (iid, gen) = (id.to_string(), generation);
        let on_done = move |r: Response<Result<Value, Value>>| SessionMsg::Done {
            id: iid.clone(),
            generation: gen,
            result: match r {
                Response::Reply(r) => r,
                Response::TimedOut => Err(json!({"kind": "timeout", "known": false})),
            },
        };
        let piped = match src {
            machine::CHARGE => {
                // The charge faults are one-shot: the retry goes through.
                self.faults.charge.clear();
                self.faults.crash = false;
                let body = json!({
                    "amount_cents": input["amount"],
                    "plan": c["plan"]["id"],
                    "token": c["payment"]["token"],
                    "last4": c["payment"]["last4"],
                    "email": c["personal"]["email"],
                });
                let crash = self.env.crash.clone();
                ctx.pipe(
                    async move {
                        // The key and `sending` are on disk before the
                        // charge leaves: a crash after this point restores
                        // into `uncertain`, never into a blind resend.
                        if let Some(d) = durable {
                            if let Ok(Err(e)) | Err(e) = d.await.map_err(|e| e.to_string()) {
                                return Err(
                                    json!({"kind": "not persisted", "known": true, "message": e}),
                                );
                            }
                        }
                        let r = client::charge(gateway, &key, &body, &faults).await;
                        if faults.crash {
                            crash();
                            std::future::pending::<()>().await;
                        }
                        // The submit's contract: a receipt, or
                        // `{"rejected": ..}` when surely nothing was
                        // charged; any other error is unknown.
                        r.map(|v| v["receipt"].clone()).map_err(|e| {
                            if e["known"] == json!(true) {
                                json!({"rejected": e["message"], "kind": e["kind"], "message": e["message"]})
                            } else {
                                e
                            }
                        })
                    },
                    None,
                    on_done,
                )
            }
            machine::LOOKUP => ctx.pipe(
                async move {
                    // One lookup; the chart backs off, retries and gives up
                    // at its own deadline.
                    match client::query(gateway, &key, &faults, client::TIMEOUT).await {
                        Ok(Lookup::Charged(receipt)) => Ok(json!({"found": receipt})),
                        Ok(Lookup::Unknown) => Ok(json!({"found": null})),
                        Err(e) => Err(json!({"kind": "lookup failed", "message": e})),
                    }
                },
                None,
                on_done,
            ),
            other => {
                fail_now(ctx, id, generation, format!("no service {other}"));
                return;
            }
        };
        match piped {
            Ok(req) => {
                self.running.insert((id.to_string(), generation), req);
            }
            Err(e) => fail_now(ctx, id, generation, e.to_string()),
        }
    }

    /// One delivery of the chart core (a due timer, an invocation's result)
    /// as a macrostep, on the wall clock; a stale one changes nothing.
    fn deliver(
        &mut self,
        ctx: &mut Context<'_, Self>,
        f: impl FnOnce(
            &Machine<Value>,
            &mut Snapshot<Value>,
            &mut Vec<Action>,
        ) -> Result<Delivery, ChartError>,
    ) {
        let before = self.view().step;
        let mut snap = self.snap.take().expect("started");
        snap.now_ms = snap.now_ms.max(Self::now_ms(ctx));
        let mut actions = std::mem::take(&mut self.actions);
        let d = f(&self.machine, &mut snap, &mut actions);
        self.actions = actions;
        self.snap = Some(snap);
        match d {
            Ok(Delivery::Delivered) => self.after_step(ctx, &before),
            Ok(_) => {}
            Err(e) => panic!("session {}: {e}", self.sid),
        }
    }

    fn now_ms(_ctx: &Context<'_, Self>) -> u64 {
        wall_ms()
    }
}

/// An invocation that could not start fails at once, as a message of its
/// own (its own macrostep).
fn fail_now(ctx: &mut Context<'_, SessionActor>, id: &str, generation: u64, kind: String) {
    let me = ctx.addr();
    let _ = ctx.send(
        &me,
        SessionMsg::Done {
            id: id.into(),
            generation,
            result: Err(json!({"kind": kind, "known": true})),
        },
    );
}

/// The chart's clock: wall-clock milliseconds, meaningful across restarts.
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Actor for SessionActor {
    type Msg = SessionMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let now = Self::now_ms(ctx);
        match self.restore.take() {
            Some(p) => {
                self.rev = p.rev;
                let restored = Persist::new(&self.machine)
                    .sanitizer(machine::sanitizer())
                    .restore(&p.chart.to_string(), now)
                    .unwrap_or_else(|e| panic!("session {}: {e}", self.sid));
                let mut snap = restored.snapshot;
                snap.now_ms = snap.now_ms.max(now);
                let before = step_of(&snap.value(&self.machine).to_json());
                self.snap = Some(snap);
                self.actions = restored.actions;
                self.after_step(ctx, &before);
            }
            None => {
                let (snap, actions) = initial_transition_at(&self.machine, now)
                    .unwrap_or_else(|e| panic!("session {}: {e}", self.sid));
                self.snap = Some(snap);
                self.actions = actions;
                self.after_step(ctx, "");
            }
        }
    }

    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: SessionMsg) {
        match msg {
            SessionMsg::View(reply) => {
                reply.reply(self.view());
            }
            SessionMsg::Faults(f, reply) => {
                self.faults = f;
                reply.reply(self.view());
            }
            SessionMsg::Event { event, step, reply } => {
                let current = self.view().step;
                if let Some(form) = step {
                    if form != current {
                        reply.reply(Err(Refusal::StaleStep { form, current }));
                        return;
                    }
                }
                let before_cfg = self.snap().config.clone();
                let before_ctx = self.snap().context.clone();
                let mut snap = self.snap.take().expect("started");
                snap.now_ms = snap.now_ms.max(Self::now_ms(ctx));
                let mut actions = std::mem::take(&mut self.actions);
                let r = transition_in_place(&self.machine, &mut snap, event, &mut actions);
                self.actions = actions;
                self.snap = Some(snap);
                if let Err(e) = r {
                    panic!("session {}: {e}", self.sid);
                }
                // An event no transition took changes nothing: nothing to
                // persist (the second CONFIRM while sending lands here).
                let s = self.snap();
                if s.config != before_cfg || s.context != before_ctx || !self.actions.is_empty() {
                    self.after_step(ctx, &current);
                }
                reply.reply(Ok(self.view()));
            }
            SessionMsg::Expire { rev } => {
                if rev == self.rev {
                    (self.env.evict)(&self.sid);
                    ctx.stop();
                }
            }
            // A cancelled timer's state was left: stale.
            SessionMsg::Timer { id, seq } => {
                self.deliver(ctx, |m, snap, actions| {
                    fire_scheduled(m, snap, &id, seq, actions)
                });
            }
            // A result for an invocation no longer in flight is stale.
            SessionMsg::Done {
                id,
                generation,
                result,
            } => {
                self.running.remove(&(id.clone(), generation));
                self.deliver(ctx, |m, snap, actions| {
                    invocation_done(m, snap, &id, generation, result, actions)
                });
            }
        }
    }

    fn stopped(&mut self, ctx: &mut Context<'_, Self>) {
        for (_, req) in self.running.drain() {
            ctx.abandon(req);
        }
    }
}
