//! Export to a Mermaid `stateDiagram-v2`.
//!
//! Compound states become composite states, parallel regions are separated
//! by `--`, initial states get `[*] -->` and final states `--> [*]`,
//! history states are drawn as `H` (shallow) or `H*` (deep). Transition
//! labels carry the event (or `after 100ms`, `always`, `done`, `error`),
//! the guard in brackets and the actions after a slash.
//!
//! ```
//! use turno_chart::{load_json, mermaid::to_mermaid, stdlib};
//! let m = load_json(r#"{"id": "m", "initial": "a", "states": {
//!   "a": {"on": {"GO": {"target": "b", "guard": "pass"}}},
//!   "b": {"after": {"100": "c"}}, "c": {"type": "final"}}}"#, &stdlib::implementations()).unwrap();
//! let d = to_mermaid(&m);
//! assert!(d.starts_with("stateDiagram-v2\n"));
//! assert!(d.contains("m_a --> m_b : GO [pass]"));
//! assert!(d.contains("m_b --> m_c : after 100ms"));
//! assert!(d.contains("m_c --> [*]"));
//! ```

use std::fmt::Write;

use crate::machine::{Guard, Machine, StateIdx, StateKind, Transition};

/// The machine as a Mermaid `stateDiagram-v2`.
pub fn to_mermaid<C>(m: &Machine<C>) -> String {
    let mut out = String::from("stateDiagram-v2\n");
    body(m, 0, 1, &mut out);
    out
}

/// A Mermaid identifier for a state id.
fn ident(id: &str) -> String {
    let mut s: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() {
        s.insert(0, 's');
    }
    s
}

fn quote(label: &str) -> String {
    label.replace('"', "'")
}

/// A guard as the diagrams write it: `name`, `a and b`, `(a or b)`,
/// `not a`, `in #id`.
pub(crate) fn guard_label<C>(g: &Guard<C>) -> String {
    match g {
        Guard::Named { name, .. } => name.to_string(),
        Guard::And(gs) => gs.iter().map(guard_label).collect::<Vec<_>>().join(" and "),
        Guard::Or(gs) => format!(
            "({})",
            gs.iter().map(guard_label).collect::<Vec<_>>().join(" or ")
        ),
        Guard::Not(g) => format!("not {}", guard_label(g)),
        Guard::StateIn(_, label) => format!("in {label}"),
        Guard::Try { name, .. } => name.to_string(),
    }
}

fn label<C>(m: &Machine<C>, t: &Transition<C>) -> String {
    quote(&transition_label(m, t)).replace(':', "\\:")
}

/// A transition's label as text: the event (or `after 100ms`, `always`,
/// `done`, `error`), the guard in brackets, the actions after a slash. The
/// SVG diagrams label their arrows with it too.
pub(crate) fn transition_label<C>(m: &Machine<C>, t: &Transition<C>) -> String {
    let names: Vec<&str> = t.actions.iter().map(|a| &*a.name).collect();
    let guard = t.guard.as_ref().map(guard_label);
    arrow_label(
        &m.state(t.source).id,
        t.event.as_deref(),
        t.delay_label.as_deref(),
        guard.as_deref(),
        &names,
    )
}

/// A transition's label from its parts as a definition (or a trace's
/// `chart_define`) names them: the source state's id, the event (`None`
/// when eventless), an `after` delay as written (milliseconds or a named
/// delay), the guard's label as the chart's own diagrams write it, and
/// the action names.
/// `xstate.done.state.<source>` reads `done`, another state's or an
/// actor's `done <id>`, an actor's error `error <id>`.
///
/// ```
/// use turno_chart::mermaid::arrow_label;
/// assert_eq!(arrow_label("m.a", Some("GO"), None, Some("ok"), &["log"]), "GO [ok] / log");
/// assert_eq!(arrow_label("m.a", Some("xstate.after.100.m.a"), Some("100"), None, &[]), "after 100ms");
/// assert_eq!(arrow_label("m.a", None, None, None, &[]), "always");
/// assert_eq!(arrow_label("m.a", Some("xstate.done.state.m.a"), None, None, &[]), "done");
/// ```
pub fn arrow_label(
    source: &str,
    event: Option<&str>,
    delay: Option<&str>,
    guard: Option<&str>,
    actions: &[&str],
) -> String {
    let mut l = match (event, delay) {
        (_, Some(d)) if d.bytes().all(|b| b.is_ascii_digit()) => format!("after {d}ms"),
        (_, Some(d)) => format!("after {d}"),
        (None, _) => "always".to_string(),
        (Some(e), _) => {
            if let Some(id) = e.strip_prefix("xstate.done.state.") {
                if id == source {
                    "done".to_string()
                } else {
                    format!("done {id}")
                }
            } else if let Some(id) = e.strip_prefix("xstate.done.actor.") {
                format!("done {id}")
            } else if let Some(id) = e.strip_prefix("xstate.error.actor.") {
                format!("error {id}")
            } else {
                e.to_string()
            }
        }
    };
    if let Some(g) = guard {
        let _ = write!(l, " [{g}]");
    }
    if !actions.is_empty() {
        let _ = write!(l, " / {}", actions.join(", "));
    }
    l
}

fn body<C>(m: &Machine<C>, node: StateIdx, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let n = m.state(node);
    if let Some(i) = n.initial {
        let _ = writeln!(out, "{pad}[*] --> {}", ident(&m.state(i).id));
    }
    let regions = n.kind == StateKind::Parallel;
    let mut first = true;
    for &c in &n.children {
        let child = m.state(c);
        let id = ident(&child.id);
        if regions && !child.is_history() {
            if !first {
                let _ = writeln!(out, "{pad}--");
            }
            first = false;
        }
        match child.kind {
            StateKind::History { deep } => {
                let _ = writeln!(
                    out,
                    "{pad}state \"{}\" as {id}",
                    if deep { "H*" } else { "H" }
                );
            }
            StateKind::Compound | StateKind::Parallel => {
                let _ = writeln!(out, "{pad}state \"{}\" as {id} {{", quote(&child.key));
                body(m, c, depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
            StateKind::Atomic | StateKind::Final => {
                let _ = writeln!(out, "{pad}state \"{}\" as {id}", quote(&child.key));
            }
        }
        if child.kind == StateKind::Final {
            let _ = writeln!(out, "{pad}{id} --> [*]");
        }
        if child.is_history() {
            for &t in &child.history_default {
                let _ = writeln!(out, "{pad}{id} --> {}", ident(&m.state(t).id));
            }
        }
    }
    // Transitions of the children, drawn where the children are.
    for &c in &n.children {
        let child = m.state(c);
        let src = ident(&child.id);
        let all = child
            .on
            .iter()
            .flat_map(|(_, ts)| ts.iter())
            .chain(child.always.iter());
        for &t in all {
            let tr = &m.transitions()[t as usize];
            let l = label(m, tr);
            if tr.targets.is_empty() {
                let _ = writeln!(out, "{pad}{src} --> {src} : {l}");
            }
            for &target in &tr.targets {
                let _ = writeln!(out, "{pad}{src} --> {} : {l}", ident(&m.state(target).id));
            }
        }
    }
    if node == 0 {
        let root = m.state(0);
        let all = root
            .on
            .iter()
            .flat_map(|(_, ts)| ts.iter())
            .chain(root.always.iter());
        for &t in all {
            let tr = &m.transitions()[t as usize];
            let l = label(m, tr);
            for &target in &tr.targets {
                let _ = writeln!(out, "{pad}[*] --> {} : {l}", ident(&m.state(target).id));
            }
        }
    }
}
