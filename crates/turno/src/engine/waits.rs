//! The wait-for graph of muted senders: an edge sender -> receiver is
//! added only when it closes no cycle, so muting cannot deadlock.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::slot::Slot;
use super::tree::Tree;
use super::Engine;
use crate::ids::ActorId;
use crate::trace::ActorEvent;

impl Tree {
    /// True if `from` is `to` or waits, directly or transitively, for `to`.
    pub(super) fn waits_for(&self, from: ActorId, to: ActorId) -> bool {
        let mut stack = vec![from];
        let mut seen = Vec::new();
        while let Some(a) = stack.pop() {
            if a == to {
                return true;
            }
            if seen.contains(&a) {
                continue;
            }
            seen.push(a);
            // (Only a live actor has rare parts.)
            stack.extend(self.rares.waiting_on(a).iter().copied());
        }
        false
    }
}

impl Engine {
    /// `sender` overfilled `receiver`'s suspend mailbox: mute it, unless that
    /// would close a cycle in the wait-for graph.
    ///
    /// The rule that keeps muting deadlock-free: an edge sender -> receiver
    /// ("sender waits for receiver to drain") is only added when the receiver
    /// does not already wait, directly or through others, for the sender. The
    /// graph therefore stays acyclic; a receiver with muted senders holds at
    /// least one message; so some actor at the end of every wait chain is
    /// runnable. A sender exempted this way keeps running: in a saturated
    /// cycle the cycle itself is the bottleneck, and messages circulate at
    /// the speed it processes them.
    pub(super) fn mute(&self, sender: &Arc<Slot>, receiver: ActorId) {
        let mut tree = self.tree.lock();
        let Some(rslot) = tree.nodes.get(&receiver).map(|n| n.arc()) else {
            return; // stopped meanwhile: its close released everyone
        };
        if tree.waits_for(receiver, sender.id) {
            drop(tree);
            rslot.mailbox().forget_muted(sender.id);
            return;
        }
        if !rslot.mailbox().is_muting(sender.id) {
            return; // the receiver drained before we got here
        }
        if let Some(rare) = tree.rare(sender.id) {
            if rare.waiting_on.contains(&receiver) {
                // One turn can be muted twice by the same receiver (it drained
                // and filled again between two sends): one edge, one count.
                return;
            }
            rare.waiting_on.push(receiver);
            sender.state.fetch_add(1, Ordering::SeqCst); // one more mute
            drop(tree);
            self.trace(|| ActorEvent::Mute {
                actor: sender.id.into(),
                by: receiver.into(),
            });
        }
    }

    /// `receiver` drained below its low watermark (or stopped): release the
    /// senders it muted.
    ///
    /// `senders` is the muted list the receiver took when it drained. A
    /// sender may have been listed *again* since (its turn was still running:
    /// it refilled the mailbox and was re-listed, and its new mute may
    /// already be recorded as the one edge). Such a sender stays muted: the
    /// mailbox's list is the truth, checked under the tree lock, so "listed"
    /// and "has the edge" agree once both the mute and this release are
    /// applied. (Releasing it anyway left a sender unmuted but listed, never
    /// to be muted again, so the receiver's mailbox grew without bound;
    /// `tests/sched_loom.rs` catches that release.)
    pub(super) fn release_from(&self, receiver: &Slot, senders: Vec<ActorId>) {
        if senders.is_empty() {
            return;
        }
        let mut freed = Vec::new();
        let mailbox = receiver.mailbox();
        let listed = |s| mailbox.is_muting(s);
        {
            let mut tree = self.tree.lock();
            for s in senders {
                if listed(s) && !self.injected_stale_release() {
                    continue;
                }
                let tree = &mut *tree;
                let (Some(node), Some(rare)) = (tree.nodes.get(&s), tree.rares.get_mut(s)) else {
                    continue;
                };
                let before = rare.waiting_on.len();
                rare.waiting_on.retain(|r| *r != receiver.id);
                if rare.waiting_on.len() < before {
                    freed.push(node.arc());
                }
            }
        }
        for s in freed {
            s.unblock(0, true);
            if !s.is_muted() {
                self.trace(|| ActorEvent::Unmute { actor: s.id.into() });
            }
        }
    }

    /// The model checker's proof that it catches the old release protocol:
    /// `SharedRunner::with_stale_release_bug` turns the re-listing check off.
    #[cfg(turno_loom)]
    pub(super) fn injected_stale_release(&self) -> bool {
        self.stale_release_bug
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    #[cfg(not(turno_loom))]
    #[inline]
    pub(super) fn injected_stale_release(&self) -> bool {
        false
    }
}
