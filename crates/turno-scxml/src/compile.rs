//! An SCXML [`Document`] as a turno-chart [`Machine`] under
//! [`Semantics::Scxml`]: one state per document state, in document order;
//! transitions with their descriptor lists, conditions and executable
//! content; the data model reached through the chart's context ([`Ctx`]).
//!
//! What each part of the document becomes:
//!
//! - `<scxml>`: the machine's root. Its entry sets up the data model (the
//!   system variables, `<data>`, the global `<script>`); it is never part
//!   of the configuration the session reports.
//! - each `<onentry>`/`<onexit>` block: one action (an error ends the
//!   block, not the others); before the entry blocks an action marks the
//!   state active for `In()` and, under late binding, initializes its data;
//!   after the exit blocks one marks it inactive.
//! - `cond`: a fallible guard (an error is `error.execution` and false);
//!   `<donedata>`: a fallible output expression.
//! - `type="internal"`: `reenter: false`; external transitions reenter.
//! - `<initial>` and the `initial` attribute: the initial transition, with
//!   all its targets (`initial_targets`) and content.
//! - `<history>`: its default transition's targets and content.
//! - `<invoke>`: an invocation the session starts when the macrostep ends
//!   ([`crate::session`]).

use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;
use turno_chart::actions::{ActionScope, EventHookFn};
use turno_chart::spec::{
    ActionSpec, GuardSpec, InitialSpec, InvokeSpec, KindSpec, OutputSpec, StateSpec, TransitionSpec,
};
use turno_chart::{Machine, Semantics};

use crate::datamodel::EvalError;
use crate::event::Event;
use crate::exec::error_execution;
use crate::model::{Document, DoneData, HistoryKind, StateId, StateKind, TransitionId, ROOT};
use crate::session::{from_chart, invoke_id, to_chart, Ctx};

/// A document compiled once and shared by its sessions (on one thread:
/// the context is an `Rc`).
pub(crate) struct Compiled {
    pub doc: Arc<Document>,
    pub machine: Rc<Machine<Ctx>>,
    /// Machine state index to document state id.
    pub to_doc: Arc<Vec<StateId>>,
}

/// Compiles `doc`; an error names the state (the loader already rejected
/// what SCXML forbids, so this is what turno-chart cannot represent).
pub(crate) fn compile(doc: Arc<Document>) -> Result<Compiled, EvalError> {
    let root = state_spec(&doc, ROOT);
    let machine = Machine::with_semantics(root, Ctx::default(), None, Semantics::Scxml)
        .map_err(|e| EvalError::new(format!("cannot run this document: {e}")))?
        .with_event_hook(event_hook());
    let mut to_doc = Vec::with_capacity(machine.states().len());
    for st in machine.states() {
        let s = if to_doc.is_empty() {
            ROOT
        } else {
            doc.state_by_id(&st.id)
                .ok_or_else(|| EvalError::new(format!("state {:?} was lost", st.id)))?
        };
        to_doc.push(s);
    }
    Ok(Compiled {
        doc,
        machine: Rc::new(machine),
        to_doc: Arc::new(to_doc),
    })
}

fn target(doc: &Document, s: StateId) -> String {
    format!("#{}", doc.states[s].id)
}

fn state_spec(doc: &Arc<Document>, s: StateId) -> StateSpec<Ctx> {
    let st = &doc.states[s];
    let key = if s == ROOT && st.id.is_empty() {
        "scxml".to_owned()
    } else {
        st.id.clone()
    };
    let mut spec = StateSpec::new(key, format!("line {}", st.pos.line));
    spec.id = Some(spec.key.clone());
    spec.kind = match st.kind {
        StateKind::Scxml | StateKind::State => KindSpec::Auto,
        StateKind::Parallel => KindSpec::Parallel,
        StateKind::Final => KindSpec::Final,
        StateKind::History(k) => KindSpec::History {
            deep: k == HistoryKind::Deep,
        },
    };
    let mut kids: Vec<StateId> = st.children.iter().chain(&st.history).copied().collect();
    kids.sort_unstable();
    spec.states = kids.iter().map(|&c| state_spec(doc, c)).collect();
    if let (Some(t), false) = (st.initial, st.children.is_empty()) {
        let tr = &doc.transitions[t];
        let first = tr.targets.first().copied().unwrap_or(st.children[0]);
        let child = st
            .children
            .iter()
            .chain(&st.history)
            .copied()
            .find(|&c| c == first || doc.is_descendant(first, c))
            .unwrap_or(st.children[0]);
        spec.initial = Some(InitialSpec {
            target: doc.states[child].id.clone(),
            actions: block_action(doc, &tr.content, BlockRef::Transition(t)),
            path: spec.path.clone(),
        });
        spec.initial_targets = tr.targets.iter().map(|&x| target(doc, x)).collect();
    }
    if let Some(t) = st.history_default {
        let tr = &doc.transitions[t];
        spec.history_target = Some(tr.targets.iter().map(|&x| target(doc, x)).collect());
        spec.history_actions = block_action(doc, &tr.content, BlockRef::Transition(t));
    }
    if s == ROOT {
        spec.entry
            .push(action("scxml.start", |core, raised| core.start(raised)));
    } else if !matches!(st.kind, StateKind::History(_)) {
        spec.entry.push(action("scxml.enter", move |core, raised| {
            let id = core.doc.states[s].id.clone();
            core.dm.set_active(&id, true);
            if core.doc.binding == crate::model::Binding::Late {
                core.initialize_data(s, raised);
            }
        }));
    }
    for k in 0..st.onentry.len() {
        spec.entry
            .extend(block_action(doc, &st.onentry[k], BlockRef::OnEntry(s, k)));
    }
    for k in 0..st.onexit.len() {
        spec.exit
            .extend(block_action(doc, &st.onexit[k], BlockRef::OnExit(s, k)));
    }
    if s != ROOT && !matches!(st.kind, StateKind::History(_)) {
        spec.exit.push(action("scxml.exit", move |core, _| {
            let id = core.doc.states[s].id.clone();
            core.dm.set_active(&id, false);
        }));
    }
    for &t in &st.transitions {
        let tr = &doc.transitions[t];
        let mut ts = TransitionSpec::to(
            tr.targets.iter().map(|&x| target(doc, x)).collect(),
            format!("{}.transition", spec.path),
        );
        ts.reenter = !tr.internal;
        ts.actions = block_action(doc, &tr.content, BlockRef::Transition(t));
        if let Some(cond) = &tr.cond {
            ts.guard = Some(guard(cond.clone()));
        }
        if tr.events.is_empty() {
            spec.always.push(ts);
        } else {
            spec.on.push((tr.events.join(" "), vec![ts]));
        }
    }
    for k in 0..st.invokes.len() {
        spec.invoke.push(InvokeSpec {
            id: Some(invoke_id(s, k)),
            src: "scxml".into(),
            input: None,
            on_done: Vec::new(),
            on_error: Vec::new(),
            path: spec.path.clone(),
        });
    }
    if st.donedata.is_some() {
        spec.output = Some(OutputSpec::Try(Arc::new(move |ctx: &Ctx, _| {
            ctx.try_with(|core| done_data(core, s))
                .unwrap_or(Ok(Value::Null))
                .map_err(|e| to_chart(&error_execution(&e.0)))
        })));
    }
    spec
}

