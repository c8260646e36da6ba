//! The actor: state, one message type, a synchronous handler.

use crate::buffer::{Policy, PolicyError};
use crate::context::Context;
use crate::ids::{check_name, ActorPath, NameError};
use crate::supervision::Supervision;

/// An actor: state plus a synchronous handler for one message type.
///
/// A turn takes one message, runs [`Actor::handle`] to completion and applies
/// its effects. Turns of one actor never overlap, so `&mut self` is all the
/// mutual exclusion the actor needs. There is no `async` here on purpose: an
/// `await` would split the turn and let another message observe a half-done
/// update. Async work is delegated and comes back as a message (see
/// [`Context::ask`]).
///
/// ```
/// use turno::{Actor, Context};
///
/// struct Counter { total: u64 }
/// enum Msg { Add(u64) }
///
/// impl Actor for Counter {
///     type Msg = Msg;
///     fn handle(&mut self, _ctx: &mut Context<'_, Self>, msg: Msg) {
///         match msg { Msg::Add(n) => self.total += n }
///     }
/// }
/// ```
pub trait Actor: Send + Sized + 'static {
    /// The one message type this actor accepts (usually an enum).
    type Msg: Send + 'static;

    /// Handles one message: one turn.
    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: Self::Msg);

    /// Runs as the actor's first turn, and again as the first turn of each
    /// restarted instance.
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = ctx;
    }

    /// Runs when the actor stops for good, or before a healthy actor is
    /// replaced by a sibling's restart. Not run for a failed instance: its
    /// state is suspect.
    fn stopped(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = ctx;
    }
}

/// How to spawn an actor: name, mailbox policy, stash bound, and how it
/// supervises its own children.
///
/// ```
/// use turno::{Policy, Props};
/// let props = Props::new().name("sensor").mailbox(Policy::KeepNewest(1));
/// assert_eq!(props.policy(), Policy::KeepNewest(1));
/// ```
#[derive(Clone, Debug)]
pub struct Props {
    pub(crate) name: Option<String>,
    pub(crate) policy: Policy,
    pub(crate) stash_capacity: usize,
    pub(crate) supervision: Supervision,
}

/// The default mailbox: bounded, and losing nothing: a full mailbox suspends
/// its senders.
pub const DEFAULT_POLICY: Policy = Policy::Suspend(1024);

/// The default stash bound.
pub const DEFAULT_STASH_CAPACITY: usize = 1024;

impl Default for Props {
    fn default() -> Self {
        Props {
            name: None,
            policy: DEFAULT_POLICY,
            stash_capacity: DEFAULT_STASH_CAPACITY,
            supervision: Supervision::default(),
        }
    }
}

impl Props {
    /// Defaults: [`DEFAULT_POLICY`], [`DEFAULT_STASH_CAPACITY`], one-for-one
    /// supervision of children.
    pub fn new() -> Self {
        Props::default()
    }

    /// The actor's name: the last segment of its [`ActorPath`], shown in
    /// traces, metrics labels and errors.
    ///
    /// Unique among live siblings: spawning a child whose name a live
    /// sibling (or a child spawned earlier in the same turn) already has
    /// fails with [`SpawnError::DuplicateName`]; top-level actors are
    /// siblings under the root. A restarted actor keeps its name; a stopped
    /// one frees it. A name is a non-empty segment with no `/`, no control
    /// character, not starting with `$` ([`SpawnError::InvalidName`]).
    /// Without a name an actor is called `$<id>` and never clashes.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The mailbox's overflow policy.
    pub fn mailbox(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// How many messages the stash may hold.
    pub fn stash_capacity(mut self, n: usize) -> Self {
        self.stash_capacity = n;
        self
    }

    /// How this actor supervises its children.
    pub fn supervision(mut self, s: Supervision) -> Self {
        self.supervision = s;
        self
    }

    /// The mailbox policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }
}

/// Why an actor could not be spawned.
///
/// There is no "parent stopped" error: a turn that spawns a child and stops
/// its own actor (or is stopped) in the same turn gets a valid address, and
/// the child is stopped before it ever starts (its mail becomes dead
/// letters), because the spawn is applied after the turn, when the parent is
/// already gone. Watch the child to learn that it terminated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The mailbox policy is meaningless.
    #[error("cannot spawn {name:?}: {source}")]
    Policy {
        /// The name given in the props, or `<unnamed>`.
        name: String,
        /// What is wrong with the policy.
        source: PolicyError,
    },
    /// A live sibling already has this name (see [`Props::name`]).
    #[error("cannot spawn {name:?} under {parent}: a live sibling already has that name")]
    DuplicateName {
        /// The parent's path ([`ActorPath::root`] for a top-level actor).
        parent: ActorPath,
        /// The name asked for.
        name: String,
    },
    /// The name cannot be a segment of a path (see [`Props::name`]).
    #[error("cannot spawn {name:?}: {source}")]
    InvalidName {
        /// The name asked for.
        name: String,
        /// What is wrong with it.
        source: NameError,
    },
}

impl Props {
    /// Checks the props; returns the path of a named child under `parent`
    /// (whether a sibling has it is the caller's check).
    pub(crate) fn check(&self, parent: &ActorPath) -> Result<Option<ActorPath>, SpawnError> {
        self.policy
            .validate()
            .map_err(|source| SpawnError::Policy {
                name: self.name.clone().unwrap_or_else(|| "<unnamed>".into()),
                source,
            })?;
        match &self.name {
            None => Ok(None),
            Some(name) => {
                check_name(name).map_err(|source| SpawnError::InvalidName {
                    name: name.clone(),
                    source,
                })?;
                Ok(Some(parent.child(name)))
            }
        }
    }
}
