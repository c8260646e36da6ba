//! The statechart pane's pictures: a trace's `chart_define` (a
//! [`ChartView`]) drawn by turno-chart's renderer ([`turno_chart::svg`]),
//! the same drawing `turno chart svg` and the wizard make. A layout is made
//! once per definition and kept; the page re-marks the active states and
//! the transition just taken at every step.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use turno_chart::mermaid::arrow_label;
use turno_chart::svg::{layout, Arrow, Diagram, Highlight, Layout, Node, NodeKind};
use turno_trace::actor::{HistoryDepth, StateKind};
use turno_trace::world::ChartView;

/// Definitions laid out so far, by a hash of the definition.
#[derive(Default)]
pub(crate) struct Layouts {
    done: Mutex<HashMap<u64, Result<Arc<Layout>, String>>>,
}

/// Most definitions kept: a trace defines a handful of machines.
const MAX_KEPT: usize = 64;

impl Layouts {
    /// The picture of `c`'s definition, nothing marked (the page marks the
    /// configuration of the step it shows).
    pub(crate) fn svg(&self, c: &ChartView) -> Result<String, String> {
        let mut h = DefaultHasher::new();
        (
            &c.machine,
            &c.states,
            &c.transitions,
            &c.root,
            &c.initial,
            &c.root_kind,
        )
            .hash(&mut h);
        let key = h.finish();
        let cached = self
            .done
            .lock()
            .map_err(|_| "the layout cache is poisoned".to_string())?
            .get(&key)
            .cloned();
        let l = match cached {
            Some(l) => l,
            None => {
                let l = layout(&diagram(c)).map(Arc::new).map_err(|e| e.to_string());
                let mut done = self
                    .done
                    .lock()
                    .map_err(|_| "the layout cache is poisoned".to_string())?;
                if done.len() >= MAX_KEPT {
                    done.clear();
                }
                done.insert(key, l.clone());
                l
            }
        }?;
        Ok(l.svg(&Highlight::default()))
    }
}

/// The diagram of a recorded definition: the one `turno chart svg` makes of
/// the machine itself, where the trace records what it needs (the root,
/// initial states, history depths, guards, delays and actions). Traces
/// define the states below the machine's root; the root is named by the
/// definition, or (in older traces) is the state a transition or the
/// configuration names but none defines, drawn around the rest.
pub(crate) fn diagram(c: &ChartView) -> Diagram {
    let mut ids: Vec<String> = Vec::new();
    let defined: HashMap<&str, usize> = c
        .states
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let mut undefined: Vec<String> = c
        .root
        .iter()
        .chain(
            c.transitions
                .iter()
                .flat_map(|t| std::iter::once(&t.source).chain(t.targets.iter())),
        )
        .chain(c.active.iter())
        .filter(|id| !defined.contains_key(id.as_str()))
        .cloned()
        .collect();
    undefined.sort();
    undefined.dedup();
    // The recorded root, else the outermost undefined state (the shortest
    // id), frames the others.
    undefined.sort_by_key(|id| (Some(id) != c.root.as_ref(), id.len()));
    let root = undefined.first().cloned();
    let mut states = Vec::new();
    for id in &undefined {
        let is_root = Some(id) == root.as_ref();
        states.push(Node {
            id: id.clone(),
            label: if is_root {
                c.machine.clone().unwrap_or_else(|| id.clone())
            } else {
                id.clone()
            },
            parent: if is_root { None } else { Some(0) },
            kind: if is_root && c.root_kind == Some(StateKind::Parallel) {
                NodeKind::Parallel
            } else if is_root {
                NodeKind::Compound
            } else {
                NodeKind::Atomic
            },
            initial: None,
        });
        ids.push(id.clone());
    }
    let offset = states.len();
    // Definitions list parents first; a parent that comes later (or never)
    // makes the state an outermost one.
    for (i, s) in c.states.iter().enumerate() {
        let parent = match &s.parent {
            Some(p) => defined
                .get(p.as_str())
                .filter(|&&pi| pi < i)
                .map(|&pi| pi + offset)
                .or(if root.is_some() { Some(0) } else { None }),
            None if root.is_some() => Some(0),
            None => None,
        };
        let name = match &s.parent {
            Some(p) => {
                s.id.strip_prefix(p.as_str())
                    .and_then(|r| r.strip_prefix('.'))
                    .unwrap_or(&s.id)
            }
            None => s.id.rsplit('.').next().unwrap_or(&s.id),
        };
        states.push(Node {
            id: s.id.clone(),
            label: name.to_string(),
            parent,
            kind: match s.kind {
                StateKind::Atomic => NodeKind::Atomic,
                StateKind::Compound => NodeKind::Compound,
                StateKind::Parallel => NodeKind::Parallel,
                StateKind::Final => NodeKind::Final,
                StateKind::History => NodeKind::History {
                    deep: s.history == Some(HistoryDepth::Deep),
                },
            },
            initial: None,
        });
        ids.push(s.id.clone());
    }
    let index: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    // Initial arrows, where they point at a child of the state (the
    // renderer draws no other).
    let initial_of = |state: usize, child: &Option<String>| {
        child
            .as_ref()
            .and_then(|x| index.get(x.as_str()).copied())
            .filter(|&x| states[x].parent == Some(state))
    };
    let initials: Vec<Option<usize>> = (0..states.len())
        .map(|i| {
            if i < offset {
                (Some(&ids[i]) == root.as_ref())
                    .then(|| initial_of(i, &c.initial))
                    .flatten()
            } else {
                initial_of(i, &c.states[i - offset].initial)
            }
        })
        .collect();
    for (n, i) in states.iter_mut().zip(initials) {
        n.initial = i;
    }
    let transitions = c
        .transitions
        .iter()
        .map(|t| {
            let actions: Vec<&str> = t.actions.iter().map(String::as_str).collect();
            Arrow {
                source: index[t.source.as_str()],
                targets: t.targets.iter().map(|x| index[x.as_str()]).collect(),
                label: arrow_label(
                    &t.source,
                    t.event.as_deref(),
                    t.delay.as_deref(),
                    t.guard.as_deref(),
                    &actions,
                ),
            }
        })
        .collect();
    let initial = if root.is_none() {
        c.initial
            .as_ref()
            .and_then(|x| index.get(x.as_str()).copied())
            .filter(|&x| states[x].parent.is_none())
    } else {
        None
    };
    Diagram {
        states,
        transitions,
        initial,
    }
}
