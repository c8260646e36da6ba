//! A [`Tree`] persisted and restored: the root's document with each
//! running child chart's document under `charts.<invocation id>`,
//! recursively, read whole before anything is resumed.

use super::*;
use crate::tree::{walk, walk_mut, Child, Path, Tagged};

/// A restored tree of charts: the tree, the actions that resume it (each
/// naming its chart), and what was decided per in-flight invocation.
pub struct RestoredTree<C> {
    /// The tree to resume from.
    pub tree: Tree<C>,
    /// What the owner carries out, in order: timers to re-arm (every
    /// chart's), idempotent invocations to re-run, the effects of overdue
    /// events and safe-state entries.
    pub actions: Vec<Tagged>,
    /// Per in-flight invocation (the chart's path and the invocation id),
    /// what was decided; invoked charts are [`InFlight::Resume`].
    pub decisions: Decisions,
    /// The volatile fields dropped when persisting, per chart.
    pub volatile_missing: Vec<(Path, String)>,
}

/// Per in-flight invocation (the chart's path, the invocation id), what
/// the restore decided.
pub type Decisions = Vec<(Path, String, InFlight)>;

/// What the owner does with actions while the restore fires overdue
/// events; it returns those it did not carry out.
pub(crate) type Settle<'a, C> =
    &'a mut dyn FnMut(&mut Tree<C>, &Machine<C>, Vec<Tagged>) -> Result<Vec<Tagged>, ChartError>;

impl<C: Clone> Persist<'_, C> {
    /// The rules for a child chart: this sanitizer and resume, the child
    /// machine's own volatile paths (its root's `meta.volatile`).
    fn for_child<'c>(&self, m: &'c Machine<C>) -> Persist<'c, C> {
        Persist::new(m)
            .sanitizer(self.sanitizer.clone())
            .resume(self.resume)
    }
}

/// `$...` of a child's document, as a path in its parent's.
fn under(at: &str, e: SnapshotError) -> SnapshotError {
    let rest = e.path.strip_prefix('$').unwrap_or(&e.path);
    err(format!("{at}{rest}"), e.problem)
}

fn chart_path(at: &str, id: &str) -> String {
    format!("{at}.charts.{id}")
}

impl<C: Clone + Serialize> Persist<'_, C> {
    /// The whole tree as one document: the root's, with every running
    /// child chart's document nested under `charts.<invocation id>`.
    pub fn tree_to_value(&self, tree: &Tree<C>) -> Result<Value, PersistError> {
        let charts = children_docs(self, &tree.children, "$")?;
        self.to_value_with_charts(&tree.root, charts)
    }

    /// [`tree_to_value`](Self::tree_to_value) as JSON text.
    pub fn tree_to_string(&self, tree: &Tree<C>) -> Result<String, PersistError> {
        Ok(self.tree_to_value(tree)?.to_string())
    }
}

fn children_docs<C: Clone + Serialize>(
    p: &Persist<'_, C>,
    children: &[Child<C>],
    at: &str,
) -> Result<Vec<(String, Value)>, PersistError> {
    children
        .iter()
        .map(|c| {
            let cp = p.for_child(&c.machine);
            let here = chart_path(at, &c.id);
            let charts = children_docs(&cp, &c.children, &here)?;
            let doc = cp
                .to_value_with_charts(&c.snapshot, charts)
                .map_err(|e| match e {
                    PersistError::VolatileLeak { path } if path.starts_with('$') => {
                        PersistError::VolatileLeak {
                            path: format!("{here}{}", &path[1..]),
                        }
                    }
                    e => e,
                })?;
            Ok((c.id.clone(), doc))
        })
        .collect()
}

