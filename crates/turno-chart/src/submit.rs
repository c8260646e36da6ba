//! The idempotent submit, as a machine you can reuse: the last step of a
//! flow, where undoing is no longer navigating but compensating, so it
//! must never be crossed twice.
//!
//! ```text
//! review --CONFIRM--> sending --done--> completed (final; context.receipt)
//!   entry: new key       |  \--rejected--> failed --RETRY--> sending (same key)
//!                        |                   \--CANCEL--> abandoned (final)
//!                        \--timeout, lost, server error--> uncertain
//! uncertain (sends nothing; after 3 s: unresolvable, final, never retried)
//!   querying: lookup by key --found--> completed
//!                           --not found--> sending (same key)
//!                           --fails--> backoff --100 ms--> querying
//! ```
//!
//! - `review` generates the idempotency key on entry (before the first
//!   attempt) and stores it in `context.key`; every attempt and query uses
//!   it.
//! - There is no edge back from `sending`, and `sending` has no `CONFIRM`:
//!   a second CONFIRM is ignored by the graph itself (no in-flight flag).
//! - [`sanitizer`]: a chart restored in `sending` goes to `uncertain` (the
//!   same mechanism resolves a lost reply and an interrupted session); an
//!   interrupted lookup is re-run (a lookup is idempotent).
//!
//! The invocations are [`CHARGE`] (input `{"key", "amount"}`; output a
//! receipt, error `{"rejected": ...}` for an explicit rejection, anything
//! else is unknown) and [`LOOKUP`] (input `{"key"}`; output
//! `{"found": receipt-or-null}`). The fake gateway that serves both in
//! the crate's tests and example is test support, not this crate's API
//! (`tests/common/gateway.rs`).

use std::sync::Arc;

use serde_json::{json, Value};

use crate::actions::ActionScope;
use crate::machine::{BuildError, Machine};
use crate::persist::Sanitizer;
use crate::spec::{
    ActionSpec, DelaySpec, GuardSpec, InitialSpec, InvokeSpec, KindSpec, OutputSpec, StateSpec,
    TransitionSpec,
};

/// The charge invocation's source.
pub const CHARGE: &str = "submit.charge";
/// The lookup invocation's source.
pub const LOOKUP: &str = "submit.lookup";

/// Where keys come from (unique per flow; a UUID in production, a seeded
/// counter in tests).
pub type KeySource = Arc<dyn Fn() -> String + Send + Sync>;

/// The machine's parameters.
#[derive(Clone)]
pub struct Submit {
    /// The machine id.
    pub id: String,
    /// How much is charged.
    pub amount: u64,
    /// How long `uncertain` tries before `unresolvable` (default 3 s).
    pub deadline_ms: u64,
    /// The pause between failed lookups (default 100 ms).
    pub backoff_ms: u64,
    /// Where keys come from.
    pub keys: KeySource,
}

impl Submit {
    /// A submit of `amount` with keys from `keys`.
    pub fn new(amount: u64, keys: KeySource) -> Self {
        Submit {
            id: "submit".into(),
            amount,
            deadline_ms: 3000,
            backoff_ms: 100,
            keys,
        }
    }

    /// The compiled machine (context: [`Submit::context`]).
    pub fn machine(&self) -> Result<Machine<Value>, BuildError> {
        Machine::new(self.spec(), self.context(), Some("1".into()))
    }

    /// The context fields the machine reads and writes: `{"amount", "key",
    /// "receipt", "error"}`. A host chart that embeds [`Submit::spec`]
    /// keeps these in its own (JSON object) context.
    pub fn context(&self) -> Value {
        json!({"amount": self.amount, "key": null, "receipt": null, "error": null})
    }

    /// The machine's definition, uncompiled: a compound state keyed
    /// [`Submit::id`] with `review` as its initial child. To embed the
    /// submit in a larger chart, set `id` to the id the state will have
    /// there (`"signup.submit"` for a child `submit` of a machine
    /// `signup`: its absolute targets are `#<id>.…`), put the spec in the
    /// host's tree under the key it should have, and restore with
    /// [`sanitizer`]`(id)`.
    pub fn spec(&self) -> StateSpec<Value> {
        let id = &self.id;
        let p = |s: &str| format!("$.states.{s}");
        let keys = self.keys.clone();
        let new_key = action("submit.newKey", move |scope| {
            let k = keys();
            scope.context_mut()["key"] = Value::String(k);
        });
        let store = |name: &'static str, field: &'static str, from: &'static str| {
            action(name, move |scope| {
                let v = scope.event().get(from).cloned().unwrap_or(Value::Null);
                let v = if field == "receipt" && from == "output" {
                    v.get("found")
                        .cloned()
                        .filter(|f| !f.is_null())
                        .unwrap_or(v)
                } else {
                    v
                };
                scope.context_mut()[field] = v;
            })
        };
        let key_input = |with_amount: bool| {
            OutputSpec::Fn(Arc::new(move |c: &Value, _: &crate::Event| {
                if with_amount {
                    json!({"key": c["key"], "amount": c["amount"]})
                } else {
                    json!({"key": c["key"]})
                }
            }))
        };
        let to = |t: &str, path: String| TransitionSpec::to(vec![t.to_string()], path);

