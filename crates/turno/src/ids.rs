//! The identities of the runtime, in one leaf module that depends on
//! nothing else in the crate: actors, requests, timers, the root of the
//! supervision tree, actor paths, and why a reply is stale.
//!
//! Each kind has its own sequence within a system (actors from 1, the root
//! being 0; requests from 1; timers from 1), so spawning an actor does not
//! shift request ids and a trace reads the same kind of number for the same
//! kind of thing.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// An actor's identity, unique within its system. Never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActorId(pub(crate) u64);

impl ActorId {
    /// The number behind the id, as it appears in traces.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Correlates a reply with its request. Unique within the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The number behind the id, as it appears in traces.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "req-{}", self.0)
    }
}

/// Why a reply (or a timeout) was discarded: the trace's type, so the
/// runtime and the trace reader name the reasons once.
pub use turno_trace::actor::StaleReason;

/// Identifies one timer within its system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TimerId(pub(crate) u64);

impl TimerId {
    /// The number behind the id, as it appears in traces.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timer-{}", self.0)
    }
}

/// The root of the supervision tree: the parent of top-level actors, on
/// either scheduler, as it appears in traces.
pub const ROOT: ActorId = ActorId(0);

/// An actor's place in the supervision tree: the names from the root down,
/// each after a `/`, as in `/orders/worker`. The root itself is `/`.
///
/// A path is built from [`Props::name`](crate::Props::name)s, so an actor
/// spawned with the same names under the same parents has the same path in
/// every run of the program: unlike an [`ActorId`], which counts spawns, it
/// can name an actor across a restart of the process (what persistence
/// stores). Names are unique among live siblings, so a path names at most
/// one live actor. An actor spawned without a name gets the segment
/// `$<id>` (`$` cannot start a given name): its path is unique but not
/// stable, and neither are the paths below it.
///
/// A restarted actor keeps its path; once an actor has stopped, its name
/// may be given to a new sibling.
///
/// ```
/// use turno::{Actor, ActorPath, Context, DetSystem, Props, System};
///
/// struct Idle;
/// impl Actor for Idle {
///     type Msg = ();
///     fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {}
/// }
///
/// let sys = DetSystem::new(1);
/// let orders = sys.spawn(Props::new().name("orders"), || Idle).unwrap();
/// assert_eq!(orders.path().as_str(), "/orders");
/// assert_eq!(orders.path().name(), "orders");
/// assert_eq!(orders.path().parent(), Some(ActorPath::root()));
/// assert_eq!(sys.actor_at("/orders"), Some(orders.id()));
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActorPath(Arc<str>);

impl ActorPath {
    /// The root of the tree, `/`: the parent of top-level actors.
    pub fn root() -> ActorPath {
        Self::root_ref().clone()
    }

    /// The root's one shared text: every top-level spawn names its parent,
    /// and a fresh `Arc<str>` each time was an allocation per spawn (a
    /// borrow of it not even a count).
    pub(crate) fn root_ref() -> &'static ActorPath {
        static ROOT: std::sync::LazyLock<ActorPath> =
            std::sync::LazyLock::new(|| ActorPath("/".into()));
        &ROOT
    }

    /// The path of a child named `name` (already checked by
    /// [`check_name`]).
    pub(crate) fn child(&self, name: &str) -> ActorPath {
        self.child_with(name.len(), |s| s.push_str(name))
    }

    /// The path of the unnamed child `id`: segment `$<id>`. Built on the
    /// stack when it fits, so that it costs one allocation (the `Arc`), not
    /// a `String` as well: every actor spawned without a name pays this.
    pub(crate) fn unnamed_child(&self, id: ActorId) -> ActorPath {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(id.0);
        let mut buf = [0u8; 64];
        let sep = usize::from(!self.is_root());
        let len = self.0.len() + sep + 1 + digits.len();
        let on_the_heap = || {
            self.child_with(1 + digits.len(), |s| {
                s.push('$');
                s.push_str(digits);
            })
        };
        if len > buf.len() {
            return on_the_heap();
        }
        let parts: [&[u8]; 4] = [self.0.as_bytes(), &b"/"[..sep], b"$", digits.as_bytes()];
        let mut at = 0;
        for part in parts {
            buf[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        // A path and ASCII digits are UTF-8: the fallback is never taken.
        std::str::from_utf8(&buf[..len]).map_or_else(|_| on_the_heap(), |p| ActorPath(p.into()))
    }

    fn child_with(&self, len: usize, segment: impl FnOnce(&mut String)) -> ActorPath {
        let mut s = String::with_capacity(self.0.len() + 1 + len);
        s.push_str(&self.0);
        if !self.is_root() {
            s.push('/');
        }
        segment(&mut s);
        ActorPath(s.into())
    }

    /// The path as text, e.g. `/orders/worker`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for `/`.
    pub fn is_root(&self) -> bool {
        &*self.0 == "/"
    }

    /// The last segment: the actor's name (`""` for the root).
    pub fn name(&self) -> &str {
        match self.0.rfind('/') {
            Some(i) => &self.0[i + 1..],
            None => &self.0,
        }
    }

    /// The parent's path; `None` for the root.
    pub fn parent(&self) -> Option<ActorPath> {
        if self.is_root() {
            return None;
        }
        match self.0.rfind('/') {
            Some(0) | None => Some(ActorPath::root()),
            Some(i) => Some(ActorPath(self.0[..i].into())),
        }
    }

    /// The names from the top-level actor down (none for the root).
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }
}

