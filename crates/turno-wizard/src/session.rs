//! One signup session: a `turno_chart` [`ChartActor`] with the wizard's
//! [`Session`] as its extension.
//!
//! The chart interpreter is the library's: one macrostep per turn, delayed
//! events on turno timers, invocations whose late results are stale. What
//! the session adds, all in the chart's own turns (extension messages,
//! [`SessionMsg`]):
//!
//! - **Events from pages, refused or answered in one turn.** An event is
//!   refused unless the session is at the form's step, checked in the turn
//!   that takes the event, and answered with the [`View`] after the
//!   macrostep: nothing slips in between.
//! - **Persistence after every macrostep** that changed the chart (a draft
//!   too when a step was completed), before the macrostep's effects; the
//!   charge waits for that write to be durable before it leaves.
//! - **Faults** for the next charge, and the **time to live**: every step
//!   renews it, and a session idle for that long leaves memory.
//! - The **invocations** `charge` and `lookup`: futures piped back into the
//!   chart ([`Service::custom`]), with the armed faults.
//!
//! The chart's clock is the system's, with the wall-clock epoch
//! ([`ChartActor::with_epoch`]), so the deadlines in a persisted snapshot
//! (the submit's 3 s in `uncertain`, its lookup backoff) mean the same
//! after a restart. Restore goes through `turno_chart::persist` with the
//! submit's sanitizer: a charge in flight when the snapshot was written is
//! never re-run; the chart resumes in `uncertain` and asks the gateway by
//! key (see [`crate::machine`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use turno::{Context, ReplyTo, Response};
use turno_chart::interpreter::{
    ChartActor, ChartMsg, Extension, Running, Service, Started, Stepped, Turn,
};
use turno_chart::persist::Persist;
use turno_chart::{Event, Machine, Snapshot, StateSet};

use crate::client::{self, Faults, Lookup};
use crate::machine::{self, step_of};
use crate::persist::{Persisted, Persister};
use crate::steps::{self, Step};

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
    /// When the actor system's clock read 0, in ms since the Unix epoch
    /// (`turno_chart::persist::wall_epoch_ms`).
    pub epoch_ms: u64,
}

/// What a page needs to know about a session.
#[derive(Clone, Debug, Serialize)]
pub struct View {
    /// The session id.
    pub sid: String,
    /// Macrosteps taken.
    pub rev: u64,
    /// The page to show (`personal`, `payment.card`, `submit.sending`...;
    /// the names of [`steps::STEPS`]).
    pub step: String,
    /// The step's URL (`/payment/card`).
    pub url: String,
    /// The state value, as XState shows it.
    pub value: Value,
    /// Active state ids (for the diagram).
    pub active: Vec<String>,
    /// The transitions the session's last macrostep took, as the chart
    /// reported them: positions in the machine's transitions, the
    /// diagram's `data-transition` (empty after a restore).
    pub taken: Vec<u32>,
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
    /// A navigation to a step the chart does not reach from here by one
    /// move that sends nothing ([`steps::MOVES`]).
    NotOpen {
        /// The step asked for.
        wanted: String,
        /// The step the session is at.
        current: String,
    },
}

/// A session's own messages (the chart actor's [`ChartMsg::Ext`]).
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
    /// A navigation to a step (the browser's Back or Forward, a step's
    /// URL opened): taken when the chart reaches that step from the
    /// current one by one of [`steps::MOVES`], with the data the context
    /// already holds for `NEXT`; the view after it, or why not.
    Goto {
        /// The step asked for.
        step: String,
        /// The view at that step, or why it is not open.
        reply: ReplyTo<Result<View, Refusal>>,
    },
    /// The view once the session has moved past step `after` (its
    /// [`View::rev`]), or after `wait`, whichever comes first: a page
    /// waiting for the submit to end hears of it at once instead of
    /// polling. Answered at once when the session is already past `after`.
    Watch {
        /// The step the page shows.
        after: u64,
        /// The longest the answer waits.
        wait: std::time::Duration,
        /// The view.
        reply: ReplyTo<View>,
    },
    /// A watcher's wait is over: it gets the current view.
    WatchEnded {
        /// The watcher.
        id: u64,
    },
    /// Arms faults for the next charge.
    Faults(Faults, ReplyTo<View>),
    /// The session's time to live, counted from the step `rev`, is over:
    /// unless a later step renewed it, the actor leaves memory (its
    /// snapshot has expired in the store too).
    Expire {
        /// The step the timer was armed at.
        rev: u64,
    },
}

