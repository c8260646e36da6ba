//! Shortest and simple paths through an SCXML document's states, as
//! `turno_chart::paths` finds them for XState JSON machines (what `turno
//! chart paths FILE.scxml` prints).
//!
//! A session cannot be cloned (its data model holds an engine's state), so
//! each state is reached by replaying its path from the start. A state is
//! told apart by its configuration, whether the session still runs, its
//! `<data>` values and the delayed events pending with the time they have
//! left. From each state the [`Explorer`] tries every event a transition of
//! an active state names (exact descriptors: no wildcard, none of the
//! platform's `done.*` and `error.*`), in document order, and, when delayed
//! events are pending, a time advance to the next deadline.
//!
//! ```
//! use turno_scxml::paths::Explorer;
//! let doc = turno_scxml::load_str(r#"<scxml initial="a">
//!     <state id="a"><transition event="next" target="b"/><transition event="skip" target="c"/></state>
//!     <state id="b"><transition event="next" target="c"/></state>
//!     <final id="c"/></scxml>"#, None).unwrap();
//! let paths = Explorer::new(&doc).shortest_paths().unwrap();
//! let to_c = paths.iter().find(|p| p.value == "c").unwrap();
//! assert_eq!(to_c.steps.len(), 1);
//! assert_eq!(Explorer::new(&doc).simple_paths().unwrap().len(), 4);
//! ```

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::event::Event;
use crate::model::{Document, StateId};
use crate::processor::Processor;
use crate::script::{state_value, Item};

/// A path and the state it leads to.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The items that reach the state from the start.
    pub steps: Vec<Item>,
    /// The configuration, as [`script::state_value`](crate::script::state_value) shows it.
    pub value: Value,
    /// Whether the session still runs.
    pub running: bool,
    /// Its `<data>` values ([`Session::data`](crate::Session::data)).
    pub data: Value,
}

/// Why exploring failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathsError {
    /// The session could not start, ran away or failed.
    #[error("{0}")]
    Run(String),
    /// More states than the limit.
    #[error("more than {0} states (or paths); raise the limit")]
    TooMany(usize),
}

/// Walks a document's state space. See the [module docs](self).
pub struct Explorer {
    doc: Arc<Document>,
    limit: usize,
}

/// Where a replayed path leads.
struct Probe {
    found: Found,
    key: String,
    next: Vec<Item>,
}

impl Explorer {
    /// An explorer of `doc`, stopping after 10,000 states (or paths).
    pub fn new(doc: &Document) -> Self {
        Explorer {
            doc: Arc::new(doc.clone()),
            limit: 10_000,
        }
    }

    /// Gives up after `n` states (or paths).
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = n;
        self
    }

    /// Runs `steps` from the start and looks at where they lead.
    fn probe(&self, steps: Vec<Item>) -> Result<Probe, PathsError> {
        let run = |e: crate::processor::RunError| PathsError::Run(e.to_string());
        let mut sys = Processor::new();
        let root = sys
            .start(self.doc.clone())
            .map_err(|e| PathsError::Run(format!("start: {e}")))?;
        sys.run_until(0.0).map_err(run)?;
        for item in &steps {
            match item {
                Item::Event(e) => {
                    sys.send(root, e.clone());
                    sys.run_until(sys.now_ms()).map_err(run)?;
                }
                Item::Advance(ms) => sys.run_until(sys.now_ms() + *ms as f64).map_err(run)?,
            }
        }
        let session = sys
            .session(root)
            .ok_or_else(|| PathsError::Run("the session is gone".into()))?;
        if let Some(f) = session.failure() {
            return Err(PathsError::Run(f.to_owned()));
        }
        let config = session.configuration();
        let running = sys.is_running(root);
        let data = session.data();
        let pending = sys.pending();
        let value = state_value(&self.doc, &config);
        let key = json!({"value": value, "running": running, "data": data, "pending": pending})
            .to_string();
        let mut next = Vec::new();
        if running {
            next.extend(
                handled_events(&self.doc, &config)
                    .into_iter()
                    .map(|name| Item::Event(Event::external(name, None))),
            );
            if let Some(&(ms, _)) = pending.iter().min() {
                next.push(Item::Advance(ms));
            }
        }
        Ok(Probe {
            found: Found {
                steps,
                value,
                running,
                data,
            },
            key,
            next,
        })
    }

    /// Every reachable state once, with a shortest path to it (the initial
    /// state first, then in the order found).
    pub fn shortest_paths(&self) -> Result<Vec<Found>, PathsError> {
        let first = self.probe(Vec::new())?;
        let mut seen: HashMap<String, usize> = HashMap::from([(first.key.clone(), 0)]);
        let mut found = vec![first.found];
        let mut queue = VecDeque::from([(0usize, first.next)]);
        while let Some((i, next)) = queue.pop_front() {
            for item in next {
                let mut steps = found[i].steps.clone();
                steps.push(item);
                let p = self.probe(steps)?;
                if seen.contains_key(&p.key) {
                    continue;
                }
                if found.len() >= self.limit {
                    return Err(PathsError::TooMany(self.limit));
                }
                seen.insert(p.key, found.len());
                queue.push_back((found.len(), p.next));
                found.push(p.found);
            }
        }
        Ok(found)
    }

    /// Every path from the start that visits no state twice (depth first,
    /// in the order events are tried), including the empty path.
    pub fn simple_paths(&self) -> Result<Vec<Found>, PathsError> {
        let first = self.probe(Vec::new())?;
        let mut on_path = HashSet::from([first.key.clone()]);
        let mut out = vec![first.found.clone()];
        self.dfs(&first, &mut on_path, &mut out)?;
        Ok(out)
    }

    fn dfs(
        &self,
        here: &Probe,
        on_path: &mut HashSet<String>,
        out: &mut Vec<Found>,
    ) -> Result<(), PathsError> {
        for item in &here.next {
            let mut steps = here.found.steps.clone();
            steps.push(item.clone());
            let p = self.probe(steps)?;
            if on_path.contains(&p.key) {
                continue;
            }
            if out.len() >= self.limit {
                return Err(PathsError::TooMany(self.limit));
            }
            out.push(p.found.clone());
            on_path.insert(p.key.clone());
            self.dfs(&p, on_path, out)?;
            on_path.remove(&p.key);
        }
        Ok(())
    }
}

/// The events the transitions of the active states (and their ancestors)
/// name exactly, in document order, each once: no wildcard, none of the
/// platform's `done.*` and `error.*` events.
pub fn handled_events(doc: &Document, config: &[StateId]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for &s in config {
        for &t in &doc.states[s].transitions {
            for d in &doc.transitions[t].events {
                let own = d.starts_with("done.") || d.starts_with("error.");
                if !own && !d.contains('*') && !out.contains(d) {
                    out.push(d.clone());
                }
            }
        }
    }
    out
}
