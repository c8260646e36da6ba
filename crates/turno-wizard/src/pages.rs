//! The pages, rendered on the server: one per step (named by
//! [`crate::steps`], worded by [`crate::words`]), with the draft tools
//! beside it and, behind one switch, the demo's workings: the live
//! diagram and the fault panel.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use turno_chart::Machine;

use crate::session::View;
use crate::steps::{Page, Step, STAGES};
use crate::validate::{Errors, PLANS};
use crate::words::{fill, Lang, Words, LANGS};

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

/// An amount in euros as the language writes it (`€29.00`, `29,00 €`).
fn money(lang: Lang, cents: &Value) -> String {
    let c = cents.as_u64().unwrap_or(0);
    match lang {
        Lang::En => format!("€{}.{:02}", c / 100, c % 100),
        Lang::Es => format!("{},{:02}\u{a0}€", c / 100, c % 100),
    }
}

/// How a page is shown: its language, and whether the demo's workings
/// (the statechart and the fault panel, for the demo's operator) are on.
#[derive(Clone, Copy, Debug)]
pub struct Opts {
    /// The language.
    pub lang: Lang,
    /// The statechart and the fault panel are shown.
    pub workings: bool,
}

/// The page's title in the window, its `<head>` and the header with the
/// language switch. `here`: the URL the language links lead back to.
fn head(o: Opts, title: &str, attrs: &str, here: &str) -> String {
    let w = o.lang.words();
    let langs: String = LANGS
        .iter()
        .map(|(l, code, name)| {
            let current = if *l == o.lang {
                r#" aria-current="true""#
            } else {
                ""
            };
            format!(
                r#"<a href="{}?lang={code}" lang="{code}" hreflang="{code}" id="lang-{code}"{current}>{name}</a>"#,
                esc(here)
            )
        })
        .collect();
    format!(
        r#"<!doctype html><html lang="{}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{} · {}</title><link rel="stylesheet" href="/assets/app.css"></head><body{attrs} data-down="{}"><header><p class="site">{}</p><nav class="langs" aria-label="{}">{langs}</nav></header>"#,
        o.lang.code(),
        esc(title),
        esc(w.site),
        esc(w.not_answering),
        esc(w.site),
        esc(w.language),
    )
}