/// A session actor: the signup chart with the wizard's [`Session`].
pub type SessionActor = ChartActor<Value, Session>;

/// A session actor's address.
pub type SessionAddr = turno::Addr<ChartMsg<SessionMsg>>;

/// The session's part of its chart actor. See the [module docs](self).
pub struct Session {
    sid: String,
    link: String,
    env: Arc<Env>,
    rev: u64,
    faults: Faults,
    /// The receipt of the last snapshot written: the next charge waits on it.
    durable: Option<oneshot::Receiver<Result<(), String>>>,
    /// The configuration and context last persisted: a macrostep that
    /// changed neither (and asks for nothing) is not written again.
    last: Option<(StateSet, Value)>,
    /// The step last persisted (`None` after a restore: the restored one).
    step: Option<String>,
    /// The transitions the last macrostep that changed something took
    /// ([`View::taken`]).
    taken: Vec<u32>,
    /// Pages waiting for the next step ([`SessionMsg::Watch`]), oldest
    /// first, with their ids.
    watchers: Vec<(u64, ReplyTo<View>)>,
    /// The id of the next watcher.
    next_watcher: u64,
}

/// The most pages that wait on one session at once; a new one beyond it
/// answers the oldest (which asks again), so a session holds a bounded
/// number of replies whatever its clients do.
const MAX_WATCHERS: usize = 8;

impl Session {
    fn new(sid: String, link: String, env: Arc<Env>) -> Self {
        Session {
            sid,
            link,
            env,
            rev: 0,
            faults: Faults::default(),
            durable: None,
            last: None,
            step: Some(String::new()),
            taken: Vec::new(),
            watchers: Vec::new(),
            next_watcher: 0,
        }
    }

    fn view(&self, m: &Machine<Value>, s: &Snapshot<Value>) -> View {
        let value = s.value(m).to_json();
        let step = step_of(&value);
        View {
            sid: self.sid.clone(),
            rev: self.rev,
            url: Step::named(&step).map_or_else(|| "/".into(), Step::url),
            step,
            value,
            active: s.active_ids(m).iter().map(|x| x.to_string()).collect(),
            taken: self.taken.clone(),
            status: if machine::is_done(m, s) {
                "done"
            } else {
                "active"
            },
            context: s.context.clone(),
            key: s.context["key"].as_str().map(str::to_owned),
            faults: self.faults.clone(),
            link: self.link.clone(),
        }
    }
}

/// A new session at the first step.
pub fn new_session(
    sid: String,
    link: String,
    machine: Arc<Machine<Value>>,
    env: Arc<Env>,
) -> SessionActor {
    let epoch = env.epoch_ms;
    ChartActor::with_extension(machine, Session::new(sid, link, env))
        .with_services(services())
        .with_epoch(epoch)
}

/// A session restored from its persisted snapshot.
pub fn restored(
    sid: String,
    p: Persisted,
    machine: Arc<Machine<Value>>,
    env: Arc<Env>,
) -> SessionActor {
    let epoch = env.epoch_ms;
    let mut session = Session::new(sid.clone(), p.link.clone(), env);
    session.rev = p.rev;
    session.step = None;
    let m = machine.clone();
    let text = p.chart.to_string();
    ChartActor::with_extension(machine, session)
        .with_services(services())
        .with_epoch(epoch)
        .restoring(move |at| {
            Persist::new(&m)
                .sanitizer(machine::sanitizer())
                .restore(&text, at)
        })
}

impl Extension<Value> for Session {
    type Msg = SessionMsg;

    /// The live diagram marks the transitions each step took.
    const TAKEN: bool = true;

