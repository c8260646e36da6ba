//! Supervision: who restarts whom, how often, and when to give up.
//!
//! Every actor has a supervisor: the actor that spawned it, or the system's
//! root for top-level actors. When a turn panics the actor *fails*: the turn
//! leaves no effects but the sends it already made (children it spawned
//! never start; its timers, watches and stops are dropped), the actor stops
//! taking messages (they keep queueing) and its supervisor decides, with its
//! [`Supervision`]:
//!
//! - [`Directive::Restart`]: a new instance is built by the actor's factory;
//!   the mailbox and the stash survive (nothing queued is lost), the failed
//!   message does not (it is the one that failed), timers and pending requests
//!   of the old instance are cancelled, children are stopped;
//! - [`Directive::Stop`]: the actor stops for good;
//! - [`Directive::Escalate`]: the supervisor fails in turn, and its own
//!   supervisor decides.
//!
//! Which children restart is the [`Strategy`]: the failed one
//! ([`Strategy::OneForOne`]), all of them ([`Strategy::OneForAll`]), or the
//! failed one and those started after it ([`Strategy::RestForOne`]).
//!
//! **Restart intensity**: more than `max_restarts` restarts of one
//! supervisor's children within `within` means restarting does not help; the
//! supervisor then escalates (the root stops the actor instead).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::ids::ActorId;
use crate::time::Instant;

/// Which children restart when one fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Only the failed child.
    OneForOne,
    /// Every child.
    OneForAll,
    /// The failed child and every child started after it.
    RestForOne,
}

impl Strategy {
    /// The children to restart when `failed` fails, given the supervisor's
    /// children in start order (`siblings`, `failed` among them). Pure: the
    /// supervision tree calls it with its own children list.
    ///
    /// A `failed` that is not among `siblings` restarts alone under
    /// [`Strategy::RestForOne`] (there is no position to count from).
    ///
    /// Generic over the id so that it can be tried on plain numbers:
    ///
    /// ```
    /// use turno::Strategy;
    ///
    /// let kids = [1, 2, 3, 4];
    /// assert_eq!(Strategy::OneForOne.children_to_restart(2, &kids), [2]);
    /// assert_eq!(Strategy::OneForAll.children_to_restart(2, &kids), kids);
    /// assert_eq!(Strategy::RestForOne.children_to_restart(2, &kids), [2, 3, 4]);
    /// ```
    pub fn children_to_restart<Id: Copy + PartialEq>(self, failed: Id, siblings: &[Id]) -> Vec<Id> {
        match self {
            Strategy::OneForOne => vec![failed],
            Strategy::OneForAll => siblings.to_vec(),
            Strategy::RestForOne => match siblings.iter().position(|c| *c == failed) {
                Some(at) => siblings[at..].to_vec(),
                None => vec![failed],
            },
        }
    }
}

/// A supervisor's decision about one failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Directive {
    /// Replace the failed actor (and its siblings, per the strategy).
    Restart,
    /// Stop the failed actor for good.
    Stop,
    /// Fail the supervisor itself.
    Escalate,
}

/// A failed turn, as the supervisor's decider sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The failed child.
    pub actor: ActorId,
    /// Its path, e.g. `/orders/worker`.
    pub path: crate::ids::ActorPath,
    /// The panic message.
    pub message: String,
}

/// Why an actor terminated, as delivered to its watchers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum ExitReason {
    /// It was asked to stop (by itself, its supervisor or the system).
    Stopped,
    /// It failed and its supervisor decided to stop it, or gave up.
    Failed(String),
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Stopped => f.write_str("stopped"),
            ExitReason::Failed(e) => write!(f, "failed: {e}"),
        }
    }
}

type Decider = Arc<dyn Fn(&Failure) -> Directive + Send + Sync>;

/// How an actor supervises its children.
///
/// ```
/// use std::time::Duration;
/// use turno::{Directive, Strategy, Supervision};
///
/// let s = Supervision::new(Strategy::OneForAll)
///     .intensity(5, Duration::from_secs(10))
///     .decider(|failure| {
///         if failure.message.contains("corrupt") { Directive::Stop } else { Directive::Restart }
///     });
/// assert_eq!(s.strategy(), Strategy::OneForAll);
/// ```
#[derive(Clone)]
pub struct Supervision {
    strategy: Strategy,
    max_restarts: u32,
    within: Duration,
    /// `None`: always restart (the default, which so allocates nothing:
    /// every actor's props carry a `Supervision`).
    decider: Option<Decider>,
}