/// Where a block lives in the document (the action finds it there).
#[derive(Clone, Copy)]
enum BlockRef {
    OnEntry(StateId, usize),
    OnExit(StateId, usize),
    Transition(TransitionId),
}

fn block_action(doc: &Document, block: &crate::model::Block, at: BlockRef) -> Vec<ActionSpec<Ctx>> {
    if block.is_empty() {
        return Vec::new();
    }
    let _ = doc;
    vec![action("scxml.block", move |core, raised| {
        let doc = core.doc.clone();
        let block = match at {
            BlockRef::OnEntry(s, k) => &doc.states[s].onentry[k],
            BlockRef::OnExit(s, k) => &doc.states[s].onexit[k],
            BlockRef::Transition(t) => &doc.transitions[t].content,
        };
        core.execute_block(block, raised);
    })]
}

/// An action that runs `f` on the session's data and queues what it raised.
fn action(
    name: &str,
    f: impl Fn(&mut crate::session::Core, &mut Vec<Event>) + Send + Sync + 'static,
) -> ActionSpec<Ctx> {
    ActionSpec {
        name: name.to_owned(),
        params: Value::Null,
        imp: Arc::new(move |scope: &mut ActionScope<'_, Ctx>| {
            let mut raised = Vec::new();
            scope.context().with(|core| f(core, &mut raised));
            for e in &raised {
                scope.raise(to_chart(e));
            }
        }),
    }
}

/// `cond`: an error is `error.execution` and the guard is false.
fn guard(cond: String) -> GuardSpec<Ctx> {
    let name = cond.clone();
    GuardSpec::Try {
        name,
        imp: Arc::new(move |ctx: &Ctx, _| {
            ctx.try_with(|core| match core.dm.eval_bool(&cond) {
                Ok(b) => Ok(b),
                Err(e) => Err(to_chart(&error_execution(&format!(
                    "cond {cond:?}: {}",
                    e.0
                )))),
            })
            .unwrap_or(Ok(false))
        }),
    }
}

/// `<donedata>` of final state `s`.
fn done_data(core: &mut crate::session::Core, s: StateId) -> Result<Value, EvalError> {
    let doc = core.doc.clone();
    match &doc.states[s].donedata {
        Some(DoneData::Content(c)) => core.content_data(c),
        Some(DoneData::Params(params)) => core.params_data(params, &[]),
        None => Ok(Value::Null),
    }
}

/// Binds `_event` before each selection, and runs the `<finalize>` of the
/// invocation an event comes from.
fn event_hook() -> EventHookFn<Ctx> {
    Arc::new(|ctx: &mut Ctx, ev: &turno_chart::Event| {
        let e = from_chart(ev);
        ctx.with(|core| {
            let mut raised = Vec::new();
            if let Err(err) = core.dm.set_event(&e) {
                raised.push(error_execution(&err.0));
            }
            if let Some(id) = &e.invokeid {
                let inv = core.invocations.iter().find(|i| &i.invokeid == id).cloned();
                if let Some(inv) = inv {
                    let doc = core.doc.clone();
                    core.execute_block(
                        &doc.states[inv.state].invokes[inv.index].finalize,
                        &mut raised,
                    );
                }
            }
            raised.iter().map(to_chart).collect()
        })
    })
}