    fn handle(turn: &mut Turn<'_, '_, Value, Self>, msg: SessionMsg) {
        let view =
            |turn: &Turn<'_, '_, Value, Self>| turn.ext().view(turn.machine(), turn.snapshot());
        match msg {
            SessionMsg::View(reply) => {
                reply.reply(view(turn));
            }
            SessionMsg::Goto { step, reply } => {
                let current = step_of(&turn.snapshot().value(turn.machine()).to_json());
                if step == current {
                    reply.reply(Ok(view(turn)));
                    return;
                }
                match move_to(turn.machine(), turn.snapshot(), &current, &step) {
                    Some(event) => {
                        turn.send(event);
                        reply.reply(Ok(view(turn)));
                    }
                    None => {
                        reply.reply(Err(Refusal::NotOpen {
                            wanted: step,
                            current,
                        }));
                    }
                }
            }
            SessionMsg::Watch { after, wait, reply } => {
                if after != turn.ext().rev {
                    reply.reply(view(turn));
                    return;
                }
                if turn.ext().watchers.len() >= MAX_WATCHERS {
                    let (_, oldest) = turn.ext_mut().watchers.remove(0);
                    oldest.reply(view(turn));
                }
                let ext = turn.ext_mut();
                let id = ext.next_watcher;
                ext.next_watcher += 1;
                ext.watchers.push((id, reply));
                turn.ctx()
                    .send_after(wait, ChartMsg::Ext(SessionMsg::WatchEnded { id }));
            }
            SessionMsg::WatchEnded { id } => {
                let watchers = &mut turn.ext_mut().watchers;
                if let Some(i) = watchers.iter().position(|(w, _)| *w == id) {
                    let (_, reply) = watchers.remove(i);
                    reply.reply(view(turn));
                }
            }
            SessionMsg::Faults(f, reply) => {
                turn.ext_mut().faults = f;
                reply.reply(view(turn));
            }
            SessionMsg::Event { event, step, reply } => {
                if let Some(form) = step {
                    let current = step_of(&turn.snapshot().value(turn.machine()).to_json());
                    if form != current {
                        reply.reply(Err(Refusal::StaleStep { form, current }));
                        return;
                    }
                }
                // An event no transition takes changes nothing, and nothing
                // is written (the second CONFIRM while sending lands here).
                turn.send(event);
                reply.reply(Ok(view(turn)));
            }
            SessionMsg::Expire { rev } => {
                if rev == turn.ext().rev {
                    (turn.ext().env.evict)(&turn.ext().sid);
                    turn.ctx().stop();
                }
            }
        }
    }

    /// After a macrostep: persist (a draft too when a step was completed),
    /// renew the time to live; the effects follow.
    fn stepped(&mut self, ctx: &mut Context<'_, SessionActor>, step: Stepped<'_, Value>) {
        let s = step.snapshot;
        let changed = match &self.last {
            Some((config, context)) => {
                *config != s.config || *context != s.context || !step.actions.is_empty()
            }
            None => true,
        };
        if !changed {
            return;
        }
        self.last = Some((s.config.clone(), s.context.clone()));
        self.taken = step.taken.to_vec();
        self.rev += 1;
        // Every step renews the snapshot's time to live in the store; the
        // actor in memory lives exactly as long.
        ctx.send_after(
            self.env.ttl,
            ChartMsg::Ext(SessionMsg::Expire { rev: self.rev }),
        );
        let view = self.view(step.machine, s);
        for (_, w) in self.watchers.drain(..) {
            w.reply(view.clone());
        }
        let before = self.step.get_or_insert_with(|| view.step.clone());
        let draft =
            (view.step != *before).then(|| json!({"step": view.step, "context": view.context}));
        self.step = Some(view.step);
        let chart = Persist::new(step.machine)
            .to_value(s)
            .unwrap_or_else(|e| panic!("session {}: {e}", self.sid));
        let p = Persisted {
            rev: self.rev,
            link: self.link.clone(),
            chart,
        };
        self.durable = Some(self.env.persister.put(&self.sid, &p, draft));
    }
}

/// The event of [`steps::MOVES`] that takes the chart from `current` to
/// `wanted`, found by trying each on a copy of the snapshot. `NEXT`
/// carries what the context holds for the current step, if it holds it
/// (a payment only for its own method): forward again after a step back.
pub(crate) fn move_to(
    m: &Machine<Value>,
    s: &Snapshot<Value>,
    current: &str,
    wanted: &str,
) -> Option<Event> {
    let row = Step::named(current)?;
    steps::MOVES.iter().find_map(|name| {
        if !machine::accepts(m, current, name) {
            return None;
        }
        let data = if *name == "NEXT" {
            let key = row.saves?;
            let saved = &s.context[key];
            let method = row.state.rsplit('.').next();
            if saved.is_null() || (key == "payment" && saved["method"].as_str() != method) {
                return None;
            }
            json!({ key: saved })
        } else {
            Value::Null
        };
        let event = Event::with_data(*name, data);
        let (after, _) = turno_chart::transition(m, s, event.clone()).ok()?;
        (step_of(&after.value(m).to_json()) == wanted).then_some(event)
    })
}

