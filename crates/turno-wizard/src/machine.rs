//! The signup chart: `assets/signup.json` (an XState v5 config, so
//! Stately's editor can open it) for the steps, and turno-chart's
//! idempotent submit ([`turno_chart::submit::Submit`]) for the last one.
//!
//! The steps: `personal` -> `plan` -> `payment` (`card` | `bank`, with a
//! shallow history so "back" from `review` returns to the sub-step the
//! user was in) -> `submit`, which is the library's machine put in place of
//! the config's placeholder state: `review` (the idempotency key is minted
//! on entry, before the first attempt) -> `sending` -> `completed` |
//! `failed` (`RETRY` with the same key, `CANCEL` -> `abandoned`) |
//! `uncertain` (lookups by key with backoff -> `completed`, back to
//! `sending`, or after 3 s `unresolvable`). Nothing in `sending` handles
//! `CONFIRM`: a second click while sending is ignored **by the graph**.
//! A chart restored from its snapshot while a charge was in flight goes to
//! `uncertain` ([`turno_chart::submit::sanitizer`]); it never charges
//! blindly.
//!
//! What the wizard adds to the library's states, and nothing else:
//! - `review`'s way back: `BACK` to the payment sub-step (the history
//!   state), `EDIT_PLAN`, `EDIT_PERSONAL`. Review is the last free place.
//! - `sending` counts attempts in `context.attempts` (for the page and the
//!   tests: a restore never adds one).
//! - `unresolvable` is not final here: `RECHECK` asks the gateway again
//!   (`uncertain`), on the user's request only; still nothing is resent.
//!
//! - Editing from review: `EDIT_PLAN` and `EDIT_PERSONAL` set
//!   `context.editing`, and that step's `NEXT` (guard `editing`) returns to
//!   review instead of going on; entering review clears it. The payment's
//!   history state keeps the sub-step, the context keeps every field.
//!
//! Pages are named by [`step_of`], from the table in [`crate::steps`]
//! (`submit.review` shows as `review`, `submit.uncertain.*` as
//! `submit.uncertain`); the machine is not built if the table and the chart
//! disagree.

use std::sync::Arc;

use serde_json::{json, Value};
use turno_chart::persist::Sanitizer;
use turno_chart::spec::{ActionSpec, KindSpec, StateSpec, TransitionSpec};
use turno_chart::submit::{self, Submit};
use turno_chart::{
    definition_json, ActionScope, Implementations, Machine, Snapshot, StateIdx, StateKind, Status,
};

/// The config's JSON source (the submit step is a placeholder in it).
pub const SIGNUP_JSON: &str = include_str!("../assets/signup.json");

/// The id of the submit state inside the signup chart.
pub const SUBMIT_ID: &str = "signup.submit";

/// The charge invocation's source.
pub const CHARGE: &str = submit::CHARGE;
/// The lookup invocation's source.
pub const LOOKUP: &str = submit::LOOKUP;

/// The compiled signup machine (context: JSON).
pub fn signup() -> Arc<Machine<Value>> {
    Arc::new(build().expect("the signup chart is valid"))
}

/// How a restored session resumes: the library's rules for its submit.
pub fn sanitizer() -> Sanitizer {
    submit::sanitizer(SUBMIT_ID)
}

fn build() -> Result<Machine<Value>, String> {
    build_from(SIGNUP_JSON)
}

fn build_from(source: &str) -> Result<Machine<Value>, String> {
    let mut def =
        definition_json::<Value>(source, &implementations()).map_err(|e| e.to_string())?;
    let slot = def
        .root
        .states
        .iter_mut()
        .find(|s| s.key == "submit")
        .ok_or("assets/signup.json has no submit state")?;
    let mut sub = Submit::new(0, Arc::new(|| crate::ids::random_hex(16)));
    sub.id = SUBMIT_ID.into();
    let mut spec = sub.spec();
    spec.key = "submit".into();
    spec.path = slot.path.clone();
    spec.description = slot.description.take();
    extend(&mut spec);
    *slot = spec;
    for (k, v) in sub.context().as_object().into_iter().flatten() {
        if def.context.get(k).is_none() {
            def.context[k] = v.clone();
        }
    }
    let m = Machine::new(def.root, def.context, def.version).map_err(|e| e.to_string())?;
    crate::steps::check(&m)?;
    Ok(m)
}

