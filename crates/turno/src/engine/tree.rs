//! The supervision tree: who is whose child, registering a spawned actor,
//! stopping (children first), restarting, finalizing, and a supervisor's
//! answer to a child's failure.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, BuildHasherDefault};

use hashbrown::hash_table::{Entry, HashTable};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::slot::{Slot, ThinSlot, BUSY, FAILED, STOPPING};
use super::{Engine, Flow};
use crate::actor::SpawnError;
use crate::cell::AnyCell;
use crate::effects::{Effects, Spawned};
use crate::ids::ActorId;
use crate::ids::ActorPath;
use crate::ids::ROOT;
use crate::supervision::{Directive, ExitReason, Failure, RestartLog, Strategy, Supervision};
use crate::system_lane::{Control, Signal};
use crate::time::Instant;
use crate::trace::ActorEvent;

/// What happens once a stopping actor's children have all stopped.
#[derive(Clone, Debug)]
pub(super) enum Then {
    Finalize(ExitReason),
    Restart(u32),
}

/// The parts of an actor's place in the tree most actors never use
/// (children, watchers, restarts, wait-for edges, a pending stop, a
/// supervision other than the default), made on first use in the tree's
/// [`Rares`]. What every actor needs is its slot, in [`Nodes`], whose
/// header has the parent's id; whether it was named (its path is in the
/// system's path index) is its mailbox's to say. An idle leaf actor so
/// costs its map entry and nothing else.
#[derive(Default)]
pub(super) struct NodeRare {
    /// Ids grow with spawn order, so this is also start order (restarts keep
    /// the id and the position), as rest-for-one needs.
    pub(super) children: BTreeSet<ActorId>,
    /// How it supervises its children (`None`: the default).
    pub(super) supervision: Option<Supervision>,
    pub(super) restarts: RestartLog,
    /// Receivers whose mailboxes mute this actor.
    pub(super) waiting_on: Vec<ActorId>,
    /// Actors told when this one stops.
    pub(super) watchers: Vec<ActorId>,
    /// Set while waiting for children to stop.
    pub(super) then: Option<Then>,
    /// Times restarted.
    pub(super) restart_count: u32,
    /// The end of a simulated busy period (`Context::simulate_work` under
    /// the deterministic scheduler, with `BUSY` set in the slot's state),
    /// in nanoseconds; 0: none. Here, not in the slot, because no other
    /// scheduler simulates work.
    pub(super) busy_until: u64,
}

/// The path, kept by the mailbox (part of the slot, so always there).
pub(super) fn path_of(slot: &Slot) -> ActorPath {
    slot.mailbox().path().clone()
}

/// The map of live actors: each entry is the actor's slot, held thin
/// ([`ThinSlot`], one word), keyed by the id the slot keeps, and the
/// parent's id is in the slot's header too, so an entry is a word and a
/// control byte, times the table's slack (a node of the slot, the parent
/// and the rare parts' box was three words; a map with its own copy of the
/// key, four). Actor ids are sequential and never reused, so a
/// multiplicative hash spreads them as well as SipHash would, for much
/// less.
#[derive(Default)]
pub(super) struct Nodes {
    table: HashTable<ThinSlot>,
}

impl Nodes {
    fn hash(id: ActorId) -> u64 {
        BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(id)
    }

    /// The slot of `id`, if it is alive.
    pub(super) fn get(&self, id: &ActorId) -> Option<&ThinSlot> {
        self.table.find(Self::hash(*id), |n| n.id() == *id)
    }

    pub(super) fn contains_key(&self, id: &ActorId) -> bool {
        self.get(id).is_some()
    }

    /// Adds `slot` under its id, returning the slot it replaces.
    pub(super) fn insert(&mut self, slot: ThinSlot) -> Option<ThinSlot> {
        let id = slot.id();
        let hash = Self::hash(id);
        match self
            .table
            .entry(hash, |n| n.id() == id, |n| Self::hash(n.id()))
        {
            Entry::Occupied(mut e) => Some(std::mem::replace(e.get_mut(), slot)),
            Entry::Vacant(e) => {
                e.insert(slot);
                None
            }
        }
    }