/// The invocations the chart names: the charge and the lookup.
fn services() -> Arc<HashMap<String, Service<Value, Session>>> {
    static SERVICES: OnceLock<Arc<HashMap<String, Service<Value, Session>>>> = OnceLock::new();
    SERVICES
        .get_or_init(|| {
            Arc::new(HashMap::from([
                (machine::CHARGE.to_string(), Service::custom(charge)),
                (machine::LOOKUP.to_string(), Service::custom(lookup)),
            ]))
        })
        .clone()
}

/// The invocation's result as the chart's message; a future lost on the
/// way (the system going down) is an unknown outcome.
fn on_done(
    s: &Started,
) -> impl Fn(Response<Result<Value, Value>>) -> ChartMsg<SessionMsg> + Send + Sync + 'static {
    let s = Started {
        path: s.path.clone(),
        id: s.id.clone(),
        generation: s.generation,
        input: Value::Null,
    };
    move |r| {
        s.done(match r {
            Response::Reply(r) => r,
            Response::TimedOut => Err(json!({"kind": "timeout", "known": false})),
        })
    }
}

fn piped(
    ctx: &mut Context<'_, SessionActor>,
    s: &Started,
    r: Result<turno::RequestId, impl std::fmt::Display>,
) -> Running {
    match r {
        Ok(req) => Running::Request(req),
        Err(e) => {
            // It could not start: it fails at once, as a message of its
            // own (its own macrostep).
            let me = ctx.addr();
            let _ = ctx.send(
                &me,
                s.done(Err(json!({"kind": e.to_string(), "known": true}))),
            );
            Running::Nothing
        }
    }
}

fn charge(
    ctx: &mut Context<'_, SessionActor>,
    session: &mut Session,
    snap: &Snapshot<Value>,
    s: Started,
) -> Running {
    let gateway = session.env.gateway;
    let key = s.input["key"].as_str().unwrap_or_default().to_owned();
    let faults = session.faults.clone();
    // The charge faults are one-shot: the retry goes through.
    session.faults.charge.clear();
    session.faults.crash = false;
    let c = &snap.context;
    let body = json!({
        "amount_cents": s.input["amount"],
        "plan": c["plan"]["id"],
        "token": c["payment"]["token"],
        "last4": c["payment"]["last4"],
        "email": c["personal"]["email"],
    });
    let crash = session.env.crash.clone();
    let durable = session.durable.take();
    let r = ctx.pipe(
        async move {
            // The key and `sending` are on disk before the charge leaves:
            // a crash after this point restores into `uncertain`, never
            // into a blind resend.
            if let Some(d) = durable {
                if let Ok(Err(e)) | Err(e) = d.await.map_err(|e| e.to_string()) {
                    return Err(json!({"kind": "not persisted", "known": true, "message": e}));
                }
            }
            let r = client::charge(gateway, &key, &body, &faults).await;
            if faults.crash {
                crash();
                std::future::pending::<()>().await;
            }
            // The submit's contract: a receipt, or `{"rejected": ..}` when
            // surely nothing was charged; any other error is unknown.
            r.map(|v| v["receipt"].clone()).map_err(|e| {
                if e["known"] == json!(true) {
                    json!({"rejected": e["message"], "kind": e["kind"], "message": e["message"]})
                } else {
                    e
                }
            })
        },
        None,
        on_done(&s),
    );
    piped(ctx, &s, r)
}

fn lookup(
    ctx: &mut Context<'_, SessionActor>,
    session: &mut Session,
    _: &Snapshot<Value>,
    s: Started,
) -> Running {
    let gateway = session.env.gateway;
    let key = s.input["key"].as_str().unwrap_or_default().to_owned();
    let faults = session.faults.clone();
    let r = ctx.pipe(
        async move {
            // One lookup; the chart backs off, retries and gives up at its
            // own deadline.
            match client::query(gateway, &key, &faults, client::TIMEOUT).await {
                Ok(Lookup::Charged(receipt)) => Ok(json!({"found": receipt})),
                Ok(Lookup::Unknown) => Ok(json!({"found": null})),
                Err(e) => Err(json!({"kind": "lookup failed", "message": e})),
            }
        },
        None,
        on_done(&s),
    );
    piped(ctx, &s, r)
}