impl Supervision {
    /// Restart with `strategy`, at most 3 restarts within 5 seconds.
    pub fn new(strategy: Strategy) -> Self {
        Supervision {
            strategy,
            max_restarts: 3,
            within: Duration::from_secs(5),
            decider: None,
        }
    }

    /// At most `max_restarts` restarts within `within`; one more escalates.
    pub fn intensity(mut self, max_restarts: u32, within: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.within = within;
        self
    }

    /// Decides per failure (default: always restart).
    pub fn decider(mut self, f: impl Fn(&Failure) -> Directive + Send + Sync + 'static) -> Self {
        self.decider = Some(Arc::new(f));
        self
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Whether this is [`Supervision::default`] (so the tree need not keep it).
    pub(crate) fn is_default(&self) -> bool {
        let d = Supervision::default();
        self.decider.is_none()
            && self.strategy == d.strategy
            && self.max_restarts == d.max_restarts
            && self.within == d.within
    }

    pub(crate) fn decide(&self, failure: &Failure) -> Directive {
        match &self.decider {
            Some(decide) => decide(failure),
            None => Directive::Restart,
        }
    }
}

impl Default for Supervision {
    fn default() -> Self {
        Supervision::new(Strategy::OneForOne)
    }
}

impl fmt::Debug for Supervision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervision")
            .field("strategy", &self.strategy)
            .field("max_restarts", &self.max_restarts)
            .field("within", &self.within)
            .finish_non_exhaustive()
    }
}

/// The restarts a supervisor performed recently.
#[derive(Debug, Default)]
pub(crate) struct RestartLog {
    times: VecDeque<Instant>,
}

impl RestartLog {
    /// Records a restart at `now` if the intensity allows it; returns the
    /// number of restarts in the period, or `None` when the limit is exceeded.
    pub(crate) fn try_restart(&mut self, policy: &Supervision, now: Instant) -> Option<u32> {
        while let Some(&t) = self.times.front() {
            if now - t >= policy.within {
                self.times.pop_front();
            } else {
                break;
            }
        }
        if self.times.len() as u32 >= policy.max_restarts {
            return None;
        }
        self.times.push_back(now);
        Some(self.times.len() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intensity_window_slides() {
        let s = Supervision::new(Strategy::OneForOne).intensity(2, Duration::from_secs(1));
        let mut log = RestartLog::default();
        let t = |ms| Instant::ZERO + Duration::from_millis(ms);
        assert_eq!(log.try_restart(&s, t(0)), Some(1));
        assert_eq!(log.try_restart(&s, t(100)), Some(2));
        assert_eq!(log.try_restart(&s, t(200)), None);
        // The first restart left the window.
        assert_eq!(log.try_restart(&s, t(1000)), Some(2));
    }

    fn ids(ns: &[u64]) -> Vec<ActorId> {
        ns.iter().map(|n| ActorId(*n)).collect()
    }

    #[test]
    fn one_for_one_restarts_the_failed_child_alone() {
        let kids = ids(&[3, 5, 9]);
        for failed in &kids {
            assert_eq!(
                Strategy::OneForOne.children_to_restart(*failed, &kids),
                [*failed]
            );
        }
    }

    #[test]
    fn one_for_all_restarts_every_child_in_start_order() {
        let kids = ids(&[3, 5, 9]);
        assert_eq!(
            Strategy::OneForAll.children_to_restart(ActorId(9), &kids),
            kids
        );
        assert_eq!(
            Strategy::OneForAll.children_to_restart(ActorId(3), &kids),
            kids
        );
    }

    #[test]
    fn rest_for_one_restarts_the_failed_child_and_those_started_after_it() {
        let kids = ids(&[3, 5, 9]);
        let r = |f| Strategy::RestForOne.children_to_restart(ActorId(f), &kids);
        assert_eq!(r(3), ids(&[3, 5, 9]));
        assert_eq!(r(5), ids(&[5, 9]));
        assert_eq!(r(9), ids(&[9]));
        // Not among the children: nothing to count from, it restarts alone.
        assert_eq!(r(4), ids(&[4]));
    }
}