    pub(super) fn remove(&mut self, id: &ActorId) -> Option<ThinSlot> {
        let hash = Self::hash(*id);
        match self.table.find_entry(hash, |n| n.id() == *id) {
            Ok(e) => Some(e.remove().0),
            Err(_) => None,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Every live actor's slot, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &ThinSlot> {
        self.table.iter()
    }
}

/// The rare parts of the live actors that have any, by id: an entry is
/// made by [`Tree::rare`] (for a live actor only) and goes with the
/// actor's slot when it is finalized.
#[derive(Default)]
pub(super) struct Rares {
    map: rustc_hash::FxHashMap<ActorId, Box<NodeRare>>,
}

impl Rares {
    pub(super) fn get(&self, id: ActorId) -> Option<&NodeRare> {
        self.map.get(&id).map(|r| &**r)
    }

    pub(super) fn get_mut(&mut self, id: ActorId) -> Option<&mut NodeRare> {
        self.map.get_mut(&id).map(|r| &mut **r)
    }

    pub(super) fn remove(&mut self, id: ActorId) -> Option<Box<NodeRare>> {
        self.map.remove(&id)
    }

    /// Times restarted.
    pub(super) fn restart_count(&self, id: ActorId) -> u32 {
        self.get(id).map_or(0, |r| r.restart_count)
    }

    pub(super) fn then(&self, id: ActorId) -> Option<&Then> {
        self.get(id).and_then(|r| r.then.as_ref())
    }

    pub(super) fn waiting_on(&self, id: ActorId) -> &[ActorId] {
        self.get(id).map_or(&[], |r| &r.waiting_on)
    }

    pub(super) fn has_children(&self, id: ActorId) -> bool {
        self.get(id).is_some_and(|r| !r.children.is_empty())
    }

    pub(super) fn supervision(&self, id: ActorId) -> Supervision {
        self.get(id)
            .and_then(|r| r.supervision.clone())
            .unwrap_or_default()
    }

    /// How many actors have rare parts (the tests' check that they go
    /// with their actors).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

/// The tree. The root's children are not listed (a set entry per
/// top-level actor, for the rare queries that need them all: shutdown and
/// the root's restart strategies): they are the slots whose parent is
/// [`ROOT`].
#[derive(Default)]
pub(super) struct Tree {
    pub(super) nodes: Nodes,
    pub(super) rares: Rares,
    pub(super) root_restarts: RestartLog,
}

impl Tree {
    /// The rare parts of `id`, made now if this is their first use; `None`
    /// if `id` is not alive (so no entry outlives its actor).
    pub(super) fn rare(&mut self, id: ActorId) -> Option<&mut NodeRare> {
        if !self.nodes.contains_key(&id) {
            return None;
        }
        Some(self.rares.map.entry(id).or_default())
    }

    /// `id`'s children in start order (ids grow with spawn order).
    pub(super) fn children(&self, id: ActorId) -> Vec<ActorId> {
        if id == ROOT {
            let mut top: Vec<ActorId> = (self.nodes.iter())
                .filter(|n| n.parent == ROOT)
                .map(|n| n.id())
                .collect();
            top.sort_unstable();
            return top;
        }
        self.rares
            .get(id)
            .map(|r| r.children.iter().copied().collect())
            .unwrap_or_default()
    }

    /// `child` of `parent` has stopped: forgets it, and returns what
    /// `parent` was waiting to do once its last child stopped.
    pub(super) fn child_terminated(&mut self, parent: ActorId, child: ActorId) -> Option<Then> {
        let rare = self.rares.get_mut(parent)?;
        rare.children.remove(&child);
        if rare.children.is_empty() {
            rare.then.take()
        } else {
            None
        }
    }

    /// `watcher` is told when `target` stops; false if `target` is not alive.
    pub(super) fn watch(&mut self, target: ActorId, watcher: ActorId) -> bool {
        let Some(rare) = self.rare(target) else {
            return false;
        };
        let list = &mut rare.watchers;
        if !list.contains(&watcher) {
            list.push(watcher);
        }
        true
    }

