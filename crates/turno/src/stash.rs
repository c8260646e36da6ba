//! The stash: messages set aside until the behaviour changes.
//!
//! A handler that cannot take a message in its current state stashes it
//! ([`Context::stash`](crate::Context::stash)); when the state changes it
//! calls [`Context::unstash_all`](crate::Context::unstash_all) and the
//! stashed messages are handled next, in their original order, ahead of
//! anything newer in the mailbox. Each message is moved at most once each
//! way, so this selective receive costs O(1) per message, never a mailbox
//! scan.

use std::collections::VecDeque;

/// The stash is full: here is the message back.
#[derive(PartialEq, Eq, thiserror::Error)]
#[error("stash full ({capacity} messages): the message was handed back, not stashed")]
pub struct StashFull<M> {
    /// The message that did not fit.
    pub msg: M,
    /// The stash's bound.
    pub capacity: usize,
}

// Messages need not be `Debug`.
impl<M> std::fmt::Debug for StashFull<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StashFull {{ capacity: {} }}", self.capacity)
    }
}

pub(crate) struct Stash<M> {
    stashed: VecDeque<M>,
    /// Unstashed messages waiting to be handled, ahead of the mailbox.
    pub(crate) redeliver: VecDeque<M>,
    capacity: usize,
}

impl<M> Stash<M> {
    pub(crate) fn new(capacity: usize) -> Self {
        Stash {
            stashed: VecDeque::new(),
            redeliver: VecDeque::new(),
            capacity,
        }
    }

    pub(crate) fn push(&mut self, msg: M) -> Result<usize, StashFull<M>> {
        if self.stashed.len() >= self.capacity {
            return Err(StashFull {
                msg,
                capacity: self.capacity,
            });
        }
        self.stashed.push_back(msg);
        Ok(self.stashed.len())
    }

    /// Moves every stashed message ahead of the pending re-deliveries: a
    /// stashed message was taken before any still waiting there, so it is
    /// older, and order is preserved.
    pub(crate) fn unstash_all(&mut self) -> usize {
        let n = self.stashed.len();
        if self.redeliver.is_empty() {
            std::mem::swap(&mut self.stashed, &mut self.redeliver);
        } else {
            while let Some(m) = self.stashed.pop_back() {
                self.redeliver.push_front(m);
            }
        }
        n
    }

    pub(crate) fn len(&self) -> usize {
        self.stashed.len()
    }

    pub(crate) fn next(&mut self) -> Option<M> {
        self.redeliver.pop_front()
    }

    pub(crate) fn has_redelivery(&self) -> bool {
        !self.redeliver.is_empty()
    }

    /// Everything still held, in order: for dead letters at stop.
    pub(crate) fn drain_all(&mut self) -> usize {
        let n = self.stashed.len() + self.redeliver.len();
        self.stashed.clear();
        self.redeliver.clear();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstash_preserves_order_across_rounds() {
        let mut s = Stash::new(10);
        s.push(1).unwrap();
        s.push(2).unwrap();
        s.push(3).unwrap();
        assert_eq!(s.unstash_all(), 3);
        // Handling 1 stashes it again; 2 and 3 still wait for re-delivery.
        let m = s.next().unwrap();
        s.push(m).unwrap();
        s.unstash_all();
        assert_eq!(
            std::iter::from_fn(|| s.next()).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn full_stash_hands_message_back() {
        let mut s = Stash::new(1);
        s.push('a').unwrap();
        let e = s.push('b').unwrap_err();
        assert_eq!(e.msg, 'b');
        assert!(e.to_string().contains("stash full (1 messages)"));
    }
}
