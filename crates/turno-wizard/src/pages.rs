//! The pages, rendered on the server: one per step, each with the live
//! diagram, the fault panel and the draft tools beside it.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use turno_chart::{Machine, StateKind};

use crate::session::View;
use crate::validate::{Errors, PLANS};

/// The page script (drafts in localStorage, live diagram, polling).
pub const APP_JS: &str = include_str!("../assets/app.js");
/// The style sheet.
pub const APP_CSS: &str = include_str!("../assets/app.css");

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn money(cents: &Value) -> String {
    let c = cents.as_u64().unwrap_or(0);
    format!("€{}.{:02}", c / 100, c % 100)
}

const STEPS: &[(&str, &str)] = &[
    ("personal", "You"),
    ("plan", "Plan"),
    ("payment", "Payment"),
    ("review", "Review"),
    ("submit", "Submit"),
    ("completed", "Done"),
];

fn head(title: &str, v: Option<&View>) -> String {
    let data = match v {
        Some(v) => format!(
            r#" data-sid="{}" data-step="{}" data-rev="{}""#,
            esc(&v.sid),
            esc(&v.step),
            v.rev
        ),
        None => String::new(),
    };
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>turno signup: {}</title><link rel="stylesheet" href="/assets/app.css"></head><body{data}><header><h1>turno signup</h1>"#,
        esc(title)
    )
}

