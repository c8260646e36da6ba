//! The wizard's pages, named in one table ([`STEPS`]) beside the chart.
//!
//! Each row ties a page ([`Page`], which the renderers match on) to the
//! chart state it shows, by the state's dotted path of keys. A page's step
//! name (the `step` of [`View`](crate::session::View), the forms' `step`
//! field), its URL and its place in the progress list all come from the
//! row, so no other file spells a step. [`check`] holds the table against
//! the chart when the machine is built: every atomic state of the chart
//! shows as exactly one page, and every row names a state the chart has;
//! a step renamed in `assets/signup.json` fails the build of the machine
//! (and its tests) instead of drifting apart from its page.

use serde_json::Value;
use turno_chart::{Machine, StateIdx};

/// A page of the wizard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Page {
    /// Name and email.
    Personal,
    /// The plan and its billing.
    Plan,
    /// Payment by card.
    Card,
    /// Payment from a bank account.
    Bank,
    /// Everything at a glance, before paying.
    Review,
    /// The charge is on its way.
    Sending,
    /// The gateway refused the payment.
    Failed,
    /// The user cancelled after a refusal.
    Abandoned,
    /// The outcome is being looked up.
    Uncertain,
    /// The outcome could not be found out.
    Unresolvable,
    /// Paid.
    Completed,
}

/// The stage of the signup a page belongs to (the progress list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// About you.
    You,
    /// The plan.
    Plan,
    /// The payment details.
    Payment,
    /// Review and pay.
    Review,
    /// Done.
    Done,
}

/// All stages, in order.
pub const STAGES: [Stage; 5] = [
    Stage::You,
    Stage::Plan,
    Stage::Payment,
    Stage::Review,
    Stage::Done,
];

/// One row of [`STEPS`].
#[derive(Debug)]
pub struct Step {
    /// The page.
    pub page: Page,
    /// The chart state it shows (dotted keys from the root); a compound
    /// state covers its descendants.
    pub state: &'static str,
    /// The step's name: what the pages, the API and the tests call it.
    pub name: &'static str,
    /// Where it belongs in the progress list.
    pub stage: Stage,
    /// The context key its form fills (the data its `NEXT` carries).
    pub saves: Option<&'static str>,
    /// A charge may be in flight or its outcome is being looked up: the
    /// page follows the session closely, and "forget me" waits.
    pub unresolved: bool,
    /// The signup is over here.
    pub finished: bool,
}

const fn row(page: Page, state: &'static str, name: &'static str, stage: Stage) -> Step {
    Step {
        page,
        state,
        name,
        stage,
        saves: None,
        unresolved: false,
        finished: false,
    }
}

/// The pages, in the order of the signup.
pub const STEPS: &[Step] = &[
    Step {
        saves: Some("personal"),
        ..row(Page::Personal, "personal", "personal", Stage::You)
    },
    Step {
        saves: Some("plan"),
        ..row(Page::Plan, "plan", "plan", Stage::Plan)
    },
    Step {
        saves: Some("payment"),
        ..row(Page::Card, "payment.card", "payment.card", Stage::Payment)
    },
    Step {
        saves: Some("payment"),
        ..row(Page::Bank, "payment.bank", "payment.bank", Stage::Payment)
    },
    row(Page::Review, "submit.review", "review", Stage::Review),
    Step {
        unresolved: true,
        ..row(
            Page::Sending,
            "submit.sending",
            "submit.sending",
            Stage::Review,
        )
    },
    row(
        Page::Failed,
        "submit.failed",
        "submit.failed",
        Stage::Review,
    ),
    Step {
        finished: true,
        ..row(
            Page::Abandoned,
            "submit.abandoned",
            "submit.abandoned",
            Stage::Done,
        )
    },
    Step {
        unresolved: true,
        ..row(
            Page::Uncertain,
            "submit.uncertain",
            "submit.uncertain",
            Stage::Review,
        )
    },
    row(
        Page::Unresolvable,
        "submit.unresolvable",
        "submit.unresolvable",
        Stage::Review,
    ),
    Step {
        finished: true,
        ..row(
            Page::Completed,
            "submit.completed",
            "completed",
            Stage::Done,
        )
    },
];

/// The events a page may take by a plain navigation (the browser's Back
/// and Forward, a reload of another step's URL): those that send nothing
/// anywhere. A charge, a retry or a cancel never happens on a `GET`.
pub const MOVES: &[&str] = &[
    "BACK",
    "NEXT",
    "USE_BANK",
    "USE_CARD",
    "EDIT_PLAN",
    "EDIT_PERSONAL",
];

impl Step {
    /// The row of a step name.
    pub fn named(name: &str) -> Option<&'static Step> {
        STEPS.iter().find(|s| s.name == name)
    }

    /// The row of a page.
    pub fn of(page: Page) -> &'static Step {
        STEPS
            .iter()
            .find(|s| s.page == page)
            .expect("every page has a row")
    }

    /// The row showing the chart state at `path` (dotted keys).
    pub fn at_path(path: &str) -> Option<&'static Step> {
        STEPS.iter().find(|s| {
            path == s.state
                || path
                    .strip_prefix(s.state)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }

    /// The page's URL: the step name with its dots as slashes
    /// (`/payment/card`).
    pub fn url(&self) -> String {
        format!("/{}", self.name.replace('.', "/"))
    }
}

/// The dotted path of keys from the root to `s` (`payment.card`).
pub fn path(m: &Machine<Value>, s: StateIdx) -> String {
    let mut keys = Vec::new();
    let mut at = Some(s);
    while let Some(i) = at.filter(|&i| i != 0) {
        keys.push(&*m.state(i).key);
        at = m.state(i).parent;
    }
    keys.reverse();
    keys.join(".")
}

/// Holds [`STEPS`] against the chart (see the [module docs](self)).
pub fn check(m: &Machine<Value>) -> Result<(), String> {
    let paths: Vec<(String, bool)> = (1..m.states().len() as StateIdx)
        .map(|s| (path(m, s), m.state(s).is_atomic()))
        .collect();
    for row in STEPS {
        if !paths.iter().any(|(p, _)| p == row.state) {
            return Err(format!(
                "the step {:?} shows the state {:?}, which the chart does not have",
                row.name, row.state
            ));
        }
    }
    for (p, atomic) in &paths {
        let shown = STEPS
            .iter()
            .filter(|s| {
                p == s.state
                    || p.strip_prefix(s.state)
                        .is_some_and(|rest| rest.starts_with('.'))
            })
            .count();
        if *atomic && shown != 1 {
            return Err(format!(
                "the chart's state {p:?} shows as {shown} pages (one row of steps::STEPS each)"
            ));
        }
    }
    Ok(())
}
