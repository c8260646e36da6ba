//! SCXML export of turno-chart machines (feature `chart`): an XState v5
//! JSON machine, as turno-chart compiled it, written as an SCXML document
//! on the ECMAScript data model.
//!
//! | turno-chart | SCXML |
//! |---|---|
//! | states, ids, kinds, `initial` | `<state>`/`<parallel>`/`<final>`/`<history>` with the same ids; `initial`, or `<initial>` when the initial transition has actions |
//! | `on` (in XState's priority order), `always` | `<transition event>`, `<transition>` without event |
//! | `reenter: false` / `true` | `type="internal"` / external |
//! | `after` | `<send delay id>` on entry, `<cancel>` on exit, and the transition on its event |
//! | `xstate.done.state.<id>` | `done.state.<id>` |
//! | `context` | one variable `context` |
//! | guards `and`/`or`/`not`/`stateIn` | `&&`, `\|\|`, `!`, `In()` |
//! | the standard implementations ([`turno_chart::stdlib`]) | their ECMAScript equivalents on `context` and `_event.data` |
//!
//! A machine is rejected with [`ExportError`] when it uses what SCXML
//! cannot say the same way: other named implementations, invocations and
//! spawned actors, transitions on the root (SCXML's `<scxml>` has none),
//! computed outputs. Where the semantics of the two differ for the same
//! structure (SCXML descriptors are prefixes, XState's are exact;
//! an XState self-transition without `reenter` exits nothing, an SCXML one
//! is external), the document says what SCXML says: see
//! `docs/conformance.md`.

use std::fmt::Write;

use serde_json::Value;
use turno_chart::machine::{ActionDef, Delay, Guard, StateNode, ValueExpr};
use turno_chart::{Machine, StateKind};

/// Why a machine has no SCXML form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state {state:?}: {what} has no SCXML equivalent")]
pub struct ExportError {
    /// The state where the construct is.
    pub state: String,
    /// What it is.
    pub what: String,
}

const XSTATE_DONE_STATE: &str = "xstate.done.state.";
const XSTATE_AFTER: &str = "xstate.after.";

fn attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            c => out.push(c),
        }
    }
    out
}

/// A JSON value as an ECMAScript expression (JSON is one).
fn js(v: &Value) -> String {
    v.to_string()
}

fn js_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// Is the root written as a state inside `<scxml>` (with the root's SCXML
/// id)? When it is parallel, or has transitions, entry or exit actions.
pub fn root_is_wrapped(m: &Machine<Value>) -> bool {
    let root = m.state(0);
    root.kind == StateKind::Parallel
        || !root.on.is_empty()
        || !root.always.is_empty()
        || !root.entry.is_empty()
        || !root.exit.is_empty()
        || !root.after.is_empty()
}

struct Writer<'m> {
    m: &'m Machine<Value>,
    ids: Vec<String>,
    out: String,
}