    pub(super) fn unwatch(&mut self, target: ActorId, watcher: ActorId) {
        if let Some(r) = self.rares.get_mut(target) {
            r.watchers.retain(|w| *w != watcher);
        }
    }
}

#[cfg(test)]
impl Engine {
    /// How many live actors have rare parts.
    pub(crate) fn rare_count(&self) -> usize {
        self.tree.lock().rares.len()
    }
}

impl Engine {
    /// Starts a simulated busy period of `slot` ending at `until` (the
    /// caller then sets `BUSY` and the wake-up timer).
    pub(super) fn begin_busy(&self, slot: &Slot, until: Instant) {
        if let Some(rare) = self.tree.lock().rare(slot.id) {
            rare.busy_until = until.as_nanos();
        }
    }

    /// Ends `id`'s simulated busy period if it is the one that ends at
    /// `deadline` (a restart or a later period makes an older wake-up
    /// stale).
    pub(super) fn end_busy(&self, id: ActorId, deadline: Instant) {
        let slot = {
            let mut tree = self.tree.lock();
            let tree = &mut *tree;
            let Some(node) = tree.nodes.get(&id) else {
                return;
            };
            match tree.rares.get_mut(id) {
                Some(rare) if rare.busy_until == deadline.as_nanos() => {
                    rare.busy_until = 0;
                    node.arc()
                }
                _ => return,
            }
        };
        slot.unblock(BUSY, false);
    }