fn crumbs(step: &str) -> String {
    let top = step.split('.').next().unwrap_or("");
    let at = STEPS.iter().position(|s| s.0 == top).unwrap_or(0);
    let items: String = STEPS
        .iter()
        .enumerate()
        .map(|(i, (_, label))| {
            let class = if i < at {
                "done"
            } else if i == at {
                "here"
            } else {
                ""
            };
            format!(r#"<li class="{class}">{label}</li>"#)
        })
        .collect();
    format!(r#"<ol class="steps">{items}</ol>"#)
}

fn input(name: &str, label: &str, value: &str, errors: &Errors, extra: &str) -> String {
    let err = errors
        .get(name)
        .map(|m| format!(r#"<span class="error" id="{name}-error">{}</span>"#, esc(m)))
        .unwrap_or_default();
    let invalid = if errors.contains_key(name) {
        r#" aria-invalid="true""#
    } else {
        ""
    };
    format!(
        r#"<label>{label}<input name="{name}" id="{name}" value="{}"{invalid} {extra}></label>{err}"#,
        esc(value)
    )
}

fn hidden(v: &View) -> String {
    format!(
        r#"<input type="hidden" name="sid" value="{}"><input type="hidden" name="step" value="{}">"#,
        esc(&v.sid),
        esc(&v.step)
    )
}

fn button(event: &str, label: &str, class: &str) -> String {
    format!(
        r#"<button type="submit" name="event" value="{event}" class="{class}" id="ev-{event}">{label}</button>"#
    )
}

/// A value for a field: what the user just sent (never a volatile field),
/// else what the chart holds.
fn val<'a>(values: &'a BTreeMap<String, String>, ctx: &'a Value, name: &str) -> String {
    if let Some(v) = values.get(name) {
        return v.clone();
    }
    ctx.as_str().map(str::to_string).unwrap_or_default()
}

fn form_for(v: &View, errors: &Errors, values: &BTreeMap<String, String>) -> String {
    let c = &v.context;
    let open = format!(
        r#"<form method="post" action="/event" id="step-form" novalidate>{}"#,
        hidden(v)
    );
    let body = match v.step.as_str() {
        "personal" => format!(
            "<h2>About you</h2>{}{}<div class=actions>{}</div>",
            input(
                "name",
                "Full name",
                &val(values, &c["personal"]["name"], "name"),
                errors,
                r#"autocomplete="name""#
            ),
            input(
                "email",
                "Email",
                &val(values, &c["personal"]["email"], "email"),
                errors,
                r#"type="email" autocomplete="email""#
            ),
            button("NEXT", "Continue", "primary"),
        ),
        "plan" => {
            let chosen = val(values, &c["plan"]["id"], "plan");
            let radios: String = PLANS
                .iter()
                .map(|(id, label, cents)| {
                    let checked = if *id == chosen { " checked" } else { "" };
                    format!(
                        r#"<label class="plan"><input type="radio" name="plan" value="{id}"{checked}> {label} <small>{} / month</small></label>"#,
                        money(&json!(cents))
                    )
                })
                .collect();
            let billing = val(values, &c["plan"]["billing"], "billing");
            let opt = |b: &str, l: &str| {
                let sel = if billing == b { " selected" } else { "" };
                format!(r#"<option value="{b}"{sel}>{l}</option>"#)
            };
            let err = |k: &str| {
                errors
                    .get(k)
                    .map(|m| format!(r#"<span class="error" id="{k}-error">{}</span>"#, esc(m)))
                    .unwrap_or_default()
            };
            format!(
                r#"<h2>Choose a plan</h2><fieldset>{radios}</fieldset>{}<label>Billing<select name="billing" id="billing">{}{}</select></label>{}<div class=actions>{}{}</div>"#,
                err("plan"),
                opt("monthly", "Monthly"),
                opt("yearly", "Yearly (10 months' price)"),
                err("billing"),
                button("NEXT", "Continue", "primary"),
                button("BACK", "Back", ""),
            )
        }
        "payment.card" => format!(
            r#"<h2>Payment: card</h2>{}{}{}{}<p class="hint">The card number and the one-time code are never stored: not in this browser, not on the server.</p><div class=actions>{}{}{}</div>"#,
            input(
                "card_number",
                "Card number",
                "",
                errors,
                r#"inputmode="numeric" autocomplete="off" data-volatile"#
            ),
            input(
                "expiry",
                "Expiry (MM/YY)",
                &val(values, &c["payment"]["expiry"], "expiry"),
                errors,
                r#"placeholder="MM/YY""#
            ),
            input(
                "holder",
                "Name on card",
                &val(values, &c["payment"]["holder"], "holder"),
                errors,
                ""
            ),
            input(
                "otp",
                "One-time code from your bank (6 digits)",
                "",
                errors,
                r#"inputmode="numeric" autocomplete="one-time-code" data-volatile"#
            ),
            button("NEXT", "Review", "primary"),
            button("USE_BANK", "Pay from a bank account instead", ""),
            button("BACK", "Back", ""),
        ),
        "payment.bank" => format!(
            r#"<h2>Payment: bank account</h2>{}{}<div class=actions>{}{}{}</div>"#,
            input(
                "iban",
                "IBAN",
                &val(values, &Value::Null, "iban"),
                errors,
                r#"autocomplete="off""#
            ),
            input(
                "account_holder",
                "Account holder",
                &val(values, &c["payment"]["holder"], "account_holder"),
                errors,
                ""
            ),
            button("NEXT", "Review", "primary"),
            button("USE_CARD", "Pay by card instead", ""),
            button("BACK", "Back", ""),
        ),
        "review" => format!(
            r#"<h2>Review</h2>{}<p class="hint">Confirming charges {}. This is the last step you can change anything.</p><div class=actions>{}{}{}{}</div>"#,
            summary(v),
            money(&c["plan"]["amount_cents"]),
            button("CONFIRM", "Confirm and pay", "primary"),
            button("BACK", "Change payment", ""),
            button("EDIT_PLAN", "Change plan", ""),
            button("EDIT_PERSONAL", "Change your details", ""),
        ),
        "submit.sending" => format!(
            r#"<h2>Sending your payment…</h2><p class="status" id="status">Attempt {} with key <code>{}</code>. This page updates by itself.</p>"#,
            c["attempts"],
            esc(v.key.as_deref().unwrap_or("")),
        ),
        "submit.failed" => format!(
            r#"<h2>The payment failed</h2><p class="status" id="status">The gateway said: {}. Nothing was charged.</p><div class=actions>{}{}</div>"#,
            esc(c["error"]["message"].as_str().unwrap_or("an error")),
            button("RETRY", "Try again", "primary"),
            button("CANCEL", "Cancel the payment", ""),
        ),
        "submit.abandoned" => r#"<h2>Payment cancelled</h2><p class="status" id="status">You cancelled after the gateway refused the payment. Nothing was charged.</p>"#.to_string(),
        "submit.uncertain" => format!(
            r#"<h2>Checking your payment…</h2><p class="status" id="status">We do not know yet whether the payment went through (no clear answer came back, or the server restarted meanwhile). We are asking the gateway by key <code>{}</code>; nothing is sent again until it answers.</p>"#,
            esc(v.key.as_deref().unwrap_or("")),
        ),
        "submit.unresolvable" => format!(
            r#"<h2>We could not confirm your payment</h2><p class="status" id="status">The gateway cannot tell us whether key <code>{}</code> was charged. <strong>Check your card or bank statement (your payment history) before you try again</strong>; nothing will be retried automatically.</p><div class=actions>{}</div>"#,
            esc(v.key.as_deref().unwrap_or("")),
            button("RECHECK", "Ask the gateway again", "primary"),
        ),
        "completed" => format!(
            r#"<h2>Welcome aboard!</h2><p class="status" id="status">Paid {}: receipt <code id="receipt">{}</code>.</p>{}"#,
            money(&c["receipt"]["amount_cents"]),
            esc(c["receipt"]["id"].as_str().unwrap_or("")),
            summary(v),
        ),
        other => format!("<p>Unknown step {}</p>", esc(other)),
    };
    format!("{open}{body}</form>")
}

fn summary(v: &View) -> String {
    let c = &v.context;
    let pay = match c["payment"]["method"].as_str() {
        Some("card") => format!(
            "card ending {}",
            esc(c["payment"]["last4"].as_str().unwrap_or(""))
        ),
        Some("bank") => format!(
            "bank account ending {}",
            esc(c["payment"]["last4"].as_str().unwrap_or(""))
        ),
        _ => "none".into(),
    };
    format!(
        r#"<dl class="summary"><dt>Name</dt><dd>{}</dd><dt>Email</dt><dd>{}</dd><dt>Plan</dt><dd>{} ({}), {}</dd><dt>Payment</dt><dd id="pay">{pay}</dd></dl>"#,
        esc(c["personal"]["name"].as_str().unwrap_or("")),
        esc(c["personal"]["email"].as_str().unwrap_or("")),
        esc(c["plan"]["id"].as_str().unwrap_or("")),
        esc(c["plan"]["billing"].as_str().unwrap_or("")),
        money(&c["plan"]["amount_cents"]),
    )
}

/// The statechart as nested boxes, the active states highlighted (the
/// inspector's chart pane, drawn on the server; the script re-marks the
/// active ones as the session moves).
fn diagram(v: &View) -> String {
    static MACHINE: std::sync::OnceLock<std::sync::Arc<Machine<Value>>> =
        std::sync::OnceLock::new();
    let m = MACHINE.get_or_init(crate::machine::signup);
    fn draw(m: &Machine<Value>, idx: usize, active: &[String], out: &mut String) {
        let s = &m.states()[idx];
        let kind = match s.kind {
            StateKind::Atomic => "atomic",
            StateKind::Compound => "compound",
            StateKind::Parallel => "parallel",
            StateKind::Final => "final",
            StateKind::History { .. } => "history",
        };
        let on = if active.iter().any(|a| **a == *s.id) {
            " active"
        } else {
            ""
        };
        let name = s.id.rsplit('.').next().unwrap_or(&s.id);
        out.push_str(&format!(
            r#"<div class="state {kind}{on}" data-state="{}"><div class="state-name">{}</div>"#,
            esc(&s.id),
            esc(name)
        ));
        for (i, c) in m.states().iter().enumerate() {
            if c.parent.map(usize::from) == Some(idx) && i != idx {
                draw(m, i, active, out);
            }
        }
        out.push_str("</div>");
    }
    let mut out = String::new();
    for (i, s) in m.states().iter().enumerate().skip(1) {
        if s.parent.map(usize::from) == Some(0) {
            draw(m, i, &v.active, &mut out);
        }
    }
    format!(
        r#"<div class="chart" id="chart">{out}</div><div class="legend" id="active">active: {}</div>"#,
        esc(&v.active.join(", "))
    )
}

fn fault_panel(v: &View) -> String {
    let f = &v.faults;
    let sel = |k: &str| if f.charge == k { " selected" } else { "" };
    format!(
        r#"<form method="post" action="/faults" id="fault-form">{}<label>Gateway latency (ms)<input name="latency_ms" id="latency_ms" value="{}" inputmode="numeric"></label><label>Next charge<select name="charge" id="fault-charge"><option value=""{}>answers normally</option><option value="timeout"{}>times out after charging</option><option value="lost"{}>charges, reply lost</option><option value="error"{}>server error (no charge)</option></select></label><label class="check"><input type="checkbox" name="lookup_down" id="lookup_down"{}> lookups by key fail</label><label class="check"><input type="checkbox" name="crash" id="crash"{}> crash the wizard server mid-submit</label><button type="submit" id="arm">Arm faults</button></form>"#,
        hidden(v),
        f.latency_ms,
        sel(""),
        sel("timeout"),
        sel("lost"),
        sel("error"),
        if f.lookup_down { " checked" } else { "" },
        if f.crash { " checked" } else { "" },
    )
}

fn drafts(v: &View) -> String {
    format!(
        r#"<p>Saved on the server at every completed step, in this browser at every change. Continue in another browser with your draft link:</p><p><a id="draft-link" href="/d/{0}">/d/{0}</a></p><form method="post" action="/forget" id="forget-form">{1}<button type="submit" id="forget">Forget me</button></form>"#,
        esc(&v.link),
        hidden(v),
    )
}

/// A step's page.
pub fn step(
    v: &View,
    errors: &Errors,
    values: &BTreeMap<String, String>,
    notice: Option<&str>,
) -> String {
    let notice = notice
        .map(|n| format!(r#"<p class="notice" id="notice">{}</p>"#, esc(n)))
        .unwrap_or_default();
    format!(
        r#"{}{}</header><main><section class="card" id="step">{notice}{}</section><aside><section><h2>Statechart</h2>{}</section><section><h2>Fault panel</h2>{}</section><section><h2>Your draft</h2>{}</section></aside></main><div id="banner" hidden></div><script src="/assets/app.js"></script></body></html>"#,
        head(&v.step, Some(v)),
        crumbs(&v.step),
        form_for(v, errors, values),
        diagram(v),
        fault_panel(v),
        drafts(v),
    )
}

/// A refusal page.
pub fn refusal(status: u16, message: &str, v: Option<&View>) -> String {
    let at = v
        .map(|v| {
            format!(
                r#"<p>Your signup is at the <strong>{}</strong> step.</p>"#,
                esc(&v.step)
            )
        })
        .unwrap_or_default();
    format!(
        r#"{}</header><main><section class="card refusal" id="step"><h2>{status}</h2><p id="refusal">{}</p>{at}<p><a href="/" id="home">Go to your signup</a></p></section></main><div id="banner" hidden></div><script src="/assets/app.js"></script></body></html>"#,
        head("refused", None),
        esc(message)
    )
}

/// After "forget me".
pub fn forgotten(sid: &str) -> String {
    format!(
        r#"{}</header><main><section class="card" id="step" data-forget="{}"><h2>Forgotten</h2><p id="forgotten">Your signup, its drafts and its draft link are deleted from the server, and this browser's copy is cleared.</p><p><a href="/" id="home">Start again</a></p></section></main><script src="/assets/app.js"></script></body></html>"#,
        head("forgotten", None),
        esc(sid)
    )
}

/// The machine's states, for `/api/chart` (the inspector's shape).
pub fn chart_json(m: &Machine<Value>) -> Value {
    let states: Vec<Value> = m
        .states()
        .iter()
        .skip(1)
        .map(|s| {
            json!({
                "id": &*s.id,
                "parent": s.parent.filter(|&p| p != 0).map(|p| m.state(p).id.to_string()),
            })
        })
        .collect();
    json!({"machine": m.id(), "states": states, "source": crate::machine::SIGNUP_JSON})
}