impl std::borrow::Borrow<str> for ActorPath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActorPath({:?})", &*self.0)
    }
}

impl Serialize for ActorPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Why a name given in [`Props::name`](crate::Props::name) cannot name an
/// actor: it must be a non-empty path segment of printable characters,
/// and not one the runtime generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is the empty string.
    #[error("a name cannot be empty")]
    Empty,
    /// The name contains `/`, which separates the segments of a path.
    #[error("a name cannot contain '/', which separates the names of a path")]
    Slash,
    /// The name starts with `$`, kept for actors spawned without a name.
    #[error("a name cannot start with '$', which marks actors spawned without a name")]
    Reserved,
    /// The name contains a control character (a newline, a tab...).
    #[error("a name cannot contain control characters")]
    Control,
}

/// Checks that `name` can be a segment of an [`ActorPath`].
pub(crate) fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        Err(NameError::Empty)
    } else if name.contains('/') {
        Err(NameError::Slash)
    } else if name.starts_with('$') {
        Err(NameError::Reserved)
    } else if name.chars().any(char::is_control) {
        Err(NameError::Control)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_split_and_name_their_parent() {
        let root = ActorPath::root();
        let sup = root.child("sup");
        let worker = sup.child("worker");
        assert_eq!(sup.as_str(), "/sup");
        assert_eq!(worker.as_str(), "/sup/worker");
        assert_eq!(worker.name(), "worker");
        assert_eq!(root.name(), "");
        assert_eq!(worker.parent(), Some(sup.clone()));
        assert_eq!(sup.parent(), Some(root.clone()));
        assert_eq!(root.parent(), None);
        assert_eq!(worker.segments().collect::<Vec<_>>(), ["sup", "worker"]);
        assert_eq!(root.segments().count(), 0);
        assert_eq!(worker.unnamed_child(ActorId(7)).as_str(), "/sup/worker/$7");
        assert_eq!(root.unnamed_child(ActorId(7)).name(), "$7");
        assert_eq!(root.unnamed_child(ActorId(7)).as_str(), "/$7");
        assert_eq!(
            root.unnamed_child(ActorId(u64::MAX)).as_str(),
            format!("/${}", u64::MAX)
        );
        let deep = root.child(&"n".repeat(70));
        assert_eq!(
            deep.unnamed_child(ActorId(12)).as_str(),
            format!("/{}/$12", "n".repeat(70))
        );
    }

    #[test]
    fn names_that_cannot_be_segments_are_refused() {
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name("a/b"), Err(NameError::Slash));
        assert_eq!(check_name("$3"), Err(NameError::Reserved));
        assert_eq!(check_name("a\nb"), Err(NameError::Control));
        assert_eq!(check_name("worker-1 (eu)"), Ok(()));
    }
}