    /// Creates and registers a top-level actor (supervised by the root).
    /// Its name must be free among the top-level actors, as a child's among
    /// its siblings.
    pub(crate) fn spawn_top<A: crate::Actor>(
        &self,
        props: crate::Props,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Result<crate::Addr<A::Msg>, SpawnError> {
        let root = ActorPath::root_ref();
        let named = props.check(root)?;
        let duplicate = |path: &ActorPath| SpawnError::DuplicateName {
            parent: ActorPath::root(),
            name: path.name().to_string(),
        };
        // Looked at first so that a refused spawn uses no actor id; the
        // claim in `register` is the check that counts (other threads may
        // spawn at the root meanwhile).
        if let Some(path) = named.as_ref().filter(|p| self.shared.path_taken(p)) {
            return Err(duplicate(path));
        }
        let (spawned, addr) = crate::cell::Cell::<A, _>::create(
            self.shared.clone(),
            props,
            factory,
            (ROOT, root),
            named,
        );
        match self.register(None, spawned) {
            Registered::PathTaken => Err(duplicate(addr.path())),
            Registered::Yes | Registered::ParentGone => Ok(addr),
        }
    }

    /// Registers a spawned actor under `parent` (None: the root) and queues
    /// its start. A child whose parent has stopped, or whose path a live
    /// actor has, is stopped before it starts (its mail becomes dead
    /// letters).
    pub(crate) fn register(&self, parent: Option<ActorId>, mut s: Spawned) -> Registered {
        let (id, policy) = (s.id, s.policy);
        let named = s.named.take();
        let supervision = std::mem::take(&mut s.supervision);
        let slot = {
            let mut tree = self.tree.lock();
            let parent_alive = parent.is_none_or(|p| tree.nodes.contains_key(&p));
            // A child's name was checked in its parent's turn, and only that
            // parent's runner registers its children, so only a top-level
            // actor can lose this race (to another thread's spawn).
            let refused = if !parent_alive {
                // Spawned by an actor that stopped in the same turn.
                Some(Registered::ParentGone)
            } else if named
                .as_ref()
                .is_some_and(|p| !self.shared.claim_path(p, id))
            {
                Some(Registered::PathTaken)
            } else {
                None
            };
            if let Some(refused) = refused {
                drop(tree);
                s.stop_orphan();
                return refused;
            }
            if let Some(p) = parent {
                let parent = tree.rare(p).expect("checked");
                parent.children.insert(id);
            }
            let slot = s.slot.take().expect("a spawned child is registered once");
            debug_assert_eq!(slot.parent, parent.unwrap_or(ROOT), "built for its parent");
            tree.nodes.insert(ThinSlot::new(slot.clone()));
            if !supervision.is_default() {
                tree.rare(id).expect("just inserted").supervision = Some(supervision);
            }
            slot
        };
        let mailbox = slot.mailbox();
        self.trace(|| ActorEvent::Spawn {
            actor: id.into(),
            name: mailbox.path().name().to_string(),
            path: Some(mailbox.path().to_string()),
            parent: Some(parent.unwrap_or(ROOT).into()),
            policy: policy.into(),
        });
        // The engine schedules the actor once itself: the slot's run-state
        // word is held from its building to here, so a push made before
        // (a parent sending to the child it spawned in the same turn, or
        // a thread it handed the address to) marked it and woke no one;
        // the release makes the actor's one run queue entry, and every
        // push from now on finds it queued until it runs.
        mailbox.push_control(Control::Start);
        mailbox.release_registered();
        self.sched.schedule(super::slot::Queued::of(&slot));
        Registered::Yes
    }

    /// Stops the children first; then finalizes or restarts.
    pub(super) fn begin_stop(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, then: Then) -> Flow {
        let children = {
            let mut tree = self.tree.lock();
            if !tree.nodes.contains_key(&slot.id) {
                return Flow::Continue;
            }
            if tree.rares.then(slot.id).is_some() {
                // Already stopping: a stop overrides a restart, never the reverse.
                if matches!(then, Then::Finalize(_)) {
                    tree.rare(slot.id).expect("alive").then = Some(then);
                }
                return Flow::Continue;
            }
            if tree.rares.has_children(slot.id) {
                let rare = tree.rare(slot.id).expect("alive");
                rare.then = Some(then.clone());
                Some(rare.children.iter().copied().collect::<Vec<_>>())
            } else {
                None
            }
        };
        match children {
            None => self.complete_stop(slot, cell, then),
            Some(children) => {
                slot.block(STOPPING);
                for c in children.into_iter().rev() {
                    self.push_control(c, Control::Stop(ExitReason::Stopped));
                }
                Flow::Continue
            }
        }
    }

    pub(super) fn complete_stop(
        &self,
        slot: &Arc<Slot>,
        cell: &mut dyn AnyCell,
        then: Then,
    ) -> Flow {
        // Its own runner: nothing to unpark.
        slot.state.fetch_and(!STOPPING, Ordering::SeqCst);
        match then {
            Then::Finalize(reason) => self.finalize(slot, cell, reason),
            Then::Restart(in_period) => {
                self.restart_now(slot, cell, in_period);
                Flow::Continue
            }
        }
    }

    pub(super) fn restart_now(
        &self,
        slot: &Arc<Slot>,
        cell: &mut dyn AnyCell,
        restarts_in_period: u32,
    ) {
        let mut fx = Effects::default();
        cell.reset(&mut fx);
        slot.state.fetch_and(!(FAILED | BUSY), Ordering::SeqCst);
        if let Some(rare) = self.tree.lock().rare(slot.id) {
            rare.restart_count += 1;
            rare.busy_until = 0;
        }
        self.trace(|| ActorEvent::Restart {
            actor: slot.id.into(),
            restarts_in_period,
        });
        // Children spawned by a replaced instance's `stopped` hook.
        for s in fx.spawned {
            let registered = self.register(Some(slot.id), s);
            debug_assert_ne!(registered, Registered::PathTaken);
        }
        Self::control_to(slot, Control::Start);
    }

    /// The actor stops for good: hook, mailbox closed, watchers and parent told.
    pub(super) fn finalize(
        &self,
        slot: &Arc<Slot>,
        cell: &mut dyn AnyCell,
        reason: ExitReason,
    ) -> Flow {
        let id = slot.id;
        let mut fx = Effects::default();
        let unmuted = cell.stop(&mut fx);
        let (parent, watchers) = {
            let mut tree = self.tree.lock();
            let node = tree.nodes.remove(&id);
            let rare = tree.rares.remove(id);
            // Freed under the tree lock, before anyone hears of the stop: a
            // watcher told of it may give the name to a new actor at once.
            // (The cell is alive, so its mailbox and path are.)
            if let Some(named) = node.as_ref().filter(|n| n.mailbox().is_named()) {
                self.shared.release_path(&path_of(named), id);
            }
            let parent = node.as_ref().map(|n| n.parent).filter(|p| *p != ROOT);
            let watchers = rare.map(|r| r.watchers);
            (parent, watchers.unwrap_or_default())
        };
        self.release_from(slot, unmuted);
        self.trace(|| ActorEvent::Stop {
            actor: id.into(),
            reason: reason.to_string(),
        });
        for w in watchers {
            self.push_signal(
                w,
                Signal::Terminated {
                    actor: id,
                    reason: reason.clone(),
                },
            );
        }
        if let Some(p) = parent {
            self.push_control(p, Control::ChildTerminated(id));
        }
        // Children spawned by the `stopped` hook have no parent to run under.
        for s in fx.spawned {
            s.stop_orphan();
        }
        Flow::Finalized
    }

    /// Gives up every live actor without running a turn, as the death of
    /// the process would: no hook runs, nothing is traced, mail still
    /// queued goes with its mailbox; each actor's cell (its state, its
    /// factory, its address of its own slot) is dropped, so the slots are
    /// freed with the tree's entries and the last outside address. Only
    /// for a system dropped between turns, all of whose turns run on the
    /// caller's thread (see `AnyBody::abandon`).
    pub(crate) fn abandon_all(&self) {
        let slots: Vec<Arc<Slot>> = self.tree.lock().nodes.iter().map(ThinSlot::arc).collect();
        for slot in &slots {
            slot.body.abandon();
        }
    }

    pub(super) fn fail(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, error: String) -> Flow {
        slot.block(FAILED);
        cell.fail();
        self.trace(|| ActorEvent::Fail {
            actor: slot.id.into(),
            error: error.clone(),
        });
        let parent =
            (self.tree.lock().nodes.get(&slot.id).map(|n| n.parent)).filter(|p| *p != ROOT);
        match parent {
            Some(p) => {
                self.push_control(
                    p,
                    Control::ChildFailed {
                        child: slot.id,
                        error,
                    },
                );
                Flow::Continue
            }
            None => self.supervise(None, slot.id, error),
        }
    }

    /// The supervisor (`None`: the root) decides about `child`'s failure.
    pub(super) fn supervise(
        &self,
        sup: Option<(&Arc<Slot>, &mut dyn AnyCell)>,
        child: ActorId,
        error: String,
    ) -> Flow {
        let sup_id = sup.as_ref().map(|(s, _)| s.id);
        let (decision, child_path) = {
            let mut tree = self.tree.lock();
            let child_path = match tree.nodes.get(&child) {
                Some(n) if n.is_failed() && tree.rares.then(child).is_none() => path_of(n),
                _ => return Flow::Continue, // stopped or restarted meanwhile
            };
            let supervision = match sup_id {
                Some(s) if tree.nodes.contains_key(&s) => tree.rares.supervision(s),
                Some(_) => return Flow::Continue,
                None => self.root.clone(),
            };
            let failure = Failure {
                actor: child,
                path: child_path.clone(),
                message: error.clone(),
            };
            let decision = match supervision.decide(&failure) {
                Directive::Stop => Decision::Stop,
                Directive::Escalate => Decision::Escalate,
                Directive::Restart => {
                    let now = self.shared.clock.now();
                    let log = match sup_id {
                        Some(s) => &mut tree.rare(s).expect("checked").restarts,
                        None => &mut tree.root_restarts,
                    };
                    match log.try_restart(&supervision, now) {
                        None => Decision::Escalate,
                        Some(in_period) => {
                            // One-for-one needs no siblings (listing the
                            // root's is a scan of the tree).
                            let siblings = match supervision.strategy() {
                                Strategy::OneForOne => Vec::new(),
                                _ => tree.children(sup_id.unwrap_or(ROOT)),
                            };
                            let targets =
                                supervision.strategy().children_to_restart(child, &siblings);
                            Decision::Restart(targets, in_period)
                        }
                    }
                }
            };
            (decision, child_path)
        };
        match decision {
            Decision::Stop => {
                self.push_control(child, Control::Stop(ExitReason::Failed(error)));
                Flow::Continue
            }
            Decision::Restart(targets, in_period) => {
                for t in targets {
                    self.push_control(t, Control::Restart(in_period));
                }
                Flow::Continue
            }
            Decision::Escalate => {
                self.trace(|| ActorEvent::Escalate {
                    actor: sup_id.unwrap_or(ROOT).into(),
                    child: child.into(),
                });
                match sup {
                    Some((slot, cell)) => self.fail(
                        slot,
                        cell,
                        format!(
                            "child {child_path} ({child}) failed and could not be restarted: {error}"
                        ),
                    ),
                    // The root cannot escalate: the child stops.
                    None => {
                        self.push_control(child, Control::Stop(ExitReason::Failed(error)));
                        Flow::Continue
                    }
                }
            }
        }
    }
}

/// What [`Engine::register`] did with a spawned actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Registered {
    /// It is in the tree; its start is queued.
    Yes,
    /// Its parent had stopped: it was stopped before starting.
    ParentGone,
    /// A live actor has its path: it was stopped before starting.
    PathTaken,
}

/// What a supervisor does about one failure, worked out under the tree
/// lock and carried out after it is released.
enum Decision {
    Stop,
    Escalate,
    Restart(Vec<ActorId>, u32),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Actor, Context, LocalSystem, Props, Strategy, System};

