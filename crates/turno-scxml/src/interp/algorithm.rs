//! The procedures of SCXML Appendix D, under their names there, so one can
//! be read against the other. Sets ordered by document order are
//! `BTreeSet<StateId>` (state ids are document order); the spec's
//! `OrderedSet` of transitions keeps insertion order in a `Vec`.

use std::collections::{BTreeSet, HashMap};

use super::{Host, Session};
use crate::event::Event;
use crate::model::{DoneData, HistoryKind, StateId, StateKind, TransitionId, ROOT};

impl Session {
    /// `selectEventlessTransitions`.
    pub(crate) fn select_eventless_transitions(&mut self) -> Vec<TransitionId> {
        self.select(None)
    }

    /// `selectTransitions(event)`.
    pub(crate) fn select_transitions(&mut self, event: &Event) -> Vec<TransitionId> {
        self.select(Some(event))
    }

    fn select(&mut self, event: Option<&Event>) -> Vec<TransitionId> {
        let doc = self.doc.clone();
        let mut enabled: Vec<TransitionId> = Vec::new();
        let atomic: Vec<StateId> = self
            .configuration
            .iter()
            .copied()
            .filter(|&s| doc.is_atomic(s))
            .collect();
        for state in atomic {
            'states: for s in std::iter::once(state).chain(doc.proper_ancestors(state, None)) {
                for &t in &doc.states[s].transitions {
                    let tr = &doc.transitions[t];
                    let event_ok = match event {
                        None => tr.events.is_empty(),
                        Some(e) => !tr.events.is_empty() && e.matches(&tr.events),
                    };
                    if event_ok && self.condition_match(t) {
                        if !enabled.contains(&t) {
                            enabled.push(t);
                        }
                        break 'states;
                    }
                }
            }
        }
        self.remove_conflicting_transitions(enabled)
    }

    /// `conditionMatch`: a guard that fails to evaluate is false and raises
    /// `error.execution`.
    fn condition_match(&mut self, t: TransitionId) -> bool {
        let Some(cond) = self.doc.transitions[t].cond.clone() else {
            return true;
        };
        match self.dm.eval_bool(&cond) {
            Ok(b) => b,
            Err(e) => {
                self.raise_error_execution(&format!("cond {cond:?}: {}", e.0));
                false
            }
        }
    }

    /// `removeConflictingTransitions`.
    fn remove_conflicting_transitions(&self, enabled: Vec<TransitionId>) -> Vec<TransitionId> {
        let mut filtered: Vec<TransitionId> = Vec::new();
        for t1 in enabled {
            let mut t1_preempted = false;
            let mut to_remove = Vec::new();
            let exit1 = self.compute_exit_set(&[t1]);
            for &t2 in &filtered {
                let exit2 = self.compute_exit_set(&[t2]);
                if !exit1.is_disjoint(&exit2) {
                    let s1 = self.doc.transitions[t1].source;
                    let s2 = self.doc.transitions[t2].source;
                    if self.doc.is_descendant(s1, s2) {
                        to_remove.push(t2);
                    } else {
                        t1_preempted = true;
                        break;
                    }
                }
            }
            if !t1_preempted {
                filtered.retain(|t| !to_remove.contains(t));
                filtered.push(t1);
            }
        }
        filtered
    }

    /// `microstep`.
    pub(crate) fn microstep(&mut self, enabled: &[TransitionId], host: &mut dyn Host) {
        self.exit_states(enabled, host);
        self.execute_transition_content(enabled, host);
        self.enter_states(enabled, host);
    }

    /// `exitStates`.
    fn exit_states(&mut self, enabled: &[TransitionId], host: &mut dyn Host) {
        let doc = self.doc.clone();
        let states_to_exit = self.compute_exit_set(enabled);
        for s in &states_to_exit {
            self.states_to_invoke.remove(s);
        }
        // Exit order: reverse document order.
        let exit_order: Vec<StateId> = states_to_exit.iter().rev().copied().collect();
        for &s in &exit_order {
            for &h in &doc.states[s].history {
                let deep = doc.states[h].kind == StateKind::History(HistoryKind::Deep);
                let remembered: Vec<StateId> = self
                    .configuration
                    .iter()
                    .copied()
                    .filter(|&s0| {
                        if deep {
                            doc.is_atomic(s0) && doc.is_descendant(s0, s)
                        } else {
                            doc.states[s0].parent == Some(s)
                        }
                    })
                    .collect();
                self.history_value.insert(h, remembered);
            }
        }
        for s in exit_order {
            for block in &doc.states[s].onexit {
                self.execute_block(block, host);
            }
            self.cancel_invocations_of(s, host);
            self.configuration.remove(&s);
            self.dm.set_active(&doc.states[s].id, false);
        }
    }

    /// `computeExitSet`.
    pub(crate) fn compute_exit_set(&self, transitions: &[TransitionId]) -> BTreeSet<StateId> {
        let mut out = BTreeSet::new();
        for &t in transitions {
            if !self.doc.transitions[t].targets.is_empty() {
                if let Some(domain) = self.get_transition_domain(t) {
                    for &s in &self.configuration {
                        if self.doc.is_descendant(s, domain) {
                            out.insert(s);
                        }
                    }
                }
            }
        }
        out
    }

    /// `executeTransitionContent`.
    fn execute_transition_content(&mut self, enabled: &[TransitionId], host: &mut dyn Host) {
        let doc = self.doc.clone();
        for &t in enabled {
            self.execute_block(&doc.transitions[t].content, host);
        }
    }

    /// `enterStates`.
    pub(crate) fn enter_states(&mut self, enabled: &[TransitionId], host: &mut dyn Host) {
        let doc = self.doc.clone();
        let mut states_to_enter = BTreeSet::new();
        let mut states_for_default_entry = BTreeSet::new();
        let mut default_history_content: HashMap<StateId, TransitionId> = HashMap::new();
        self.compute_entry_set(
            enabled,
            &mut states_to_enter,
            &mut states_for_default_entry,
            &mut default_history_content,
        );
        for s in states_to_enter {
            self.configuration.insert(s);
            self.states_to_invoke.insert(s);
            self.dm.set_active(&doc.states[s].id, true);
            if doc.binding == crate::model::Binding::Late {
                self.initialize_data(s);
            }
            for block in &doc.states[s].onentry {
                self.execute_block(block, host);
            }
            if states_for_default_entry.contains(&s) {
                if let Some(t) = doc.states[s].initial {
                    self.execute_block(&doc.transitions[t].content, host);
                }
            }
            if let Some(&t) = default_history_content.get(&s) {
                self.execute_block(&doc.transitions[t].content, host);
            }
            if doc.is_final(s) {
                let parent = doc.states[s].parent.unwrap_or(ROOT);
                if parent == ROOT {
                    self.running = false;
                } else {
                    let data = self.done_data(s);
                    self.internal_queue.push_back(Event::platform(
                        format!("done.state.{}", doc.states[parent].id),
                        data,
                    ));
                    if let Some(grandparent) = doc.states[parent].parent {
                        if doc.is_parallel(grandparent)
                            && doc.states[grandparent]
                                .children
                                .iter()
                                .all(|&c| self.is_in_final_state(c))
                        {
                            self.internal_queue.push_back(Event::platform(
                                format!("done.state.{}", doc.states[grandparent].id),
                                None,
                            ));
                        }
                    }
                }
            }
        }
    }

    /// Evaluates the `<donedata>` of final state `s`; an error raises
    /// `error.execution` and gives no data.
    pub(crate) fn done_data(&mut self, s: StateId) -> Option<serde_json::Value> {
        let doc = self.doc.clone();
        match doc.states[s].donedata.as_ref()? {
            DoneData::Content(c) => match self.content_data(c) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.raise_error_execution(&e.0);
                    None
                }
            },
            DoneData::Params(params) => match self.params_data(params, &[]) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.raise_error_execution(&e.0);
                    None
                }
            },
        }
    }

    /// `computeEntrySet`.
    fn compute_entry_set(
        &self,
        transitions: &[TransitionId],
        states_to_enter: &mut BTreeSet<StateId>,
        states_for_default_entry: &mut BTreeSet<StateId>,
        default_history_content: &mut HashMap<StateId, TransitionId>,
    ) {
        for &t in transitions {
            for &s in &self.doc.transitions[t].targets {
                self.add_descendant_states_to_enter(
                    s,
                    states_to_enter,
                    states_for_default_entry,
                    default_history_content,
                );
            }
            let ancestor = self.get_transition_domain(t);
            for s in self.get_effective_target_states(t) {
                self.add_ancestor_states_to_enter(
                    s,
                    ancestor,
                    states_to_enter,
                    states_for_default_entry,
                    default_history_content,
                );
            }
        }
    }

    /// `addDescendantStatesToEnter`.
    fn add_descendant_states_to_enter(
        &self,
        state: StateId,
        states_to_enter: &mut BTreeSet<StateId>,
        states_for_default_entry: &mut BTreeSet<StateId>,
        default_history_content: &mut HashMap<StateId, TransitionId>,
    ) {
        let doc = &self.doc;
        if doc.is_history(state) {
            let parent = doc.states[state].parent;
            let targets: Vec<StateId> = match self.history_value.get(&state) {
                Some(v) => v.clone(),
                None => {
                    let t = doc.states[state]
                        .history_default
                        .expect("the loader requires a history default transition");
                    if let Some(p) = parent {
                        default_history_content.insert(p, t);
                    }
                    doc.transitions[t].targets.clone()
                }
            };
            for &s in &targets {
                self.add_descendant_states_to_enter(
                    s,
                    states_to_enter,
                    states_for_default_entry,
                    default_history_content,
                );
            }
            for &s in &targets {
                self.add_ancestor_states_to_enter(
                    s,
                    parent,
                    states_to_enter,
                    states_for_default_entry,
                    default_history_content,
                );
            }
        } else {
            states_to_enter.insert(state);
            if doc.is_compound(state) {
                states_for_default_entry.insert(state);
                let t = doc.states[state]
                    .initial
                    .expect("the loader gives every compound state an initial transition");
                for &s in &doc.transitions[t].targets {
                    self.add_descendant_states_to_enter(
                        s,
                        states_to_enter,
                        states_for_default_entry,
                        default_history_content,
                    );
                }
                for &s in &doc.transitions[t].targets {
                    self.add_ancestor_states_to_enter(
                        s,
                        Some(state),
                        states_to_enter,
                        states_for_default_entry,
                        default_history_content,
                    );
                }
            } else if doc.is_parallel(state) {
                for &child in &doc.states[state].children {
                    if !states_to_enter
                        .iter()
                        .any(|&s| s == child || doc.is_descendant(s, child))
                    {
                        self.add_descendant_states_to_enter(
                            child,
                            states_to_enter,
                            states_for_default_entry,
                            default_history_content,
                        );
                    }
                }
            }
        }
    }

    /// `addAncestorStatesToEnter`.
    fn add_ancestor_states_to_enter(
        &self,
        state: StateId,
        ancestor: Option<StateId>,
        states_to_enter: &mut BTreeSet<StateId>,
        states_for_default_entry: &mut BTreeSet<StateId>,
        default_history_content: &mut HashMap<StateId, TransitionId>,
    ) {
        let doc = &self.doc;
        for anc in doc.proper_ancestors(state, ancestor) {
            if anc == ROOT {
                // The <scxml> element is never part of the configuration.
                break;
            }
            states_to_enter.insert(anc);
            if doc.is_parallel(anc) {
                for &child in &doc.states[anc].children {
                    if !states_to_enter
                        .iter()
                        .any(|&s| s == child || doc.is_descendant(s, child))
                    {
                        self.add_descendant_states_to_enter(
                            child,
                            states_to_enter,
                            states_for_default_entry,
                            default_history_content,
                        );
                    }
                }
            }
        }
    }

    /// `isInFinalState`.
    pub(crate) fn is_in_final_state(&self, s: StateId) -> bool {
        let doc = &self.doc;
        if doc.is_compound(s) {
            doc.states[s]
                .children
                .iter()
                .any(|&c| doc.is_final(c) && self.configuration.contains(&c))
        } else if doc.is_parallel(s) {
            doc.states[s]
                .children
                .iter()
                .all(|&c| self.is_in_final_state(c))
        } else {
            false
        }
    }

    /// `getTransitionDomain`.
    fn get_transition_domain(&self, t: TransitionId) -> Option<StateId> {
        let tr = &self.doc.transitions[t];
        let tstates = self.get_effective_target_states(t);
        if tstates.is_empty() {
            return None;
        }
        if tr.source == ROOT {
            return Some(ROOT);
        }
        if tr.internal
            && self.doc.is_compound(tr.source)
            && tstates
                .iter()
                .all(|&s| self.doc.is_descendant(s, tr.source))
        {
            return Some(tr.source);
        }
        let mut list = vec![tr.source];
        list.extend(tstates);
        Some(self.find_lcca(&list))
    }

    /// `findLCCA`: the least common compound ancestor (the root counts).
    fn find_lcca(&self, states: &[StateId]) -> StateId {
        let doc = &self.doc;
        for anc in doc.proper_ancestors(states[0], None) {
            if (anc == ROOT || doc.is_compound(anc))
                && states[1..].iter().all(|&s| doc.is_descendant(s, anc))
            {
                return anc;
            }
        }
        ROOT
    }

    /// `getEffectiveTargetStates`.
    fn get_effective_target_states(&self, t: TransitionId) -> BTreeSet<StateId> {
        let mut targets = BTreeSet::new();
        for &s in &self.doc.transitions[t].targets {
            if self.doc.is_history(s) {
                match self.history_value.get(&s) {
                    Some(v) => targets.extend(v.iter().copied()),
                    None => {
                        if let Some(d) = self.doc.states[s].history_default {
                            targets.extend(self.get_effective_target_states(d));
                        }
                    }
                }
            } else {
                targets.insert(s);
            }
        }
        targets
    }

    /// `exitInterpreter`: onexit of every active state, innermost first; a
    /// top-level final state sends `done.invoke` with its donedata when
    /// `halted` (not when cancelled).
    pub(crate) fn exit_interpreter(&mut self, host: &mut dyn Host, halted: bool) {
        let doc = self.doc.clone();
        self.final_configuration = Some(self.configuration.iter().copied().collect());
        let states: Vec<StateId> = self.configuration.iter().rev().copied().collect();
        let mut done = None;
        for s in states {
            for block in &doc.states[s].onexit {
                self.execute_block(block, host);
            }
            self.cancel_invocations_of(s, host);
            self.configuration.remove(&s);
            self.dm.set_active(&doc.states[s].id, false);
            if halted && doc.is_final(s) && doc.states[s].parent == Some(ROOT) {
                done = Some(self.done_data(s));
            }
        }
        if let Some(data) = done {
            host.done(&self.sessionid, data);
        }
    }
}