impl<C: Clone + DeserializeOwned> Persist<'_, C> {
    /// Parses and checks a persisted tree: the root's document and, for
    /// every in-flight invocation of a chart in `charts`, its nested
    /// document (checked against that chart's machine; errors name the
    /// path, e.g. `$.charts.timer.configuration[1]`). No sanitizing.
    pub fn read_tree(&self, text: &str, charts: Arc<Charts<C>>) -> Result<Tree<C>, SnapshotError> {
        let (snap, _, docs) = self.read_value(parse(text)?)?;
        let children = read_children(
            self,
            &charts,
            &snap,
            docs,
            "$",
            &mut Vec::new(),
            &mut Vec::new(),
        )?;
        let mut tree = Tree::new(snap, charts);
        tree.children = children.into();
        Ok(tree)
    }

    /// Reads a persisted tree and resumes it at `at`, as
    /// [`restore`](Self::restore) does for one chart, over the whole tree:
    /// every document is read and checked before anything resumes
    /// (nothing is half-restored); then delayed events of every chart keep
    /// their deadlines and those that fell due fire in deadline order
    /// across the tree, with what they cause between charts; then
    /// transient states and in-flight invocations are sanitized chart by
    /// chart. An invoked child chart is never re-run: it resumes in the
    /// state its snapshot holds ([`InFlight::Resume`]).
    pub fn restore_tree(
        &self,
        text: &str,
        charts: Arc<Charts<C>>,
        at: impl Into<Clock>,
    ) -> Result<RestoredTree<C>, RestoreError> {
        self.restore_tree_with(text, charts, at.into(), &mut |_, _, a| Ok(a))
    }

    /// [`restore_tree`](Self::restore_tree), with `settle` given the
    /// actions of each overdue event as it fires (`turno chart run`
    /// settles its pure actors there, as it does between items).
    pub(crate) fn restore_tree_with(
        &self,
        text: &str,
        charts: Arc<Charts<C>>,
        at: Clock,
        settle: Settle<'_, C>,
    ) -> Result<RestoredTree<C>, RestoreError> {
        let (snap, vol, docs) = self.read_value(parse(text)?)?;
        let mut volatile_missing: Vec<(Path, String)> =
            vol.into_iter().map(|v| (Vec::new(), v)).collect();
        let children = read_children(
            self,
            &charts,
            &snap,
            docs,
            "$",
            &mut volatile_missing,
            &mut Vec::new(),
        )?;
        let mut tree = Tree::new(snap, charts);
        tree.children = children.into();
        let (actions, decisions) = self.resume_tree(&mut tree, at, settle)?;
        Ok(RestoredTree {
            tree,
            actions,
            decisions,
            volatile_missing,
        })
    }
}

/// The child charts of `parent` from its document's `charts`: one per
/// listed child of a registered chart (in flight, then finished), and no
/// other.
fn read_children<C: Clone + DeserializeOwned>(
    p: &Persist<'_, C>,
    charts: &Charts<C>,
    parent: &Snapshot<C>,
    docs: Vec<(String, Value)>,
    at: &str,
    volatile_missing: &mut Vec<(Path, String)>,
    path: &mut Path,
) -> Result<Vec<Child<C>>, SnapshotError> {
    let mut docs: BTreeMap<String, Value> = docs.into_iter().collect();
    let mut out = Vec::new();
    let listed = parent
        .invocations
        .iter()
        .map(|i| (i, Status::Active))
        .chain(parent.finished.iter().map(|f| (&f.child, f.status)));
    for (inv, listed_as) in listed {
        let Some(m) = charts.get(&inv.src) else {
            continue;
        };
        let here = chart_path(at, &inv.id);
        let Some(doc) = docs.remove(&inv.id) else {
            return Err(err(
                here,
                SnapshotProblem::Inconsistent(format!(
                    "the chart {:?} invoked as {:?} is in flight, but its snapshot is missing",
                    inv.src, inv.id
                )),
            ));
        };
        let cp = p.for_child(m);
        let (snap, vol, sub) = cp.read_value(doc).map_err(|e| under(&here, e))?;
        // A child chart that finishes is delivered to its parent at once:
        // one in flight is active, one listed as finished is not.
        let consistent = match listed_as {
            Status::Active => snap.status == Status::Active,
            _ => snap.status != Status::Active,
        };
        if !consistent {
            return Err(err(
                format!("{here}.status"),
                SnapshotProblem::Inconsistent(format!(
                    "the child chart is {} but its parent lists it as {}",
                    snap.status.as_str(),
                    listed_as.as_str()
                )),
            ));
        }
        path.push(inv.id.clone());
        volatile_missing.extend(vol.into_iter().map(|v| (path.clone(), v)));
        let children = read_children(&cp, charts, &snap, sub, &here, volatile_missing, path)?;
        path.pop();
        let mut snap = snap;
        snap.has_parent = true;
        out.push(Child {
            id: inv.id.clone(),
            generation: inv.generation,
            machine: m.clone(),
            snapshot: snap,
            children: children.into(),
        });
    }
    if let Some(id) = docs.into_keys().next() {
        return Err(err(
            chart_path(at, &id),
            SnapshotProblem::Inconsistent(format!(
                "no invocation {id:?} of a registered chart is in flight here"
            )),
        ));
    }
    Ok(out)
}

