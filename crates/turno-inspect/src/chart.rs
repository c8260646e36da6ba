//! The statechart pane's pictures: a trace's `chart_define` (a
//! [`ChartView`]) drawn by turno-chart's renderer ([`turno_chart::svg`]),
//! the same drawing `turno chart svg` and the wizard make. A layout is made
//! once per definition and kept; the page re-marks the active states and
//! the transition just taken at every step.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use turno_chart::svg::{layout, Arrow, Diagram, Highlight, Layout, Node, NodeKind};
use turno_trace::actor::StateKind;
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
        (&c.machine, &c.states, &c.transitions).hash(&mut h);
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

/// The diagram of a recorded definition. Traces define the states below
/// the machine's root; a state named by a transition or the configuration
/// but not defined is that root, drawn around the rest.
pub(crate) fn diagram(c: &ChartView) -> Diagram {
    let mut ids: Vec<String> = Vec::new();
    let defined: HashMap<&str, usize> = c
        .states
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let mut undefined: Vec<String> = c
        .transitions
        .iter()
        .flat_map(|t| std::iter::once(&t.source).chain(t.targets.iter()))
        .chain(c.active.iter())
        .filter(|id| !defined.contains_key(id.as_str()))
        .cloned()
        .collect();
    undefined.sort();
    undefined.dedup();
    // The outermost undefined state (the shortest id) frames the others.
    undefined.sort_by_key(|id| id.len());
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
            kind: if is_root {
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
                StateKind::History => NodeKind::History { deep: false },
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
    let transitions = c
        .transitions
        .iter()
        .map(|t| Arrow {
            source: index[t.source.as_str()],
            targets: t.targets.iter().map(|x| index[x.as_str()]).collect(),
            label: t.event.clone().unwrap_or_else(|| "always".to_string()),
        })
        .collect();
    Diagram {
        states,
        transitions,
        initial: None,
    }
}
