//! The signup chart: `assets/signup.json` (an XState v5 config, so
//! Stately's editor can open it) and the implementations it names.
//!
//! The steps: `personal` -> `plan` -> `payment` (`card` | `bank`, with a
//! shallow history so "back" from `review` returns to the sub-step the
//! user was in) -> `review` -> `submit` -> `completed`.
//!
//! `submit` is the idempotent-submit pattern of DESIGN.md section 2 and
//! issue 12, written as a sub-machine with the same states so it can be
//! swapped for the library part once turno-chart ships it:
//!
//! - `review` stores the idempotency key on entry (`ensureKey`), before the
//!   first attempt; a changed plan or payment makes the next entry mint a
//!   new one.
//! - `CONFIRM` leaves `review` for `submit.sending`, which invokes the
//!   charge. Nothing in `submit` handles `CONFIRM`: a second click while
//!   sending is ignored **by the graph** (no in-flight flag anywhere).
//! - The charge's outcome: done -> `completed`; a known failure (the
//!   gateway said it did not charge) -> `failed` (`RETRY` -> sending with the
//!   same key, `CANCEL` -> review); anything else (timeout, lost reply,
//!   connection cut) -> `uncertain`, which sends nothing but queries the
//!   gateway by key: known -> `completed` with the receipt, unknown -> back
//!   to `sending` (safe: it never happened), the query itself failing until
//!   its deadline -> `unresolvable` (the user is told to check their
//!   statement before retrying; nothing retries automatically).
//! - `RESTORED` is what the session sends a chart restored from its
//!   persisted snapshot: in `sending` it goes to `uncertain` (the charge may
//!   or may not have happened while the server was down), in `uncertain` it
//!   restarts the query. Everywhere else it does nothing.

use std::sync::Arc;

use serde_json::{json, Value};
use turno_chart::{load_json, Implementations, Machine};

/// The chart's JSON source.
pub const SIGNUP_JSON: &str = include_str!("../assets/signup.json");

/// The compiled signup machine (context: JSON).
pub fn signup() -> Arc<Machine<Value>> {
    Arc::new(load_json(SIGNUP_JSON, &implementations()).expect("assets/signup.json is valid"))
}

fn take(ctx: &mut Value, key: &str, ev: &turno_chart::Event) {
    ctx[key] = ev.get(key).cloned().unwrap_or(Value::Null);
}

/// The actions, guards and invoked services the chart names.
pub fn implementations() -> Implementations<Value> {
    Implementations::new()
        .assign("savePersonal", |c, e, _| take(c, "personal", e))
        .assign("savePlan", |c, e, _| {
            take(c, "plan", e);
            c["keyed"] = json!(false);
        })
        .assign("savePayment", |c, e, _| {
            take(c, "payment", e);
            c["keyed"] = json!(false);
        })
        // The key is minted before the first attempt and kept across
        // retries; it changes only when what is being paid for changed.
        .assign("ensureKey", |c, _, _| {
            if c["keyed"] != json!(true) {
                let seq = c["keySeq"].as_u64().unwrap_or(0) + 1;
                c["keySeq"] = json!(seq);
                c["keyed"] = json!(true);
            }
        })
        .assign("countAttempt", |c, _, _| {
            let n = c["attempts"].as_u64().unwrap_or(0) + 1;
            c["attempts"] = json!(n);
        })
        .assign("saveReceipt", |c, e, _| {
            let out = e.get("output").cloned().unwrap_or(Value::Null);
            c["receipt"] = out.get("receipt").cloned().unwrap_or(out);
            c["failure"] = Value::Null;
        })
        .assign("saveFailure", |c, e, _| {
            c["failure"] = e.get("error").cloned().unwrap_or(Value::Null);
        })
        .guard("known", |_, e, _| {
            e.get("error").and_then(|x| x.get("known")) == Some(&json!(true))
        })
        .guard("found", |_, e, _| {
            e.get("output").and_then(|x| x.get("found")) == Some(&json!(true))
        })
        .actor("charge")
        .actor("queryByKey")
}