        let mut review = StateSpec::new("review", p("review"));
        review.entry.push(new_key);
        review.on.push((
            "CONFIRM".into(),
            vec![to("sending", p("review.on.CONFIRM"))],
        ));

        let mut sending = StateSpec::new("sending", p("sending"));
        let mut done = to("completed", p("sending.invoke.onDone"));
        done.actions
            .push(store("submit.storeReceipt", "receipt", "output"));
        let mut rejected = to("failed", p("sending.invoke.onError[0]"));
        rejected.guard = Some(guard("submit.rejected", |_, e| {
            e.get("error").and_then(|x| x.get("rejected")).is_some()
        }));
        rejected
            .actions
            .push(store("submit.storeError", "error", "error"));
        sending.invoke.push(InvokeSpec {
            id: Some("charge".into()),
            src: CHARGE.into(),
            input: Some(key_input(true)),
            on_done: vec![done],
            on_error: vec![rejected, to("uncertain", p("sending.invoke.onError[1]"))],
            path: p("sending.invoke"),
        });

        let mut failed = StateSpec::new("failed", p("failed"));
        failed
            .on
            .push(("RETRY".into(), vec![to("sending", p("failed.on.RETRY"))]));
        failed.on.push((
            "CANCEL".into(),
            vec![to("abandoned", p("failed.on.CANCEL"))],
        ));

        let mut uncertain = StateSpec::new("uncertain", p("uncertain"));
        uncertain.initial = Some(InitialSpec {
            target: "querying".into(),
            actions: Vec::new(),
            path: p("uncertain.initial"),
        });
        uncertain.after.push((
            DelaySpec::Ms(self.deadline_ms),
            vec![to(&format!("#{id}.unresolvable"), p("uncertain.after"))],
        ));
        let mut querying = StateSpec::new("querying", p("uncertain.states.querying"));
        let mut found = to(
            &format!("#{id}.completed"),
            p("uncertain.querying.onDone[0]"),
        );
        found.guard = Some(guard("submit.found", |_, e| {
            e.get("output")
                .and_then(|o| o.get("found"))
                .is_some_and(|f| !f.is_null())
        }));
        found
            .actions
            .push(store("submit.storeFound", "receipt", "output"));
        querying.invoke.push(InvokeSpec {
            id: Some("lookup".into()),
            src: LOOKUP.into(),
            input: Some(key_input(false)),
            on_done: vec![
                found,
                to(&format!("#{id}.sending"), p("uncertain.querying.onDone[1]")),
            ],
            on_error: vec![to("backoff", p("uncertain.querying.onError"))],
            path: p("uncertain.states.querying.invoke"),
        });
        let mut backoff = StateSpec::new("backoff", p("uncertain.states.backoff"));
        backoff.after.push((
            DelaySpec::Ms(self.backoff_ms),
            vec![to("querying", p("uncertain.states.backoff.after"))],
        ));
        uncertain.states = vec![querying, backoff];

        let fin = |k: &str| {
            let mut s = StateSpec::new(k, p(k));
            s.kind = KindSpec::Final;
            s
        };
        let mut root = StateSpec::new(id.clone(), "$");
        root.initial = Some(InitialSpec {
            target: "review".into(),
            actions: Vec::new(),
            path: "$.initial".into(),
        });
        root.states = vec![
            review,
            sending,
            failed,
            uncertain,
            fin("completed"),
            fin("unresolvable"),
            fin("abandoned"),
        ];
        root
    }
}

fn action(
    name: &str,
    f: impl for<'a> Fn(&mut ActionScope<'a, Value>) + Send + Sync + 'static,
) -> ActionSpec<Value> {
    ActionSpec {
        name: name.into(),
        params: Value::Null,
        imp: Arc::new(f),
    }
}

fn guard(
    name: &str,
    f: impl Fn(&Value, &crate::Event) -> bool + Send + Sync + 'static,
) -> GuardSpec<Value> {
    GuardSpec::Named {
        name: name.into(),
        params: Value::Null,
        imp: Arc::new(move |c, e, _| f(c, e)),
    }
}

/// How a restored submit resumes: an interrupted charge goes to
/// `uncertain` (ask by key, never charge blindly); an interrupted lookup is
/// re-run with the same key.
pub fn sanitizer(machine_id: &str) -> Sanitizer {
    Sanitizer::new()
        .safe_state(CHARGE, format!("{machine_id}.uncertain"))
        .idempotent(LOOKUP)
}