/// Every chart's path with its snapshot, the root first, then children
/// depth first in start order.
fn nodes<C>(tree: &Tree<C>) -> Vec<(Path, &Snapshot<C>)> {
    let mut v = vec![(Vec::new(), &tree.root)];
    walk(&tree.children, &mut Vec::new(), &mut |p, c| {
        v.push((p.to_vec(), &c.snapshot))
    });
    v
}

impl<C: Clone> Persist<'_, C> {
    /// The resume of a read tree (see [`restore_tree`](Self::restore_tree)).
    pub(crate) fn resume_tree(
        &self,
        tree: &mut Tree<C>,
        at: Clock,
        settle: Settle<'_, C>,
    ) -> Result<(Vec<Tagged>, Decisions), RestoreError> {
        let m = self.m;
        let persisted_ms = tree.root.now_ms;
        // Where the snapshot's clock is now, and how its times map onto
        // this clock (`shift`, added to every time once resumed).
        let (now_ms, shift) = match (tree.root.epoch_ms, at.epoch_ms) {
            (Some(then), Some(here)) => {
                let wall = here.saturating_add(at.now_ms);
                // A wall clock set back never moves the chart backwards:
                // no time has passed.
                let now = wall.saturating_sub(then).max(persisted_ms);
                (now, i128::from(at.now_ms) - i128::from(now))
            }
            _ => (at.now_ms, 0),
        };
        // 1. Delayed events, in deadline order across the tree.
        let resume = self.resume;
        let adjust = |s: &mut Snapshot<C>| {
            let persisted = s.now_ms;
            for e in &mut s.scheduled {
                e.due_ms = match resume {
                    Resume::Deadline => e.due_ms,
                    Resume::Remaining => now_ms.saturating_add(e.due_ms.saturating_sub(persisted)),
                    Resume::Restart => now_ms.saturating_add(e.delay_ms),
                };
            }
        };
        adjust(&mut tree.root);
        walk_mut(&mut tree.children, &mut |c| adjust(&mut c.snapshot));
        // The invocations nobody is running any more (invoked charts are
        // part of the tree: they are not gone).
        let dead: Vec<(Path, String, u64)> = nodes(tree)
            .into_iter()
            .flat_map(|(p, s)| {
                s.invocations
                    .iter()
                    .filter(|i| tree.chart(&i.src).is_none())
                    .map(move |i| (p.clone(), i.id.clone(), i.generation))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut resumed = Vec::new();
        while let Some((path, id, seq, _)) = tree.next_due(now_ms) {
            let (_, acts) = tree.fire(m, &path, &id, seq)?;
            resumed.extend(settle(tree, m, acts)?);
        }
        tree.set_now(now_ms);
        // 2. Transient states: the root's rules must name its states; a
        // child chart takes the rules whose states it has.
        for (state, target) in &self.sanitizer.transient {
            let s = m
                .state_by_id(state)
                .ok_or_else(|| RestoreError::UnknownTarget(state.clone()))?;
            let t = m
                .state_by_id(target)
                .ok_or_else(|| RestoreError::UnknownTarget(target.clone()))?;
            let mut paths = vec![Vec::new()];
            paths.extend(tree.paths());
            for path in paths {
                let ids = if path.is_empty() {
                    Some((s, t))
                } else {
                    tree.child_machine(&path)
                        .and_then(|cm| Some((cm.state_by_id(state)?, cm.state_by_id(target)?)))
                };
                let Some((s, t)) = ids else { continue };
                let mut acts = Vec::new();
                let ran = tree.on(m, &path, |cm, snap| {
                    if !snap.config.contains(s) {
                        return Ok(false);
                    }
                    let ev = Event::with_data("turno.restore", json!({"state": state}));
                    Run::new(cm, snap, &mut acts)
                        .goto(s, &[t], ev)
                        .map(|()| true)
                });
                if let Some(true) = ran.transpose()? {
                    let out = tree.absorb(m, &path, acts)?;
                    resumed.extend(settle(tree, m, out)?);
                }
            }
        }
        // 3. In-flight invocations (those still in flight after 1 and 2),
        // chart by chart.
        let mut decisions = Vec::new();
        let mut paths = vec![Vec::new()];
        paths.extend(tree.paths());
        for path in paths {
            let Some(snap) = tree.snapshot_at(&path) else {
                continue; // stopped by an earlier decision
            };
            let here: Vec<Invocation> = snap.invocations.to_vec();
            for inv in here {
                if tree.chart(&inv.src).is_some() {
                    decisions.push((path.clone(), inv.id.clone(), InFlight::Resume));
                    continue;
                }
                if !dead.contains(&(path.clone(), inv.id.clone(), inv.generation)) {
                    continue; // started during the restore
                }
                let still = tree.snapshot_at(&path).is_some_and(|s| {
                    s.invocations
                        .iter()
                        .any(|i| i.id == inv.id && i.generation == inv.generation)
                });
                if !still {
                    continue; // left by an earlier decision
                }
                let d = self.sanitizer.decision(&inv);
                match &d {
                    InFlight::Rerun if !self.sanitizer.is_idempotent(&inv.src) => {
                        return Err(RestoreError::InFlight {
                            id: inv.id,
                            src: inv.src,
                            reason: "only sources registered as idempotent are re-run".into(),
                        })
                    }
                    InFlight::Rerun => resumed.push(Tagged {
                        path: path.clone(),
                        action: Action::StartInvoke {
                            id: inv.id.clone(),
                            src: inv.src.clone(),
                            input: inv.input.clone(),
                            generation: inv.generation,
                        },
                    }),
                    InFlight::SafeState(_) if inv.spawned => {
                        return Err(RestoreError::InFlight {
                            id: inv.id,
                            src: inv.src,
                            reason: "a spawned child is tied to no state to leave for a safe one"
                                .into(),
                        })
                    }
                    InFlight::SafeState(target) => {
                        let mut acts = Vec::new();
                        tree.on(m, &path, |cm, snap| {
                            let t = cm
                                .state_by_id(target)
                                .ok_or_else(|| RestoreError::UnknownTarget(target.clone()))?;
                            let s = cm
                                .state_by_id(&inv.state)
                                .ok_or_else(|| RestoreError::UnknownTarget(inv.state.clone()))?;
                            let ev = Event::with_data(
                                "turno.restore",
                                json!({"invocation": inv.id, "src": inv.src, "input": inv.input,
                                       "started_ms": inv.started_ms}),
                            );
                            Run::new(cm, snap, &mut acts).goto(s, &[t], ev)?;
                            Ok::<(), RestoreError>(())
                        })
                        .transpose()?;
                        let out = tree.absorb(m, &path, acts)?;
                        resumed.extend(settle(tree, m, out)?);
                    }
                    InFlight::Fail(reason) => {
                        return Err(RestoreError::InFlight {
                            id: inv.id,
                            src: inv.src,
                            reason: reason.clone(),
                        })
                    }
                    InFlight::Resume => {
                        return Err(RestoreError::InFlight {
                            id: inv.id,
                            src: inv.src,
                            reason: "only invoked charts resume from their snapshot".into(),
                        })
                    }
                }
                decisions.push((path.clone(), inv.id.clone(), d));
            }
        }
        // Stopping what was never restarted is no action; re-running
        // something later stopped is cancelled out. Timers are armed from
        // what is left to fire, below.
        let reran: Vec<(Path, String, u64)> = resumed
            .iter()
            .filter_map(|t| match &t.action {
                Action::StartInvoke { id, generation, .. } => {
                    Some((t.path.clone(), id.clone(), *generation))
                }
                _ => None,
            })
            .collect();
        resumed.retain(|t| match &t.action {
            Action::StopInvoke { id, generation } => {
                let k = (t.path.clone(), id.clone(), *generation);
                !dead.contains(&k) || reran.contains(&k)
            }
            Action::Schedule { .. } | Action::Unschedule { .. } => false,
            _ => true,
        });
        let mut arms: Vec<(u64, usize, u64, Tagged)> = Vec::new();
        for (order, (path, snap)) in nodes(tree).into_iter().enumerate() {
            for e in &snap.scheduled {
                arms.push((
                    e.due_ms,
                    order,
                    e.seq,
                    Tagged {
                        path: path.clone(),
                        action: Action::Schedule {
                            id: e.id.clone(),
                            seq: e.seq,
                            due_ms: e.due_ms,
                        },
                    },
                ));
            }
        }
        arms.sort_by_key(|a| (a.0, a.1, a.2));
        let mut actions: Vec<Tagged> = arms.into_iter().map(|a| a.3).collect();
        actions.extend(resumed);
        for t in &mut actions {
            if let Action::Schedule { due_ms, .. } = &mut t.action {
                *due_ms = shifted(*due_ms, shift);
            }
        }
        let place = |s: &mut Snapshot<C>| {
            rebase(s, shift);
            s.epoch_ms = at.epoch_ms.or(s.epoch_ms);
            s.now_ms = s.now_ms.max(at.now_ms);
        };
        place(&mut tree.root);
        walk_mut(&mut tree.children, &mut |c| place(&mut c.snapshot));
        Ok((actions, decisions))
    }
}
