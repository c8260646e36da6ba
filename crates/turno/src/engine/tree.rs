//! The supervision tree: who is whose child, registering a spawned actor,
//! stopping (children first), restarting, finalizing, and a supervisor's
//! answer to a child's failure.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, BuildHasherDefault};

use hashbrown::hash_table::{Entry, HashTable};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::slot::{Slot, ThinSlot, BUSY, FAILED, STOPPING};
use super::{Engine, Flow, ROOT};
use crate::actor::SpawnError;
use crate::addr::ActorId;
use crate::cell::AnyCell;
use crate::effects::{Effects, Spawned};
use crate::ids::ActorPath;
use crate::mailbox::{Control, Signal};
use crate::supervision::{Directive, ExitReason, Failure, RestartLog, Strategy, Supervision};
use crate::time::Instant;
use crate::trace::ActorEvent;

/// What happens once a stopping actor's children have all stopped.
#[derive(Clone, Debug)]
pub(super) enum Then {
    Finalize(ExitReason),
    Restart(u32),
}

/// One actor in the tree: what every actor needs (24 bytes: the slot is
/// a thin strong reference, [`ThinSlot`], where an `Arc<Slot<dyn AnyBody>>`
/// was two words); the parts
/// only some actors use (children, watchers, restarts, wait-for
/// edges, a pending stop, a supervision other than the default) are in
/// [`NodeRare`], allocated on first use. An idle leaf actor so costs its
/// map entry and nothing else. Whether it was named (its path is in the
/// system's path index) is its mailbox's to say.
pub(super) struct Node {
    pub(super) slot: ThinSlot,
    /// The supervisor: [`ROOT`] for a top-level actor.
    pub(super) parent: ActorId,
    pub(super) rare: Option<Box<NodeRare>>,
}

/// The parts of a [`Node`] most actors never use.
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

impl Node {
    /// The rare parts, allocated now if this is their first use.
    pub(super) fn rare(&mut self) -> &mut NodeRare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The path, kept by the mailbox (part of the slot, so always there).
    pub(super) fn path(&self) -> Option<ActorPath> {
        Some(self.slot.mailbox().path().clone())
    }

    /// Times restarted.
    pub(super) fn restart_count(&self) -> u32 {
        self.rare.as_ref().map_or(0, |r| r.restart_count)
    }

    pub(super) fn then(&self) -> Option<&Then> {
        self.rare.as_ref().and_then(|r| r.then.as_ref())
    }

    pub(super) fn waiting_on(&self) -> &[ActorId] {
        self.rare.as_ref().map_or(&[], |r| &r.waiting_on)
    }

    pub(super) fn has_children(&self) -> bool {
        self.rare.as_ref().is_some_and(|r| !r.children.is_empty())
    }

    pub(super) fn supervision(&self) -> Supervision {
        self.rare
            .as_ref()
            .and_then(|r| r.supervision.clone())
            .unwrap_or_default()
    }
}

/// The map of live actors, keyed by the id their slot keeps (an entry is
/// its [`Node`] alone: a map with its own copy of the key was 40 bytes an
/// entry, times the table's slack, where this is 24). Actor ids are
/// sequential and never reused, so a multiplicative hash spreads them as
/// well as SipHash would, for much less.
#[derive(Default)]
pub(super) struct Nodes {
    table: HashTable<Node>,
}

impl Nodes {
    fn hash(id: ActorId) -> u64 {
        BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(id)
    }

    /// The node of `id`, if it is alive.
    pub(super) fn get(&self, id: &ActorId) -> Option<&Node> {
        self.table.find(Self::hash(*id), |n| n.slot.id() == *id)
    }

    pub(super) fn get_mut(&mut self, id: &ActorId) -> Option<&mut Node> {
        self.table.find_mut(Self::hash(*id), |n| n.slot.id() == *id)
    }

    pub(super) fn contains_key(&self, id: &ActorId) -> bool {
        self.get(id).is_some()
    }

    /// Adds `node` under `id` (its slot's id), returning the node it
    /// replaces.
    pub(super) fn insert(&mut self, id: ActorId, node: Node) -> Option<Node> {
        debug_assert_eq!(node.slot.id(), id, "a node is keyed by its slot's id");
        let hash = Self::hash(id);
        match self
            .table
            .entry(hash, |n| n.slot.id() == id, |n| Self::hash(n.slot.id()))
        {
            Entry::Occupied(mut e) => Some(std::mem::replace(e.get_mut(), node)),
            Entry::Vacant(e) => {
                e.insert(node);
                None
            }
        }
    }

    pub(super) fn remove(&mut self, id: &ActorId) -> Option<Node> {
        let hash = Self::hash(*id);
        match self.table.find_entry(hash, |n| n.slot.id() == *id) {
            Ok(e) => Some(e.remove().0),
            Err(_) => None,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Every live actor's id and node, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&ActorId, &Node)> {
        self.table.iter().map(|n| (n.slot.id_ref(), n))
    }
}

/// The tree. The root's children are not listed (a set entry per
/// top-level actor, for the rare queries that need them all: shutdown and
/// the root's restart strategies): they are the nodes whose parent is
/// [`ROOT`].
#[derive(Default)]
pub(super) struct Tree {
    pub(super) nodes: Nodes,
    pub(super) root_restarts: RestartLog,
}

impl Tree {
    /// `id`'s children in start order (ids grow with spawn order).
    pub(super) fn children(&self, id: ActorId) -> Vec<ActorId> {
        if id == ROOT {
            let mut top: Vec<ActorId> = (self.nodes.iter())
                .filter(|(_, n)| n.parent == ROOT)
                .map(|(id, _)| *id)
                .collect();
            top.sort_unstable();
            return top;
        }
        self.nodes
            .get(&id)
            .and_then(|n| n.rare.as_ref())
            .map(|r| r.children.iter().copied().collect())
            .unwrap_or_default()
    }

