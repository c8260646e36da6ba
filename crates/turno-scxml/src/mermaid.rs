//! Mermaid `stateDiagram-v2` for a document: composite states for compound
//! ones, `--` between the regions of a parallel state, `[*]` for initial
//! and final states, transitions labelled `event [cond]`.
//!
//! ```
//! let doc = turno_scxml::load_str(
//!     "<scxml initial='a'><state id='a'><transition event='go' target='b'/></state><final id='b'/></scxml>",
//!     None,
//! ).unwrap();
//! let m = turno_scxml::mermaid::to_mermaid(&doc);
//! assert!(m.starts_with("stateDiagram-v2\n"));
//! assert!(m.contains("a --> b : go"));
//! assert!(m.contains("b --> [*]"));
//! ```

use std::fmt::Write;

use crate::model::{Document, HistoryKind, StateId, StateKind, ROOT};

/// The diagram text.
pub fn to_mermaid(doc: &Document) -> String {
    let mut out = String::from("stateDiagram-v2\n");
    let mut edges = String::new();
    body(doc, ROOT, 1, &mut out, &mut edges);
    out.push_str(&edges);
    out
}

/// A Mermaid-safe name for a state (ids may hold `.`, `-` and the like).
fn name(doc: &Document, s: StateId) -> String {
    let id = &doc.states[s].id;
    if id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        id.clone()
    } else {
        format!(
            "s{s}_{}",
            id.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect::<String>()
        )
    }
}

fn label(text: &str) -> String {
    text.replace(['"', '\n'], " ").replace(':', "#58;")
}

fn body(doc: &Document, s: StateId, depth: usize, out: &mut String, edges: &mut String) {
    let pad = "  ".repeat(depth);
    let st = &doc.states[s];
    if let Some(t) = st.initial {
        for &target in &doc.transitions[t].targets {
            let _ = writeln!(out, "{pad}[*] --> {}", name(doc, target));
        }
    }
    let regions = doc.is_parallel(s);
    for (i, &c) in st.children.iter().chain(st.history.iter()).enumerate() {
        if regions && i > 0 && i < st.children.len() {
            let _ = writeln!(out, "{pad}--");
        }
        state(doc, c, depth, out, edges);
    }
}

fn state(doc: &Document, s: StateId, depth: usize, out: &mut String, edges: &mut String) {
    let pad = "  ".repeat(depth);
    let st = &doc.states[s];
    let n = name(doc, s);
    if n != st.id {
        let _ = writeln!(out, "{pad}state \"{}\" as {n}", label(&st.id));
    }
    match st.kind {
        StateKind::History(kind) => {
            let h = if kind == HistoryKind::Deep { "H*" } else { "H" };
            let _ = writeln!(out, "{pad}{n} : {h}");
            if let Some(t) = st.history_default {
                for &target in &doc.transitions[t].targets {
                    let _ = writeln!(edges, "  {n} --> {}", name(doc, target));
                }
            }
        }
        StateKind::Final => {
            let _ = writeln!(out, "{pad}{n} --> [*]");
        }
        _ if !st.children.is_empty() => {
            let _ = writeln!(out, "{pad}state {n} {{");
            body(doc, s, depth + 1, out, edges);
            let _ = writeln!(out, "{pad}}}");
        }
        _ => {
            let _ = writeln!(out, "{pad}{n}");
        }
    }
    for &t in &st.transitions {
        let tr = &doc.transitions[t];
        let mut text = tr.events.join(" ");
        if let Some(c) = &tr.cond {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&format!("[{c}]"));
        }
        let targets: Vec<StateId> = if tr.targets.is_empty() {
            vec![s]
        } else {
            tr.targets.clone()
        };
        for target in targets {
            if text.is_empty() {
                let _ = writeln!(edges, "  {n} --> {}", name(doc, target));
            } else {
                let _ = writeln!(edges, "  {n} --> {} : {}", name(doc, target), label(&text));
            }
        }
    }
}