fn crumbs(o: Opts, step: &Step) -> String {
    let items: String = STAGES
        .iter()
        .map(|stage| {
            let (class, current) = match stage.cmp(&step.stage) {
                std::cmp::Ordering::Less => ("done", ""),
                std::cmp::Ordering::Equal => ("here", r#" aria-current="step""#),
                std::cmp::Ordering::Greater => ("", ""),
            };
            format!(
                r#"<li class="{class}"{current}>{}</li>"#,
                o.lang.stage(*stage)
            )
        })
        .collect();
    format!(
        r#"<nav aria-label="{}"><ol class="steps">{items}</ol></nav>"#,
        esc(o.lang.words().progress)
    )
}

fn error_of(errors: &Errors, name: &str) -> String {
    errors
        .get(name)
        .map(|m| format!(r#"<p class="error" id="{name}-error">{}</p>"#, esc(m)))
        .unwrap_or_default()
}

/// The form's fields in the order they are shown.
const FIELD_ORDER: &[&str] = &[
    "name",
    "email",
    "plan",
    "billing",
    "card_number",
    "expiry",
    "holder",
    "otp",
    "iban",
    "account_holder",
];

/// The field that takes the focus after a refused form: the first shown
/// of those with an error.
fn first_invalid(errors: &Errors) -> Option<&'static str> {
    FIELD_ORDER
        .iter()
        .copied()
        .find(|f| errors.contains_key(*f))
}

/// A labelled field; its error (and `hint`, an element's id) are tied to
/// it, and the first invalid field of the form takes the focus.
fn input(
    name: &str,
    label: &str,
    value: &str,
    errors: &Errors,
    extra: &str,
    hint: Option<&str>,
) -> String {
    let mut described: Vec<String> = Vec::new();
    if errors.contains_key(name) {
        described.push(format!("{name}-error"));
    }
    if let Some(h) = hint {
        described.push(h.to_string());
    }
    let mut attrs = String::new();
    if !described.is_empty() {
        attrs.push_str(&format!(r#" aria-describedby="{}""#, described.join(" ")));
    }
    if errors.contains_key(name) {
        attrs.push_str(r#" aria-invalid="true""#);
        if first_invalid(errors) == Some(name) {
            attrs.push_str(" autofocus");
        }
    }
    format!(
        r#"<div class="field"><label for="{name}">{label}</label><input name="{name}" id="{name}" value="{}"{attrs} {extra}>{}</div>"#,
        esc(value),
        error_of(errors, name)
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

/// The idempotency key, the attempts and the gateway's own words about
/// the last failure, for support, folded away.
fn details(w: &Words, v: &View) -> String {
    let reason = v.context["error"]["message"]
        .as_str()
        .map(|m| {
            format!(
                r#"<dt>{}</dt><dd id="reason">{}</dd>"#,
                esc(w.gateway_said),
                esc(m)
            )
        })
        .unwrap_or_default();
    format!(
        r#"<details id="details"><summary>{}</summary><dl class="summary"><dt>{}</dt><dd><code id="key">{}</code></dd><dt>{}</dt><dd>{}</dd>{reason}</dl></details>"#,
        esc(w.details),
        esc(w.payment_reference),
        esc(v.key.as_deref().unwrap_or("")),
        esc(w.attempts),
        v.context["attempts"],
    )
}

fn form_for(
    o: Opts,
    v: &View,
    step: &Step,
    errors: &Errors,
    values: &BTreeMap<String, String>,
) -> String {
    let w = o.lang.words();
    let c = &v.context;
    let editing = c["editing"] == json!(true);
    let next = if editing { w.save_and_review } else { w.next };
    let editing_hint = if editing {
        format!(r#"<p class="hint" id="editing">{}</p>"#, esc(w.editing))
    } else {
        String::new()
    };
    let title = format!(r#"<h1 id="title">{}</h1>"#, esc(o.lang.title(step.page)));
    let open = format!(
        r#"<form method="post" action="/event" id="step-form" novalidate>{}"#,
        hidden(v)
    );
    let status = |text: &str| format!(r#"<p class="status" id="status">{}</p>"#, esc(text));
    let body = match step.page {
        Page::Personal => format!(
            "{editing_hint}{}{}<div class=actions>{}</div>",
            input(
                "name",
                w.name,
                &val(values, &c["personal"]["name"], "name"),
                errors,
                r#"autocomplete="name""#,
                None,
            ),
            input(
                "email",
                w.email,
                &val(values, &c["personal"]["email"], "email"),
                errors,
                r#"type="email" autocomplete="email""#,
                None,
            ),
            button("NEXT", next, "primary"),
        ),
        Page::Plan => {
            let chosen = val(values, &c["plan"]["id"], "plan");
            let radios: String = PLANS
                .iter()
                .map(|(id, label, cents)| {
                    let checked = if *id == chosen { " checked" } else { "" };
                    let focus = if first_invalid(errors) == Some("plan") && *id == PLANS[0].0 {
                        " autofocus"
                    } else {
                        ""
                    };
                    format!(
                        r#"<div class="plan"><input type="radio" name="plan" value="{id}" id="plan-{id}"{checked}{focus}><label for="plan-{id}">{label} <span class="price">{} {}</span></label></div>"#,
                        money(o.lang, &json!(cents)),
                        esc(w.per_month),
                    )
                })
                .collect();
            let billing = val(values, &c["plan"]["billing"], "billing");
            let opt = |b: &str, l: &str| {
                let sel = if billing == b { " selected" } else { "" };
                format!(r#"<option value="{b}"{sel}>{}</option>"#, esc(l))
            };
            let plan_err = if errors.contains_key("plan") {
                r#" aria-describedby="plan-error""#
            } else {
                ""
            };
            let billing_err = if errors.contains_key("billing") {
                r#" aria-describedby="billing-error" aria-invalid="true""#
            } else {
                ""
            };
            format!(
                r#"{editing_hint}<fieldset id="plans"{plan_err}><legend>{}</legend>{radios}{}</fieldset><div class="field"><label for="billing">{}</label><select name="billing" id="billing"{billing_err}>{}{}</select>{}</div><div class=actions>{}{}</div>"#,
                esc(w.plan_legend),
                error_of(errors, "plan"),
                esc(w.billing),
                opt("monthly", w.monthly),
                opt("yearly", w.yearly),
                error_of(errors, "billing"),
                button("NEXT", next, "primary"),
                button("BACK", w.back, ""),
            )
        }
        Page::Card => {
            // Why the card number is empty: the form was refused (it is
            // never echoed back), or the user came back from the review
            // (it was never kept).
            let again = if !errors.is_empty() {
                Some(w.card_cleared)
            } else if c["payment"]["method"] == "card" {
                Some(w.card_again)
            } else {
                None
            };
            let again_hint = again
                .map(|t| format!(r#"<p class="hint notice" id="card-hint">{}</p>"#, esc(t)))
                .unwrap_or_default();
            let hint = again.map(|_| "card-hint");
            // The notice says it already: the general hint would repeat it.
            let never_kept = if again.is_some() {
                String::new()
            } else {
                format!(
                    r#"<p class="hint" id="never-kept">{}</p>"#,
                    esc(w.card_never_kept)
                )
            };
            format!(
                r#"{again_hint}{}{}{}{}{never_kept}<div class=actions>{}{}{}</div>"#,
                input(
                    "card_number",
                    w.card_number,
                    "",
                    errors,
                    r#"inputmode="numeric" autocomplete="off" data-volatile"#,
                    hint,
                ),
                input(
                    "expiry",
                    w.expiry,
                    &val(values, &c["payment"]["expiry"], "expiry"),
                    errors,
                    r#"placeholder="MM/YY""#,
                    None,
                ),
                input(
                    "holder",
                    w.holder,
                    &val(values, &c["payment"]["holder"], "holder"),
                    errors,
                    r#"autocomplete="cc-name""#,
                    None,
                ),
                input(
                    "otp",
                    w.otp,
                    "",
                    errors,
                    r#"inputmode="numeric" autocomplete="one-time-code" data-volatile"#,
                    hint,
                ),
                button("NEXT", w.to_review, "primary"),
                button("USE_BANK", w.use_bank, ""),
                button("BACK", w.back, ""),
            )
        }
        Page::Bank => {
            let iban = val(values, &Value::Null, "iban");
            let again = errors.is_empty() && iban.is_empty() && c["payment"]["method"] == "bank";
            let again_hint = if again {
                format!(
                    r#"<p class="hint notice" id="iban-hint">{}</p>"#,
                    esc(w.iban_again)
                )
            } else {
                String::new()
            };
            format!(
                r#"{again_hint}{}{}<div class=actions>{}{}{}</div>"#,
                input(
                    "iban",
                    w.iban,
                    &iban,
                    errors,
                    r#"autocomplete="off""#,
                    again.then_some("iban-hint"),
                ),
                input(
                    "account_holder",
                    w.account_holder,
                    &val(values, &c["payment"]["holder"], "account_holder"),
                    errors,
                    r#"autocomplete="name""#,
                    None,
                ),
                button("NEXT", w.to_review, "primary"),
                button("USE_CARD", w.use_card, ""),
                button("BACK", w.back, ""),
            )
        }
        Page::Review => format!(
            r#"{}<p class="hint">{} {}</p><div class=actions>{}{}{}{}</div>"#,
            summary(o, v),
            esc(&fill(
                w.confirm_charges,
                &[&money(o.lang, &c["plan"]["amount_cents"])]
            )),
            esc(w.last_change),
            button("CONFIRM", w.confirm, "primary"),
            button("BACK", w.change_payment, ""),
            button("EDIT_PLAN", w.change_plan, ""),
            button("EDIT_PERSONAL", w.change_personal, ""),
        ),
        Page::Sending => format!("{}{}", status(w.sending), details(w, v)),
        Page::Failed => format!(
            r#"{}{}<div class=actions>{}{}</div>"#,
            status(w.failed),
            details(w, v),
            button("RETRY", w.retry, "primary"),
            button("CANCEL", w.cancel, ""),
        ),
        Page::Abandoned => status(w.abandoned),
        Page::Uncertain => format!("{}{}", status(w.uncertain), details(w, v)),
        Page::Unresolvable => format!(
            r#"<p class="status" id="status"><strong>{}</strong></p>{}<div class=actions>{}</div>"#,
            esc(w.unresolvable),
            details(w, v),
            button("RECHECK", w.recheck, "primary"),
        ),
        Page::Completed => format!(
            r#"{}<p class="receipt">{}: <strong id="receipt">{}</strong></p>{}<h2>{}</h2><p>{}</p></form><form method="post" action="/new" id="new-form">{}<button type="submit" id="start-over">{}</button>"#,
            status(&fill(
                w.paid,
                &[&money(o.lang, &c["receipt"]["amount_cents"])]
            )),
            esc(w.receipt),
            esc(c["receipt"]["id"].as_str().unwrap_or("")),
            summary(o, v),
            esc(w.next_steps),
            esc(w.next_steps_text),
            hidden(v),
            esc(w.start_over),
        ),
    };
    format!("{title}{open}{body}</form>")
}

fn summary(o: Opts, v: &View) -> String {
    let w = o.lang.words();
    let c = &v.context;
    let last4 = c["payment"]["last4"].as_str().unwrap_or("");
    let pay = match c["payment"]["method"].as_str() {
        Some("card") => fill(w.card_ending, &[last4]),
        Some("bank") => fill(w.bank_ending, &[last4]),
        _ => w.none.to_string(),
    };
    let plan = PLANS
        .iter()
        .find(|p| Some(p.0) == c["plan"]["id"].as_str())
        .map_or("", |p| p.1);
    let billing = match c["plan"]["billing"].as_str() {
        Some("yearly") => w.yearly,
        _ => w.monthly,
    };
    format!(
        r#"<dl class="summary"><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd>{}</dd><dt>{}</dt><dd>{} ({}), {}</dd><dt>{}</dt><dd id="pay">{}</dd></dl>"#,
        esc(w.sum_name),
        esc(c["personal"]["name"].as_str().unwrap_or("")),
        esc(w.sum_email),
        esc(c["personal"]["email"].as_str().unwrap_or("")),
        esc(w.sum_plan),
        esc(plan),
        esc(billing),
        money(o.lang, &c["plan"]["amount_cents"]),
        esc(w.sum_payment),
        esc(&pay),
    )
}

/// The statechart as `turno chart svg` draws it (turno-chart's renderer,
/// the inspector's too): nested states, every transition an arrow, the
/// active states highlighted; the script re-marks the active ones as the
/// session moves and marks the transition just taken. The layout is made
/// once, on the first page that shows the chart.
fn diagram(v: &View) -> String {
    use turno_chart::svg::{layout, Diagram, Highlight, Layout};
    static LAYOUT: std::sync::OnceLock<Result<Layout, String>> = std::sync::OnceLock::new();
    let picture = match LAYOUT.get_or_init(|| {
        layout(&Diagram::from_machine(&crate::machine::signup())).map_err(|e| e.to_string())
    }) {
        Ok(l) => l.svg(&Highlight {
            active: v.active.iter().cloned().collect(),
            taken: None,
        }),
        Err(e) => format!(
            r#"<p class="legend">The chart cannot be drawn: {}</p>"#,
            esc(e)
        ),
    };
    let taken: Vec<String> = v.taken.iter().map(u32::to_string).collect();
    format!(
        r#"<div class="chart" id="chart" data-taken="{}">{picture}</div><div class="legend" id="active">active: {}</div>"#,
        taken.join(" "),
        esc(&v.active.join(", "))
    )
}

fn fault_panel(v: &View, cluster: bool) -> String {
    let f = &v.faults;
    // The three-node demo has its own node faults (see `nodes_panel`).
    let crash = if cluster {
        String::new()
    } else {
        format!(
            r#"<div class="check"><input type="checkbox" name="crash" id="crash"{}><label for="crash">crash the wizard server mid-submit</label></div>"#,
            if f.crash { " checked" } else { "" }
        )
    };
    let sel = |k: &str| if f.charge == k { " selected" } else { "" };
    format!(
        r#"<section class="workings" lang="en" aria-labelledby="faults-title"><h2 id="faults-title">Fault panel</h2><form method="post" action="/faults" id="fault-form">{}<div class="field"><label for="latency_ms">Gateway latency (ms)</label><input name="latency_ms" id="latency_ms" value="{}" inputmode="numeric"></div><div class="field"><label for="fault-charge">Next charge</label><select name="charge" id="fault-charge"><option value=""{}>answers normally</option><option value="timeout"{}>times out after charging</option><option value="lost"{}>charges, reply lost</option><option value="error"{}>server error (no charge)</option></select></div><div class="check"><input type="checkbox" name="lookup_down" id="lookup_down"{}><label for="lookup_down">lookups by key fail</label></div>{crash}<button type="submit" id="arm">Arm faults</button></form></section>"#,
        hidden(v),
        f.latency_ms,
        sel(""),
        sel("timeout"),
        sel("lost"),
        sel("error"),
        if f.lookup_down { " checked" } else { "" },
    )
}

/// Which node served a page and which node owns its session (the
/// three-node demo, [`crate::cluster`]).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
pub(crate) struct Nodes<'a> {
    /// The node that made this page.
    pub(crate) served: &'a str,
    /// The node whose shard lease covers the session (none: the lease ran
    /// out and no node has taken the shard over yet).
    pub(crate) owner: Option<&'a str>,
}

/// The line naming the serving and the owning node, always shown.
fn nodes_line(n: &Nodes<'_>) -> String {
    let owner = n.owner.unwrap_or("none yet (its lease ran out)");
    format!(
        r#"<section class="nodes" lang="en" aria-labelledby="nodes-title"><h2 id="nodes-title">Nodes</h2><p>This page was served by node <strong id="served-by">{}</strong>. The session is owned by node <strong id="owner">{}</strong>.</p></section>"#,
        esc(n.served),
        esc(owner),
    )
}

/// The three-node demo's node faults: each acts on the session's owner
/// node at once (the supervisor sends the signal).
fn nodes_panel(v: &View) -> String {
    format!(
        r#"<section class="workings" lang="en" aria-labelledby="node-faults-title"><h2 id="node-faults-title">Node faults</h2><form method="post" action="/node-fault" id="node-fault-form">{}<button type="submit" name="action" value="kill" id="kill-owner">Kill the owner node</button> <button type="submit" name="action" value="pause" id="pause-owner">Pause the owner node</button> <button type="submit" name="action" value="partition" id="partition-owner">Partition the owner node</button></form></section>"#,
        hidden(v),
    )
}

fn drafts(o: Opts, v: &View) -> String {
    let w = o.lang.words();
    format!(
        r#"<section aria-labelledby="draft-title"><h2 id="draft-title">{}</h2><p>{}</p><p class="link"><a id="draft-link" href="/d/{link}">/d/{link}</a></p><form method="post" action="/forget" id="forget-form">{}<button type="submit" id="forget">{}</button></form></section>"#,
        esc(w.draft),
        esc(w.draft_text),
        hidden(v),
        esc(w.forget),
        link = esc(&v.link),
    )
}

/// The switch that shows or hides the demo's workings.
fn workings_switch(o: Opts, here: &str) -> String {
    let w = o.lang.words();
    let (label, value) = if o.workings {
        (w.workings_hide, "off")
    } else {
        (w.workings_show, "on")
    };
    format!(
        r#"<form method="post" action="/workings" id="workings-form"><input type="hidden" name="back" value="{}"><input type="hidden" name="show" value="{value}"><button type="submit" id="workings" aria-pressed="{}">{}</button></form>"#,
        esc(here),
        o.workings,
        esc(label),
    )
}

/// A step's page. `notice`: a sentence above the form (why the user is
/// here and not where they went, a refused form).
pub fn step(
    o: Opts,
    v: &View,
    errors: &Errors,
    values: &BTreeMap<String, String>,
    notice: Option<&str>,
) -> String {
    step_on(o, v, errors, values, notice, None)
}

/// [`step`] on a node of the three-node demo (`nodes`): the page says
/// which node served it and which owns the session, and its fault panel
/// has the node faults; drafts and their links stay with the single-node
/// wizard.
pub(crate) fn step_on(
    o: Opts,
    v: &View,
    errors: &Errors,
    values: &BTreeMap<String, String>,
    notice: Option<&str>,
    nodes: Option<&Nodes<'_>>,
) -> String {
    let w = o.lang.words();
    let Some(row) = Step::named(&v.step) else {
        return refusal(o, w.refused_title, w.not_found, None);
    };
    let here = row.url();
    let notice = notice
        .map(|n| {
            format!(
                r#"<p class="notice" id="notice" role="alert">{}</p>"#,
                esc(n)
            )
        })
        .unwrap_or_default();
    let busy = if row.unresolved {
        r#" data-busy="""#
    } else {
        ""
    };
    let attrs = format!(
        r#" data-sid="{}" data-step="{}" data-rev="{}" data-url="{}"{busy}"#,
        esc(&v.sid),
        esc(&v.step),
        v.rev,
        esc(&here),
    );
    let mut aside = String::new();
    match nodes {
        Some(n) => aside.push_str(&nodes_line(n)),
        None if !row.finished => aside.push_str(&drafts(o, v)),
        None => {}
    }
    if o.workings {
        aside.push_str(&format!(
            r#"<section class="workings" aria-labelledby="chart-title"><h2 id="chart-title">{}</h2>{}</section>"#,
            esc(w.statechart),
            diagram(v)
        ));
        if !row.finished {
            aside.push_str(&fault_panel(v, nodes.is_some()));
            if nodes.is_some() {
                aside.push_str(&nodes_panel(v));
            }
        }
    }
    aside.push_str(&workings_switch(o, &here));
    format!(
        r#"{}{}<main><section class="card" id="step">{notice}{}</section></main><aside>{aside}</aside><div id="banner" role="alert" hidden></div><script src="/assets/app.js"></script></body></html>"#,
        head(o, o.lang.title(row.page), &attrs, &here),
        crumbs(o, row),
        form_for(o, v, row, errors, values),
    )
}

/// A page saying why something was not done, and where the signup is.
pub fn refusal(o: Opts, title: &str, message: &str, v: Option<&View>) -> String {
    let w = o.lang.words();
    let at = v.and_then(|v| Step::named(&v.step));
    let (where_, home) = match at {
        Some(row) => (
            format!(
                r#"<p id="at">{}</p>"#,
                esc(&fill(w.your_step, &[o.lang.title(row.page)]))
            ),
            row.url(),
        ),
        None => (String::new(), "/".to_string()),
    };
    let retry = if message == w.restarting {
        r#" data-retry="""#
    } else {
        ""
    };
    format!(
        r#"{}<main><section class="card refusal" id="step"><h1 id="title">{}</h1><p id="refusal">{}</p>{where_}<p><a href="{}" id="home">{}</a></p></section></main><div id="banner" role="alert" hidden></div><script src="/assets/app.js"></script></body></html>"#,
        head(o, title, retry, "/"),
        esc(title),
        esc(message),
        esc(&home),
        esc(w.go_to_signup),
    )
}

/// After "forget me".
pub fn forgotten(o: Opts, sid: &str) -> String {
    let w = o.lang.words();
    format!(
        r#"{}<main><section class="card" id="step"><h1 id="title">{}</h1><p id="forgotten">{}</p><p><a href="/" id="home">{}</a></p></section></main><script src="/assets/app.js"></script></body></html>"#,
        head(
            o,
            w.forgotten_title,
            &format!(r#" data-forget="{}""#, esc(sid)),
            "/"
        ),
        esc(w.forgotten_title),
        esc(w.forgotten),
        esc(w.start_over),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::STEPS;

    fn view(row: &Step) -> View {
        View {
            sid: "a".repeat(32),
            rev: 3,
            step: row.name.into(),
            url: row.url(),
            value: Value::Null,
            active: Vec::new(),
            taken: Vec::new(),
            status: "active",
            context: json!({
                "personal": {"name": "Ada", "email": "ada@example.org"},
                "plan": {"id": "pro", "billing": "monthly", "amount_cents": 2900},
                "payment": {"method": "card", "last4": "4242", "expiry": "12/39", "holder": "Ada"},
                "key": "f".repeat(32),
                "attempts": 1,
                "receipt": {"id": "ch_1", "amount_cents": 2900},
                "error": {"message": "injected server error: nothing was charged"},
            }),
            key: Some("f".repeat(32)),
            faults: Default::default(),
            link: "b".repeat(32),
        }
    }

    /// The text a person reads: the tags out, and the folded details.
    fn visible(html: &str) -> String {
        let mut html = html.to_string();
        while let (Some(a), Some(b)) = (html.find("<details"), html.find("</details>")) {
            html.replace_range(a..b + "</details>".len(), "");
        }
        let (mut out, mut tag) = (String::new(), false);
        for c in html.chars() {
            match c {
                '<' => {
                    tag = true;
                    out.push(' ');
                }
                '>' => tag = false,
                c if !tag => out.push(c),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn every_page_in_both_languages_says_it_in_plain_words_once() {
        for row in STEPS {
            for lang in [Lang::En, Lang::Es] {
                let o = Opts {
                    lang,
                    workings: false,
                };
                let html = step(o, &view(row), &Errors::new(), &BTreeMap::new(), None);
                assert!(html.contains(&format!(r#"<html lang="{}">"#, lang.code())));
                let title = lang.title(row.page);
                assert!(
                    html.contains(&format!(r#"<h1 id="title">{}</h1>"#, esc(title))),
                    "{} in {lang:?}",
                    row.name
                );
                let text = visible(&html);
                for state in STEPS.iter().map(|r| r.state).filter(|s| s.contains('.')) {
                    assert!(!text.contains(state), "{state} on {} in {lang:?}", row.name);
                }
                assert!(!text.contains(&"f".repeat(32)), "the key on {}", row.name);
                assert!(
                    !text.contains("injected"),
                    "the gateway's words on {}",
                    row.name
                );
                let sentences: Vec<&str> = text
                    .split(['.', '!', '?'])
                    .map(str::trim)
                    .filter(|s| s.len() > 20)
                    .collect();
                for (i, s) in sentences.iter().enumerate() {
                    assert!(
                        !sentences[..i].contains(s),
                        "{s:?} twice on {} in {lang:?}",
                        row.name
                    );
                }
                // The finished pages have no draft tools; the others do.
                assert_eq!(
                    html.contains("id=\"forget\""),
                    !row.finished,
                    "{}",
                    row.name
                );
                assert!(
                    !html.contains("fault-form"),
                    "no fault panel unless switched on"
                );
            }
        }
    }

    #[test]
    fn amounts_are_written_as_each_language_writes_them() {
        assert_eq!(money(Lang::En, &json!(2900)), "€29.00");
        assert_eq!(money(Lang::Es, &json!(7905)), "79,05\u{a0}€");
        let o = Opts {
            lang: Lang::Es,
            workings: false,
        };
        let html = step(
            o,
            &view(Step::of(Page::Review)),
            &Errors::new(),
            &BTreeMap::new(),
            None,
        );
        assert!(
            html.contains("Al confirmar, cobramos 29,00\u{a0}€."),
            "{html}"
        );
    }

    #[test]
    fn the_switch_shows_the_workings_and_the_finished_page_has_no_fault_panel() {
        let o = Opts {
            lang: Lang::En,
            workings: true,
        };
        let review = step(
            o,
            &view(Step::of(Page::Review)),
            &Errors::new(),
            &BTreeMap::new(),
            None,
        );
        assert!(review.contains("fault-form") && review.contains(r#"id="chart""#));
        let done = step(
            o,
            &view(Step::of(Page::Completed)),
            &Errors::new(),
            &BTreeMap::new(),
            None,
        );
        assert!(done.contains(r#"id="chart""#) && !done.contains("fault-form"));
    }

    #[test]
    fn the_diagram_has_an_arrow_for_every_transition_and_marks_the_active_states() {
        let m = crate::machine::signup();
        let mut v = view(&STEPS[0]);
        v.active = vec!["signup".into(), "signup.personal".into()];
        let d = diagram(&v);
        let arrows = d.matches("data-transition=\"").count();
        assert_eq!(arrows, m.transitions().len());
        assert!(arrows > 10, "{arrows}");
        let states = d.matches("data-state=\"").count();
        assert_eq!(states, m.states().len());
        let active: Vec<&str> = d
            .match_indices("class=\"state ")
            .filter(|(i, _)| {
                d[*i..]
                    .split('>')
                    .next()
                    .unwrap_or("")
                    .contains(" active\"")
            })
            .map(|(i, _)| {
                let rest = &d[i..];
                let at = rest.find("data-state=\"").unwrap() + 12;
                &rest[at..at + rest[at..].find('"').unwrap()]
            })
            .collect();
        assert_eq!(active, ["signup", "signup.personal"]);
    }
}