fn child<'a>(s: &'a mut StateSpec<Value>, key: &str) -> &'a mut StateSpec<Value> {
    s.states
        .iter_mut()
        .find(|c| c.key == key)
        .unwrap_or_else(|| panic!("turno_chart::submit has no state {key:?}"))
}

fn on(s: &mut StateSpec<Value>, event: &str, target: &str) {
    let path = format!("{}.on.{event}", s.path);
    s.on.push((
        event.into(),
        vec![TransitionSpec::to(vec![target.into()], path)],
    ));
}

/// The wizard's additions (see the [module docs](self)).
fn extend(spec: &mut StateSpec<Value>) {
    let review = child(spec, "review");
    on(review, "BACK", "#signup.payment.hist");
    on(review, "EDIT_PLAN", "#signup.plan");
    on(review, "EDIT_PERSONAL", "#signup.personal");
    for (event, transitions) in &mut review.on {
        if event.starts_with("EDIT_") {
            for t in transitions.iter_mut() {
                t.actions.push(set_editing(true));
            }
        }
    }
    review.entry.push(set_editing(false));
    child(spec, "sending").entry.push(ActionSpec {
        name: "countAttempt".into(),
        params: Value::Null,
        imp: Arc::new(|scope: &mut ActionScope<'_, Value>| {
            let c = scope.context_mut();
            let n = c["attempts"].as_u64().unwrap_or(0) + 1;
            c["attempts"] = json!(n);
        }),
    });
    let unresolvable = child(spec, "unresolvable");
    unresolvable.kind = KindSpec::Auto;
    on(unresolvable, "RECHECK", &format!("#{SUBMIT_ID}.uncertain"));
}

/// Sets `context.editing` (see the [module docs](self)).
fn set_editing(on: bool) -> ActionSpec<Value> {
    ActionSpec {
        name: if on { "startEditing" } else { "stopEditing" }.into(),
        params: Value::Null,
        imp: Arc::new(move |scope: &mut ActionScope<'_, Value>| {
            scope.context_mut()["editing"] = json!(on);
        }),
    }
}

fn take(ctx: &mut Value, key: &str, ev: &turno_chart::Event) {
    ctx[key] = ev.get(key).cloned().unwrap_or(Value::Null);
}

/// The actions the config names.
pub fn implementations() -> Implementations<Value> {
    Implementations::new()
        .assign("savePersonal", |c, e, _| take(c, "personal", e))
        .assign("savePlan", |c, e, _| {
            take(c, "plan", e);
            // What the submit charges.
            c["amount"] = c["plan"]["amount_cents"].clone();
        })
        .assign("savePayment", |c, e, _| take(c, "payment", e))
        .guard("editing", |c, _, _| c["editing"] == json!(true))
}

/// The page a configuration shows, as a dotted path (`personal`,
/// `payment.card`, `review`, `submit.uncertain`, `completed`). See the
/// [module docs](self).
pub fn step_of(value: &Value) -> String {
    let path = path_of(value);
    match crate::steps::Step::at_path(&path) {
        Some(step) => step.name.to_string(),
        None => path,
    }
}

/// Whether a page of `step` may send `event`: the chart's own answer
/// ([`Machine::accepted_events`] of the states that show as `step`), so
/// the pages, the checks and the graph cannot disagree. The chart's own
/// events (`xstate.*`: invocation results, timers) are never accepted
/// from a page.
pub fn accepts(m: &Machine<Value>, step: &str, event: &str) -> bool {
    (1..m.states().len() as StateIdx).any(|s| {
        let node = m.state(s);
        node.is_atomic() && step_of(&Value::String(crate::steps::path(m, s))) == step && {
            m.accepted_events(s).contains(&event)
        }
    })
}

