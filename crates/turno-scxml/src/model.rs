//! The SCXML document model: states in document order, transitions, and
//! executable content as data.
//!
//! States live in one vector in *document order* (a pre-order walk of the
//! document, the `<scxml>` root first), so a [`StateId`] comparison is the
//! spec's document order and its reverse is exit order. Every state knows its
//! parent and children, so the algorithm's `getProperAncestors` and
//! `isDescendant` are walks over indices.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Position;

/// Index of a state in [`Document::states`]; lower means earlier in document order.
pub type StateId = usize;
/// Index of a transition in [`Document::transitions`]; lower means earlier in document order.
pub type TransitionId = usize;

/// The root state (the `<scxml>` element) is always state 0.
pub const ROOT: StateId = 0;

/// A loaded SCXML document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The `name` attribute of `<scxml>`.
    pub name: Option<String>,
    /// The `datamodel` attribute (`null` when absent).
    pub datamodel: DataModelKind,
    /// The `binding` attribute.
    pub binding: Binding,
    /// All states in document order; `states[0]` is the `<scxml>` element.
    pub states: Vec<State>,
    /// All transitions in document order, including the synthetic ones for
    /// `initial` attributes and the initial state of `<scxml>`.
    pub transitions: Vec<Transition>,
    /// The top-level `<script>`, run once after the data model is created.
    pub script: Option<Script>,
    /// Directory against which `src` attributes are resolved at run time
    /// (for `<invoke src>` and `srcexpr`).
    pub base: Option<PathBuf>,
}

/// The data model a document asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataModelKind {
    /// `datamodel="null"` (the default).
    Null,
    /// `datamodel="ecmascript"`.
    Ecmascript,
}

/// When `<data>` elements get their values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// All data is initialized when the document starts (the default).
    Early,
    /// Data in a state is initialized when the state is first entered.
    Late,
}

/// What kind of node a state is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateKind {
    /// The `<scxml>` element.
    Scxml,
    /// A `<state>` (atomic or compound, decided by its children).
    State,
    /// A `<parallel>`.
    Parallel,
    /// A `<final>`.
    Final,
    /// A `<history>` pseudo-state.
    History(HistoryKind),
}

/// Shallow or deep history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryKind {
    /// Remembers the active children of the parent.
    Shallow,
    /// Remembers the active atomic descendants of the parent.
    Deep,
}

/// One state (or the root, or a history pseudo-state).
#[derive(Debug, Clone)]
pub struct State {
    /// The `id` (generated as `__state_N` when the document gives none).
    pub id: String,
    /// Element kind.
    pub kind: StateKind,
    /// Parent state; `None` only for the root.
    pub parent: Option<StateId>,
    /// Child `<state>`, `<parallel>` and `<final>` elements, in document order
    /// (the spec's `getChildStates`: history is not among them).
    pub children: Vec<StateId>,
    /// Child `<history>` elements.
    pub history: Vec<StateId>,
    /// The default initial transition of a compound state (from the `initial`
    /// attribute, the `<initial>` element, or the first child).
    pub initial: Option<TransitionId>,
    /// The default transition of a history state.
    pub history_default: Option<TransitionId>,
    /// Outgoing transitions in document order (not the initial one).
    pub transitions: Vec<TransitionId>,
    /// Each `<onentry>` is its own block.
    pub onentry: Vec<Block>,
    /// Each `<onexit>` is its own block.
    pub onexit: Vec<Block>,
    /// `<invoke>` children in document order.
    pub invokes: Vec<Invoke>,
    /// `<data>` elements of this state's `<datamodel>` (for the root, the
    /// top-level datamodel).
    pub data: Vec<Data>,
    /// `<donedata>` of a final state.
    pub donedata: Option<DoneData>,
    /// Where the element starts.
    pub pos: Position,
}

/// A transition.
#[derive(Debug, Clone)]
pub struct Transition {
    /// The state it belongs to.
    pub source: StateId,
    /// Event descriptors (empty: eventless).
    pub events: Vec<String>,
    /// Guard expression.
    pub cond: Option<String>,
    /// Targets (empty: targetless).
    pub targets: Vec<StateId>,
    /// `type="internal"`.
    pub internal: bool,
    /// Executable content.
    pub content: Block,
}

/// A block of executable content.
pub type Block = Vec<Exec>;

/// One executable content element.
#[derive(Debug, Clone)]
pub enum Exec {
    /// `<raise event>`.
    Raise {
        /// The event name.
        event: String,
    },
    /// `<send>`.
    Send(Box<Send>),
    /// `<cancel sendid|sendidexpr>`.
    Cancel {
        /// Literal id or expression.
        sendid: ValueOrExpr,
    },
    /// `<log label expr>`.
    Log {
        /// Label.
        label: Option<String>,
        /// Expression.
        expr: Option<String>,
    },
    /// `<assign location expr|content>`.
    Assign {
        /// Location expression.
        location: String,
        /// Value.
        value: AssignValue,
    },
    /// `<if>` with its `<elseif>`/`<else>` branches: `(cond, block)`, the
    /// `<else>` branch with `None`.
    If(Vec<(Option<String>, Block)>),
    /// `<foreach array item index>`.
    Foreach {
        /// The array expression.
        array: String,
        /// The item variable.
        item: String,
        /// The index variable.
        index: Option<String>,
        /// The body.
        body: Block,
    },
    /// `<script>`.
    Script(Script),
}