    /// `child` of `parent` has stopped: forgets it, and returns what
    /// `parent` was waiting to do once its last child stopped.
    pub(super) fn child_terminated(&mut self, parent: ActorId, child: ActorId) -> Option<Then> {
        let rare = self.nodes.get_mut(&parent)?.rare.as_mut()?;
        rare.children.remove(&child);
        if rare.children.is_empty() {
            rare.then.take()
        } else {
            None
        }
    }

    /// `watcher` is told when `target` stops; false if `target` is not alive.
    pub(super) fn watch(&mut self, target: ActorId, watcher: ActorId) -> bool {
        let Some(node) = self.nodes.get_mut(&target) else {
            return false;
        };
        let list = &mut node.rare().watchers;
        if !list.contains(&watcher) {
            list.push(watcher);
        }
        true
    }

    pub(super) fn unwatch(&mut self, target: ActorId, watcher: ActorId) {
        if let Some(r) = self.nodes.get_mut(&target).and_then(|n| n.rare.as_mut()) {
            r.watchers.retain(|w| *w != watcher);
        }
    }
}

impl Engine {
    /// Starts a simulated busy period of `slot` ending at `until` (the
    /// caller then sets `BUSY` and the wake-up timer).
    pub(super) fn begin_busy(&self, slot: &Slot, until: Instant) {
        if let Some(node) = self.tree.lock().nodes.get_mut(&slot.id) {
            node.rare().busy_until = until.as_nanos();
        }
    }

    /// Ends `id`'s simulated busy period if it is the one that ends at
    /// `deadline` (a restart or a later period makes an older wake-up
    /// stale).
    pub(super) fn end_busy(&self, id: ActorId, deadline: Instant) {
        let slot = {
            let mut tree = self.tree.lock();
            let Some(node) = tree.nodes.get_mut(&id) else {
                return;
            };
            match node.rare.as_mut() {
                Some(rare) if rare.busy_until == deadline.as_nanos() => {
                    rare.busy_until = 0;
                    node.slot.arc()
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
        let (spawned, addr) =
            crate::cell::Cell::<A, _>::create(self.shared.clone(), props, factory, root, named);
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
                let parent = tree.nodes.get_mut(&p).expect("checked");
                parent.rare().children.insert(id);
            }
            let rare = (!supervision.is_default()).then(|| {
                Box::new(NodeRare {
                    supervision: Some(supervision),
                    ..NodeRare::default()
                })
            });
            let slot = s.slot.take().expect("a spawned child is registered once");
            tree.nodes.insert(
                id,
                Node {
                    slot: ThinSlot::new(slot.clone()),
                    parent: parent.unwrap_or(ROOT),
                    rare,
                },
            );
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
        self.sched.schedule(super::Queued::of(&slot));
        Registered::Yes
    }

    /// Stops the children first; then finalizes or restarts.
    pub(super) fn begin_stop(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, then: Then) -> Flow {
        let children = {
            let mut tree = self.tree.lock();
            let Some(node) = tree.nodes.get_mut(&slot.id) else {
                return Flow::Continue;
            };
            if node.then().is_some() {
                // Already stopping: a stop overrides a restart, never the reverse.
                if matches!(then, Then::Finalize(_)) {
                    node.rare().then = Some(then);
                }
                return Flow::Continue;
            }
            if node.has_children() {
                let rare = node.rare();
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
        if let Some(node) = self.tree.lock().nodes.get_mut(&slot.id) {
            let rare = node.rare();
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
            // Freed under the tree lock, before anyone hears of the stop: a
            // watcher told of it may give the name to a new actor at once.
            // (The cell is alive, so its mailbox and path are.)
            let named = node.as_ref().filter(|n| n.slot.mailbox().is_named());
            if let Some(path) = named.and_then(Node::path) {
                self.shared.release_path(&path, id);
            }
            let parent = node.as_ref().map(|n| n.parent).filter(|p| *p != ROOT);
            let watchers = node.and_then(|n| n.rare).map(|r| r.watchers);
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
                Some(n) if n.slot.is_failed() && n.then().is_none() => match n.path() {
                    Some(path) => path,
                    None => return Flow::Continue,
                },
                _ => return Flow::Continue, // stopped or restarted meanwhile
            };
            let supervision = match sup_id {
                Some(s) => match tree.nodes.get(&s) {
                    Some(n) => n.supervision(),
                    None => return Flow::Continue,
                },
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
                        Some(s) => &mut tree.nodes.get_mut(&s).expect("checked").rare().restarts,
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

    /// An idle leaf actor's share of the tree is its node and map entry
    /// (issue 11: at most 256 bytes per idle actor); the rest is rare.
    #[test]
    fn a_node_is_three_words_and_its_rare_parts_start_unallocated() {
        assert_eq!(std::mem::size_of::<Node>(), 24);
        assert_eq!(std::mem::size_of::<ThinSlot>(), 8);
        assert!(Supervision::default().is_default());
        assert!(!Supervision::new(crate::Strategy::OneForAll).is_default());
        assert!(!Supervision::default()
            .decider(|_| Directive::Stop)
            .is_default());
    }
}