/// Whether the signup is over: the chart reached a final state
/// (`completed`, `abandoned`) or stopped.
pub fn is_done(m: &Machine<Value>, s: &Snapshot<Value>) -> bool {
    s.status != Status::Active || s.config.iter().any(|i| m.state(i).kind == StateKind::Final)
}

fn path_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(m) => match m.iter().next() {
            Some((k, v)) => format!("{k}.{}", path_of(v)),
            None => String::new(),
        },
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turno_chart::{advance, initial_transition, invocation_done, transition, Event, Snapshot};

    fn ev(name: &str, data: Value) -> Event {
        Event::with_data(name, data)
    }

    fn step(m: &Machine<Value>, s: &Snapshot<Value>) -> String {
        step_of(&s.value(m).to_json())
    }

    fn at_review(m: &Machine<Value>) -> Snapshot<Value> {
        let (mut s, _) = initial_transition(m).unwrap();
        for e in [
            ev("NEXT", json!({"personal": {"name": "A"}})),
            ev("NEXT", json!({"plan": {"id": "pro", "amount_cents": 1200}})),
            ev("NEXT", json!({"payment": {"method": "card"}})),
        ] {
            s = transition(m, &s, e).unwrap().0;
        }
        s
    }

    fn finish(m: &Machine<Value>, s: &mut Snapshot<Value>, id: &str, r: Result<Value, Value>) {
        let gen = s
            .invocations
            .iter()
            .find(|i| i.id == id)
            .unwrap_or_else(|| panic!("{id} not in flight"))
            .generation;
        invocation_done(m, s, id, gen, r, &mut Vec::new()).unwrap();
    }

    #[test]
    fn back_from_review_returns_to_the_payment_sub_step() {
        let m = signup();
        let (mut s, _) = initial_transition(&m).unwrap();
        for e in [
            ev("NEXT", json!({"personal": {"name": "A"}})),
            ev("NEXT", json!({"plan": {"id": "pro", "amount_cents": 900}})),
            ev("USE_BANK", Value::Null),
            ev("NEXT", json!({"payment": {"method": "bank"}})),
        ] {
            s = transition(&m, &s, e).unwrap().0;
        }
        assert_eq!(step(&m, &s), "review");
        assert!(s.context["key"].is_string(), "the key is minted on entry");
        assert_eq!(s.context["amount"], 900);
        s = transition(&m, &s, ev("BACK", Value::Null)).unwrap().0;
        assert_eq!(step(&m, &s), "payment.bank");
    }

    #[test]
    fn editing_from_review_returns_to_review_after_the_one_step() {
        let m = signup();
        let s = at_review(&m);
        let key = s.context["key"].clone();
        let s = transition(&m, &s, ev("EDIT_PLAN", Value::Null)).unwrap().0;
        assert_eq!(step(&m, &s), "plan");
        let s = transition(
            &m,
            &s,
            ev(
                "NEXT",
                json!({"plan": {"id": "team", "amount_cents": 7900}}),
            ),
        )
        .unwrap()
        .0;
        assert_eq!(step(&m, &s), "review", "back to review, not to payment");
        assert_eq!(s.context["amount"], 7900);
        assert_eq!(
            s.context["payment"]["method"], "card",
            "the payment is kept"
        );
        assert_ne!(s.context["key"], key, "a new review, a new key");
        let s = transition(&m, &s, ev("EDIT_PERSONAL", Value::Null))
            .unwrap()
            .0;
        assert_eq!(step(&m, &s), "personal");
        let s = transition(&m, &s, ev("NEXT", json!({"personal": {"name": "B"}})))
            .unwrap()
            .0;
        assert_eq!(step(&m, &s), "review");
        assert_eq!(s.context["personal"]["name"], "B");
        assert_eq!(s.context["plan"]["id"], "team");
        // Review cleared the flag: the first pass goes step by step again.
        let s = transition(&m, &s, ev("BACK", Value::Null)).unwrap().0;
        let s = transition(&m, &s, ev("BACK", Value::Null)).unwrap().0;
        assert_eq!(step(&m, &s), "plan");
        let s = transition(&m, &s, ev("NEXT", json!({"plan": {"id": "pro"}})))
            .unwrap()
            .0;
        assert_eq!(step(&m, &s), "payment.card");
    }

    #[test]
    fn a_step_renamed_in_the_chart_does_not_build() {
        let renamed = SIGNUP_JSON.replace("\"bank\"", "\"transfer\"");
        let err = build_from(&renamed)
            .err()
            .expect("the table names payment.bank");
        assert!(err.contains("payment.bank"), "{err}");
        let extra = SIGNUP_JSON.replace(
            "\"hist\": { \"type\": \"history\" }",
            "\"hist\": { \"type\": \"history\" }, \"wallet\": {}",
        );
        assert_ne!(extra, SIGNUP_JSON);
        let err = build_from(&extra)
            .err()
            .expect("no page shows payment.wallet");
        assert!(err.contains("payment.wallet"), "{err}");
    }

    #[test]
    fn a_second_confirm_while_sending_is_not_a_transition() {
        let m = signup();
        let s = at_review(&m);
        let (s, actions) = transition(&m, &s, Event::new("CONFIRM")).unwrap();
        assert_eq!(step(&m, &s), "submit.sending");
        assert!(actions.iter().any(|a| matches!(
            a,
            turno_chart::Action::StartInvoke { src, input, .. }
                if src == CHARGE && input["key"] == s.context["key"] && input["amount"] == 1200
        )));
        let (s2, actions) = transition(&m, &s, Event::new("CONFIRM")).unwrap();
        assert!(actions.is_empty(), "{actions:?}");
        assert_eq!(s2.config, s.config);
        assert_eq!(s2.context["attempts"], 1);
    }

    #[test]
    fn outcomes_rejected_retry_uncertain_lookup_and_one_key() {
        let m = signup();
        let mut s = at_review(&m);
        let key = s.context["key"].clone();
        s = transition(&m, &s, Event::new("CONFIRM")).unwrap().0;
        finish(
            &m,
            &mut s,
            "charge",
            Err(json!({"rejected": "card declined"})),
        );
        assert_eq!(step(&m, &s), "submit.failed");
        s = transition(&m, &s, Event::new("RETRY")).unwrap().0;
        finish(&m, &mut s, "charge", Err(json!({"kind": "timeout"})));
        assert_eq!(step(&m, &s), "submit.uncertain");
        // not found: it never happened, so sending again is safe
        finish(&m, &mut s, "lookup", Ok(json!({"found": null})));
        assert_eq!(step(&m, &s), "submit.sending");
        finish(&m, &mut s, "charge", Err(json!({"kind": "lost"})));
        finish(
            &m,
            &mut s,
            "lookup",
            Ok(json!({"found": {"id": "ch_1", "amount_cents": 1200}})),
        );
        assert_eq!(step(&m, &s), "completed");
        assert_eq!(s.context["receipt"]["id"], "ch_1");
        assert_eq!(s.context["key"], key, "one key for every attempt");
        assert_eq!(s.context["attempts"], 3);
    }

    #[test]
    fn unresolvable_after_the_deadline_and_rechecked_only_on_request() {
        let m = signup();
        let mut s = at_review(&m);
        s = transition(&m, &s, Event::new("CONFIRM")).unwrap().0;
        finish(&m, &mut s, "charge", Err(json!({"kind": "timeout"})));
        finish(&m, &mut s, "lookup", Err(json!({"kind": "down"})));
        let (mut s, _) = advance(&m, &s, 3_500).unwrap();
        assert_eq!(step(&m, &s), "submit.unresolvable");
        let (s2, actions) = advance(&m, &s, 60_000).unwrap();
        assert_eq!(step(&m, &s2), "submit.unresolvable", "{actions:?}");
        s = transition(&m, &s, Event::new("RECHECK")).unwrap().0;
        assert_eq!(step(&m, &s), "submit.uncertain");
        assert_eq!(s.context["attempts"], 1, "nothing was resent");
    }
}