/// A `<script>` (inline or loaded from `src` at load time).
#[derive(Debug, Clone)]
pub struct Script {
    /// Program text.
    pub source: Arc<str>,
    /// Where the element starts.
    pub pos: Position,
}

/// The value of `<assign>`.
#[derive(Debug, Clone)]
pub enum AssignValue {
    /// `expr`.
    Expr(String),
    /// Child content, as written.
    Content(String),
}

/// A literal attribute or its `...expr` twin.
#[derive(Debug, Clone)]
pub enum ValueOrExpr {
    /// The literal value.
    Value(String),
    /// An expression evaluated when the element runs.
    Expr(String),
}

/// `<send>`.
#[derive(Debug, Clone)]
pub struct Send {
    /// `event` / `eventexpr`.
    pub event: Option<ValueOrExpr>,
    /// `target` / `targetexpr`.
    pub target: Option<ValueOrExpr>,
    /// `type` / `typeexpr`.
    pub type_: Option<ValueOrExpr>,
    /// `id`.
    pub id: Option<String>,
    /// `idlocation`.
    pub idlocation: Option<String>,
    /// `delay` / `delayexpr`.
    pub delay: Option<ValueOrExpr>,
    /// `namelist`.
    pub namelist: Vec<String>,
    /// `<param>` children.
    pub params: Vec<Param>,
    /// `<content>` child.
    pub content: Option<Content>,
}

/// `<param name expr|location>`.
#[derive(Debug, Clone)]
pub struct Param {
    /// Name.
    pub name: String,
    /// `expr` or `location` (both are expressions in ECMAScript).
    pub expr: String,
}

/// `<content>`.
#[derive(Debug, Clone)]
pub enum Content {
    /// `expr`.
    Expr(String),
    /// Children as written (text or markup).
    Inline(String),
}

/// `<donedata>`.
#[derive(Debug, Clone)]
pub enum DoneData {
    /// `<content>`.
    Content(Content),
    /// `<param>`s.
    Params(Vec<Param>),
}

/// `<data id expr|src|content>`.
#[derive(Debug, Clone)]
pub struct Data {
    /// The variable name.
    pub id: String,
    /// Where its value comes from.
    pub init: DataInit,
    /// Where the element starts.
    pub pos: Position,
}

/// How a `<data>` element gets its value.
#[derive(Debug, Clone)]
pub enum DataInit {
    /// No value: the variable exists, unbound.
    None,
    /// `expr`.
    Expr(String),
    /// Inline content or the text of the `src` file.
    Text(String),
}

/// `<invoke>`.
#[derive(Debug, Clone)]
pub struct Invoke {
    /// `type` / `typeexpr`.
    pub type_: Option<ValueOrExpr>,
    /// `src` / `srcexpr`.
    pub src: Option<ValueOrExpr>,
    /// `id`.
    pub id: Option<String>,
    /// `idlocation`.
    pub idlocation: Option<String>,
    /// `namelist`.
    pub namelist: Vec<String>,
    /// `autoforward`.
    pub autoforward: bool,
    /// `<param>`s.
    pub params: Vec<Param>,
    /// `<content>`: an inline document or an expression.
    pub content: Option<InvokeContent>,
    /// `<finalize>`.
    pub finalize: Block,
    /// Where the element starts.
    pub pos: Position,
}

/// What an `<invoke>`'s `<content>` holds.
#[derive(Debug, Clone)]
pub enum InvokeContent {
    /// An inline `<scxml>` document, already loaded.
    Document(Arc<Document>),
    /// `expr`: evaluates to document text.
    Expr(String),
}

impl Document {
    /// The state called `id`.
    pub fn state_by_id(&self, id: &str) -> Option<StateId> {
        self.states.iter().position(|s| s.id == id)
    }

    /// Is `s` an atomic state (no child states, not history)?
    pub fn is_atomic(&self, s: StateId) -> bool {
        let st = &self.states[s];
        match st.kind {
            StateKind::State => st.children.is_empty(),
            StateKind::Final => true,
            _ => false,
        }
    }

    /// Is `s` a compound `<state>` (one with child states)?
    pub fn is_compound(&self, s: StateId) -> bool {
        let st = &self.states[s];
        st.kind == StateKind::State && !st.children.is_empty()
    }

    /// Is `s` a `<parallel>`?
    pub fn is_parallel(&self, s: StateId) -> bool {
        self.states[s].kind == StateKind::Parallel
    }

    /// Is `s` a `<final>`?
    pub fn is_final(&self, s: StateId) -> bool {
        self.states[s].kind == StateKind::Final
    }

    /// Is `s` a `<history>`?
    pub fn is_history(&self, s: StateId) -> bool {
        matches!(self.states[s].kind, StateKind::History(_))
    }

    /// Is `s` a proper descendant of `ancestor`?
    pub fn is_descendant(&self, s: StateId, ancestor: StateId) -> bool {
        let mut p = self.states[s].parent;
        while let Some(x) = p {
            if x == ancestor {
                return true;
            }
            p = self.states[x].parent;
        }
        false
    }

    /// The spec's `getProperAncestors(s, stop)`: ancestors of `s` from the
    /// parent up, stopping before `stop` (all the way up with `None`).
    pub fn proper_ancestors(&self, s: StateId, stop: Option<StateId>) -> Vec<StateId> {
        let mut out = Vec::new();
        let mut p = self.states[s].parent;
        while let Some(x) = p {
            if Some(x) == stop {
                break;
            }
            out.push(x);
            p = self.states[x].parent;
        }
        out
    }
}