fn is_plain_name(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The SCXML id of every state of `m`, by index. XState ids are paths
/// (`machine.a.b`), and in SCXML a dot in an id would make the descriptor
/// `done.state.machine.a` also match `done.state.machine.a.b`; so a state
/// keeps its XState id when that is a plain name (letters, digits, `_`,
/// `-`), else takes its key when that is plain and unique in the machine,
/// else `s<index>_<key>`.
pub fn scxml_ids(m: &Machine<Value>) -> Vec<String> {
    let states = m.states();
    let mut key_count = std::collections::HashMap::new();
    for n in states {
        *key_count.entry(&*n.key).or_insert(0usize) += 1;
    }
    let mut taken = std::collections::HashSet::new();
    let mut ids = Vec::with_capacity(states.len());
    for (i, n) in states.iter().enumerate() {
        let candidate = if is_plain_name(&n.id) {
            n.id.to_string()
        } else if is_plain_name(&n.key) && key_count[&*n.key] == 1 {
            n.key.to_string()
        } else {
            let key: String = n
                .key
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            format!("s{i}_{key}")
        };
        let mut id = candidate.clone();
        let mut k = 1;
        while !taken.insert(id.clone()) {
            k += 1;
            id = format!("{candidate}_{k}");
        }
        ids.push(id);
    }
    ids
}

/// XState's priority among one state's descriptors: exact names first, then
/// `prefix.*` wildcards, longest prefix first, then `*`.
fn priority(descriptor: &str) -> (u8, isize) {
    if descriptor == "*" {
        (2, 0)
    } else if let Some(prefix) = descriptor.strip_suffix(".*") {
        (1, -(prefix.len() as isize))
    } else {
        (0, 0)
    }
}

/// The machine as an SCXML document.
///
/// ```
/// let m = turno_chart::load_json(
///     r#"{"id": "light", "initial": "green", "states": {
///          "green": {"on": {"NEXT": "yellow"}}, "yellow": {"on": {"NEXT": "green"}}}}"#,
///     &turno_chart::stdlib::implementations(),
/// ).unwrap();
/// let text = turno_scxml::export::to_scxml(&m).unwrap();
/// let doc = turno_scxml::load_str(&text, None).unwrap();
/// assert_eq!(doc.states.len(), 3);
/// ```
pub fn to_scxml(m: &Machine<Value>) -> Result<String, ExportError> {
    let mut w = Writer {
        m,
        ids: scxml_ids(m),
        out: String::new(),
    };
    w.document()?;
    Ok(w.out)
}

impl<'m> Writer<'m> {
    fn node(&self, s: u16) -> &'m StateNode<Value> {
        self.m.state(s)
    }

    fn id(&self, s: u16) -> &str {
        &self.ids[s as usize]
    }

    fn unsupported(&self, s: u16, what: impl Into<String>) -> ExportError {
        ExportError {
            state: self.node(s).id.to_string(),
            what: what.into(),
        }
    }

    fn document(&mut self) -> Result<(), ExportError> {
        let root = self.node(0);
        // `<scxml>` is a compound state without transitions, actions or
        // invocations; any other root is written as one state inside it
        // (see [`root_is_wrapped`]).
        let wrapped = root_is_wrapped(self.m);
        let _ = write!(
            self.out,
            "<scxml xmlns=\"http://www.w3.org/2005/07/scxml\" version=\"1.0\" datamodel=\"ecmascript\" name=\"{}\"",
            attr(self.m.id())
        );
        let initial = if wrapped { Some(0) } else { root.initial };
        if let Some(i) = initial {
            let _ = write!(self.out, " initial=\"{}\"", attr(self.id(i)));
        }
        self.out.push_str(">\n");
        let _ = writeln!(
            self.out,
            "  <datamodel><data id=\"context\" expr=\"{}\"/></datamodel>",
            attr(&js(self.m.initial_context()))
        );
        if wrapped {
            self.state(0, 1)?;
        } else {
            for &c in &root.children {
                self.state(c, 1)?;
            }
        }
        self.out.push_str("</scxml>\n");
        Ok(())
    }

    fn state(&mut self, s: u16, depth: usize) -> Result<(), ExportError> {
        let pad = "  ".repeat(depth);
        let n = self.node(s);
        let id = attr(self.id(s));
        if !n.invoke.is_empty() {
            return Err(self.unsupported(s, "an invocation"));
        }
        if n.kind == StateKind::Final
            && n.parent
                .is_some_and(|p| self.node(p).kind == StateKind::Parallel)
        {
            // SCXML's schema allows only <state>, <parallel> and <history>
            // in a <parallel>; XState takes a final state as a region.
            return Err(self.unsupported(s, "a final state directly inside a parallel state"));
        }
        if let StateKind::History { deep } = n.kind {
            let targets = if n.history_default.is_empty() {
                let parent = n.parent.unwrap_or(0);
                match self.node(parent).initial {
                    Some(i) => vec![i],
                    // A parallel parent: every region.
                    None => self
                        .node(parent)
                        .children
                        .iter()
                        .copied()
                        .filter(|&c| !self.node(c).is_history())
                        .collect(),
                }
            } else {
                n.history_default.clone()
            };
            let _ = writeln!(
                self.out,
                "{pad}<history id=\"{id}\" type=\"{}\"><transition target=\"{}\"/></history>",
                if deep { "deep" } else { "shallow" },
                self.targets(&targets)
            );
            return Ok(());
        }
        let tag = match n.kind {
            StateKind::Parallel => "parallel",
            StateKind::Final => "final",
            _ => "state",
        };
        let _ = write!(self.out, "{pad}<{tag} id=\"{id}\"");
        let initial_with_actions = n.kind == StateKind::Compound && !n.initial_actions.is_empty();
        if n.kind == StateKind::Compound && !initial_with_actions {
            if let Some(i) = n.initial {
                let _ = write!(self.out, " initial=\"{}\"", attr(self.id(i)));
            }
        }
        self.out.push_str(">\n");
        let inner = format!("{pad}  ");
        if initial_with_actions {
            if let Some(i) = n.initial {
                let _ = writeln!(
                    self.out,
                    "{inner}<initial><transition target=\"{}\">",
                    attr(self.id(i))
                );
                self.actions(s, &n.initial_actions, depth + 2)?;
                let _ = writeln!(self.out, "{inner}</transition></initial>");
            }
        }
        if !n.entry.is_empty() || !n.after.is_empty() {
            let _ = writeln!(self.out, "{inner}<onentry>");
            for a in &n.after {
                let delay = match &a.delay {
                    Delay::Ms(ms) => format!("delay=\"{ms}ms\""),
                    Delay::Named(name, _) => {
                        format!("delayexpr=\"{}\"", attr(&self.named_delay(s, name)?))
                    }
                };
                let _ = writeln!(
                    self.out,
                    "{inner}  <send event=\"{ev}\" {delay} id=\"{ev}\"/>",
                    ev = attr(&self.descriptor(&a.event))
                );
            }
            self.actions(s, &n.entry, depth + 2)?;
            let _ = writeln!(self.out, "{inner}</onentry>");
        }
        if !n.exit.is_empty() || !n.after.is_empty() {
            let _ = writeln!(self.out, "{inner}<onexit>");
            self.actions(s, &n.exit, depth + 2)?;
            for a in &n.after {
                let _ = writeln!(
                    self.out,
                    "{inner}  <cancel sendid=\"{}\"/>",
                    attr(&self.descriptor(&a.event))
                );
            }
            let _ = writeln!(self.out, "{inner}</onexit>");
        }
        if let Some(output) = &n.output {
            match output {
                // XState's done event carries the output as `output`.
                ValueExpr::Value(v) => {
                    let _ = writeln!(
                        self.out,
                        "{inner}<donedata><content expr=\"{}\"/></donedata>",
                        attr(&js(&serde_json::json!({ "output": v })))
                    );
                }
                ValueExpr::Fn(_) | ValueExpr::Try(_) => {
                    return Err(self.unsupported(s, "a computed output"))
                }
            }
        }
        let mut transitions: Vec<u32> = n.always.clone();
        let mut on: Vec<&(std::sync::Arc<str>, Vec<u32>)> = n.on.iter().collect();
        on.sort_by_key(|(d, _)| priority(d));
        for (_, ts) in on {
            transitions.extend(ts.iter().copied());
        }
        for t in transitions {
            self.transition(s, t, depth + 1)?;
        }
        for &c in &n.children {
            self.state(c, depth + 1)?;
        }
        let _ = writeln!(self.out, "{pad}</{tag}>");
        Ok(())
    }

    /// XState's own event names, with SCXML ids: `xstate.done.state.<id>`
    /// is SCXML's `done.state.<id>`; `xstate.after.<delay>.<id>` keeps its
    /// form with the state's SCXML id.
    fn descriptor(&self, d: &str) -> String {
        if let Some(id) = d.strip_prefix(XSTATE_DONE_STATE) {
            if let Some(s) = self.m.state_by_id(id) {
                return format!("done.state.{}", self.id(s));
            }
        }
        if let Some(rest) = d.strip_prefix(XSTATE_AFTER) {
            for (s, n) in self.m.states().iter().enumerate() {
                if let Some(delay) = rest.strip_suffix(&*n.id).and_then(|r| r.strip_suffix('.')) {
                    if n.after.iter().any(|a| &*a.event == d) {
                        return format!("{XSTATE_AFTER}{delay}.{}", self.ids[s]);
                    }
                }
            }
        }
        d.to_owned()
    }

    fn targets(&self, ts: &[u16]) -> String {
        ts.iter()
            .map(|&t| attr(self.id(t)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn transition(&mut self, s: u16, t: u32, depth: usize) -> Result<(), ExportError> {
        let pad = "  ".repeat(depth);
        let tr = &self.m.transitions()[t as usize];
        let _ = write!(self.out, "{pad}<transition");
        if let Some(e) = &tr.event {
            let _ = write!(self.out, " event=\"{}\"", attr(&self.descriptor(e)));
        }
        if let Some(g) = &tr.guard {
            let _ = write!(self.out, " cond=\"{}\"", attr(&self.guard(s, g)?));
        }
        // XState: an atomic state's transition to itself without `reenter`
        // exits and enters nothing, which is SCXML's targetless transition.
        let self_only = tr.targets == [s] && !tr.reenter && self.node(s).is_atomic();
        if !tr.targets.is_empty() && !self_only {
            let _ = write!(self.out, " target=\"{}\"", self.targets(&tr.targets));
            if !tr.reenter {
                self.out.push_str(" type=\"internal\"");
            }
        }
        if tr.actions.is_empty() {
            self.out.push_str("/>\n");
        } else {
            self.out.push_str(">\n");
            self.actions(s, &tr.actions, depth + 1)?;
            let _ = writeln!(self.out, "{pad}</transition>");
        }
        Ok(())
    }

    fn guard(&self, s: u16, g: &Guard<Value>) -> Result<String, ExportError> {
        Ok(match g {
            Guard::And(gs) => format!("({})", self.guards(s, gs, " && ")?),
            Guard::Or(gs) => format!("({})", self.guards(s, gs, " || ")?),
            Guard::Not(g) => format!("!{}", self.guard(s, g)?),
            Guard::StateIn(states, _) => format!(
                "({})",
                states
                    .iter()
                    .map(|&x| format!("In({})", js_str(self.id(x))))
                    .collect::<Vec<_>>()
                    .join(" && ")
            ),
            Guard::Named { name, params, .. } => self.named_guard(s, name, params)?,
            // A condition whose implementation is code: its text is a name.
            Guard::Try { name, .. } => {
                return Err(self.unsupported(s, format!("the guard {name:?}")))
            }
        })
    }

    fn guards(&self, s: u16, gs: &[Guard<Value>], op: &str) -> Result<String, ExportError> {
        if gs.is_empty() {
            return Ok(if op.contains('&') { "true" } else { "false" }.into());
        }
        Ok(gs
            .iter()
            .map(|g| self.guard(s, g))
            .collect::<Result<Vec<_>, _>>()?
            .join(op))
    }

    fn named_guard(&self, s: u16, name: &str, p: &Value) -> Result<String, ExportError> {
        let ctx = |p: &Value| format!("context[{}]", js(&p["key"]));
        let ev = |p: &Value| match p["key"].as_str() {
            Some("type") => "_event.name".to_owned(),
            _ => format!("(_event.data || {{}})[{}]", js(&p["key"])),
        };
        let value = js(p.get("value").unwrap_or(&Value::Null));
        let same = |lhs: String| match p.get("value") {
            Some(v) => format!("JSON.stringify({lhs}) === JSON.stringify({})", js(v)),
            None => format!("{lhs} === undefined"),
        };
        Ok(match name {
            "pass" => "true".into(),
            "fail" => "false".into(),
            "ctxEq" => same(ctx(p)),
            "ctxLt" => format!("(typeof {c} === 'number' && {c} < {value})", c = ctx(p)),
            "ctxGte" => format!("(typeof {c} === 'number' && {c} >= {value})", c = ctx(p)),
            "eventEq" => same(ev(p)),
            "eventGt" => format!("(typeof {e} === 'number' && {e} > {value})", e = ev(p)),
            other => return Err(self.unsupported(s, format!("guard {other:?}"))),
        })
    }

    fn named_delay(&self, s: u16, name: &str) -> Result<String, ExportError> {
        Ok(match name {
            "short" => "'50ms'".into(),
            "medium" => "'200ms'".into(),
            "long" => "'1000ms'".into(),
            "ctxDelay" => {
                "(typeof context.delay === 'number' ? Math.max(0, Math.floor(context.delay)) : 0) + 'ms'"
                    .into()
            }
            other => return Err(self.unsupported(s, format!("delay {other:?}"))),
        })
    }

    fn actions(
        &mut self,
        s: u16,
        actions: &[ActionDef<Value>],
        depth: usize,
    ) -> Result<(), ExportError> {
        for a in actions {
            let line = self.action(s, a)?;
            let _ = writeln!(self.out, "{}{line}", "  ".repeat(depth));
        }
        Ok(())
    }

    fn action(&self, s: u16, a: &ActionDef<Value>) -> Result<String, ExportError> {
        let p = &a.params;
        let key = js(&p["key"]);
        let loc = attr(&format!("context[{key}]"));
        Ok(match &*a.name {
            "inc" => {
                let by = p.get("by").and_then(Value::as_f64).unwrap_or(1.0);
                let expr =
                    format!("(typeof context[{key}] === 'number' ? context[{key}] : 0) + {by}");
                format!("<assign location=\"{loc}\" expr=\"{}\"/>", attr(&expr))
            }
            "set" => format!(
                "<assign location=\"{loc}\" expr=\"{}\"/>",
                attr(&js(p.get("value").unwrap_or(&Value::Null)))
            ),
            "setFromEvent" => {
                let from = format!("(_event.data || {{}})[{}]", js(&p["from"]));
                let expr = format!("({from} === undefined ? null : {from})");
                format!("<assign location=\"{loc}\" expr=\"{}\"/>", attr(&expr))
            }
            "append" => {
                let piece = match p.get("value") {
                    Some(Value::String(v)) => v.clone(),
                    Some(other) => other.to_string(),
                    None => "undefined".into(),
                };
                let expr = format!(
                    "(typeof context[{key}] === 'string' ? context[{key}] : '') + {}",
                    js_str(&piece)
                );
                format!("<assign location=\"{loc}\" expr=\"{}\"/>", attr(&expr))
            }
            "raise" => {
                let event = &p["event"];
                let Some(name) = event.get("type").and_then(Value::as_str) else {
                    return Err(self.unsupported(s, "a raise without an event type"));
                };
                let data: serde_json::Map<String, Value> = event
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .filter(|(k, _)| *k != "type")
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                let delay = match p.get("delay") {
                    Some(Value::Number(n)) => Some(format!(
                        " delay=\"{}ms\"",
                        n.as_f64().unwrap_or(0.0).max(0.0) as u64
                    )),
                    Some(Value::String(d)) => {
                        Some(format!(" delayexpr=\"{}\"", attr(&self.named_delay(s, d)?)))
                    }
                    _ => None,
                };
                let id = p
                    .get("id")
                    .and_then(Value::as_str)
                    .map(|id| format!(" id=\"{}\"", attr(id)))
                    .unwrap_or_default();
                let content = if data.is_empty() {
                    String::new()
                } else {
                    format!("<content expr=\"{}\"/>", attr(&js(&Value::Object(data))))
                };
                match delay {
                    // XState: a delayed raise arrives as an external event.
                    Some(d) => format!("<send event=\"{}\"{d}{id}>{content}</send>", attr(name)),
                    None if content.is_empty() => format!("<raise event=\"{}\"/>", attr(name)),
                    None => format!(
                        "<send event=\"{}\" target=\"#_internal\">{content}</send>",
                        attr(name)
                    ),
                }
            }
            "cancel" => match p.get("id").and_then(Value::as_str) {
                Some(id) => format!("<cancel sendid=\"{}\"/>", attr(id)),
                None => return Err(self.unsupported(s, "a cancel without an id")),
            },
            "log" => {
                let msg = match p.get("message") {
                    Some(Value::String(m)) => js_str(m),
                    Some(other) => js_str(&other.to_string()),
                    None => "_event.name".into(),
                };
                format!("<log expr=\"{}\"/>", attr(&msg))
            }
            // Emitting to subscribers changes nothing in the chart; SCXML
            // has no subscribers, so it is kept as a log line.
            "emit" => format!(
                "<log label=\"emit\" expr=\"{}\"/>",
                attr(&js_str(&p["event"].to_string()))
            ),
            other => return Err(self.unsupported(s, format!("action {other:?}"))),
        })
    }
}