    /// An idle leaf actor's share of the tree is its map entry, its slot
    /// held thin (an idle actor's footprint stays small: `tests/footprint.rs`); the parent's
    /// id is in the slot's header, the rest is rare.
    #[test]
    fn an_entry_is_one_word_and_rare_parts_are_made_on_first_use() {
        assert_eq!(std::mem::size_of::<ThinSlot>(), 8);
        // The header: the id, the state word, the own wide address, the
        // parent's id.
        assert_eq!(std::mem::size_of::<Slot<()>>(), 40);
        assert!(Supervision::default().is_default());
        assert!(!Supervision::new(crate::Strategy::OneForAll).is_default());
        assert!(!Supervision::default()
            .decider(|_| Directive::Stop)
            .is_default());
    }

    struct Leaf;

    impl Actor for Leaf {
        type Msg = ();
        fn handle(&mut self, _: &mut Context<'_, Self>, (): ()) {}
    }

    /// Spawns a leaf when it starts, and watches it.
    struct Parent;

    impl Actor for Parent {
        type Msg = ();
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            let child = ctx.spawn(Props::new(), || Leaf).unwrap();
            ctx.watch(&child, |_, _| ());
        }
        fn handle(&mut self, _: &mut Context<'_, Self>, (): ()) {}
    }

    /// Rare parts are made for the actors that use them, and go with them:
    /// none for an idle leaf, one for a supervisor (its children and its
    /// supervision) and one for a watched child (its watchers); none once
    /// those have stopped.
    #[test]
    fn rare_parts_are_made_for_their_users_and_go_with_them() {
        let mut sys = LocalSystem::new();
        let leaf = sys.spawn(Props::new(), || Leaf).unwrap();
        sys.run_until_idle();
        assert_eq!(sys.engine().rare_count(), 0, "an idle leaf has none");
        let sup = Supervision::new(Strategy::OneForAll);
        let parent = sys.spawn(Props::new().supervision(sup), || Parent).unwrap();
        sys.run_until_idle();
        assert_eq!(sys.actor_count(), 3);
        assert_eq!(sys.engine().rare_count(), 2, "the parent's and the child's");
        let children = sys.engine().children(parent.id());
        assert_eq!(children.len(), 1);
        assert_eq!(sys.engine().children(ROOT), [leaf.id(), parent.id()]);
        sys.stop(parent.id());
        sys.run_until_idle();
        assert_eq!(sys.actor_count(), 1);
        assert_eq!(sys.engine().rare_count(), 0, "they went with their actors");
    }
}