/// The page a configuration shows: the deepest active step, as a dotted
/// path (`personal`, `payment.card`, `submit.uncertain`, `completed`).
pub fn step_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(m) => match m.iter().next() {
            Some((k, v)) => format!("{k}.{}", step_of(v)),
            None => String::new(),
        },
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turno_chart::{initial_transition, invocation_done, transition, Event};

    fn ev(name: &str, data: Value) -> Event {
        Event::with_data(name, data)
    }

    #[test]
    fn back_from_review_returns_to_the_payment_sub_step() {
        let m = signup();
        let (mut s, _) = initial_transition(&m).unwrap();
        for e in [
            ev("NEXT", json!({"personal": {"name": "A"}})),
            ev("NEXT", json!({"plan": {"id": "pro"}})),
            ev("USE_BANK", Value::Null),
            ev("NEXT", json!({"payment": {"method": "bank"}})),
        ] {
            s = transition(&m, &s, e).unwrap().0;
        }
        assert_eq!(step_of(&s.value(&m).to_json()), "review");
        assert_eq!(s.context["keySeq"], 1);
        s = transition(&m, &s, ev("BACK", Value::Null)).unwrap().0;
        assert_eq!(step_of(&s.value(&m).to_json()), "payment.bank");
    }

    #[test]
    fn a_second_confirm_while_sending_is_not_a_transition() {
        let m = signup();
        let (mut s, _) = initial_transition(&m).unwrap();
        for e in ["NEXT", "NEXT", "NEXT", "CONFIRM"] {
            s = transition(&m, &s, Event::new(e)).unwrap().0;
        }
        assert_eq!(step_of(&s.value(&m).to_json()), "submit.sending");
        let (s2, actions) = transition(&m, &s, Event::new("CONFIRM")).unwrap();
        assert!(actions.is_empty(), "{actions:?}");
        assert_eq!(s2.config, s.config);
        assert_eq!(s2.context["attempts"], 1);
    }

    #[test]
    fn outcomes_known_failure_uncertain_and_restore() {
        let m = signup();
        let (mut s, _) = initial_transition(&m).unwrap();
        for e in ["NEXT", "NEXT", "NEXT", "CONFIRM"] {
            s = transition(&m, &s, Event::new(e)).unwrap().0;
        }
        let gen = s.invocations[0].generation;
        let mut a = Vec::new();
        invocation_done(
            &m,
            &mut s,
            "charge",
            gen,
            Err(json!({"known": true})),
            &mut a,
        )
        .unwrap();
        assert_eq!(step_of(&s.value(&m).to_json()), "submit.failed");
        s = transition(&m, &s, Event::new("RETRY")).unwrap().0;
        let gen = s.invocations[0].generation;
        invocation_done(
            &m,
            &mut s,
            "charge",
            gen,
            Err(json!({"kind": "timeout"})),
            &mut a,
        )
        .unwrap();
        assert_eq!(step_of(&s.value(&m).to_json()), "submit.uncertain");
        // A snapshot restored in sending goes to uncertain.
        let gen = s.invocations[0].generation;
        invocation_done(
            &m,
            &mut s,
            "query",
            gen,
            Ok(json!({"found": false})),
            &mut a,
        )
        .unwrap();
        assert_eq!(step_of(&s.value(&m).to_json()), "submit.sending");
        s = transition(&m, &s, Event::new("RESTORED")).unwrap().0;
        assert_eq!(step_of(&s.value(&m).to_json()), "submit.uncertain");
        let gen = s.invocations[0].generation;
        invocation_done(
            &m,
            &mut s,
            "query",
            gen,
            Ok(json!({"found": true, "receipt": {"id": "ch_1"}})),
            &mut a,
        )
        .unwrap();
        assert_eq!(step_of(&s.value(&m).to_json()), "completed");
        assert_eq!(s.context["receipt"]["id"], "ch_1");
        assert_eq!(s.context["keySeq"], 1, "one key for every attempt");
    }
}
