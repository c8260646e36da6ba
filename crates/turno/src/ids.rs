//! The identities of the runtime, in one leaf module that depends on
//! nothing else in the crate: actors, requests, timers, the root of the
//! supervision tree, actor paths, and why a reply is stale.
//!
//! Each kind has its own sequence within a system (actors from 1, the root
//! being 0; requests from 1; timers from 1), so spawning an actor does not
//! shift request ids and a trace reads the same kind of number for the same
//! kind of thing.

use std::alloc::{self, Layout};
use std::fmt;
use std::mem::{size_of, ManuallyDrop};
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{fence, AtomicUsize};

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
// `repr(transparent)`: one `NonNull`, so that the mailbox's path cell can
// lend its word as a path (`PathCell::get`).
#[repr(transparent)]
pub struct ActorPath(NonNull<PathText>);

/// The start of a path's one allocation: its count and its length, the
/// text's bytes right after. A path is one word (a thin pointer), not the
/// two of an `Arc<str>`: every idle actor keeps one (see the mailbox's
/// `PathCell`).
#[repr(C)]
pub(crate) struct PathText {
    count: AtomicUsize,
    len: usize,
}

// SAFETY: the text is never written after it is built and its count is
// atomic: a path is shared across threads as an `Arc<str>` is.
unsafe impl Send for ActorPath {}
// SAFETY: as above.
unsafe impl Sync for ActorPath {}

impl ActorPath {
    /// The allocation of a path of `len` bytes: the header, then the text.
    fn layout(len: usize) -> Layout {
        let (layout, _) = Layout::new::<PathText>()
            .extend(Layout::array::<u8>(len).expect("a path fits in memory"))
            .expect("a path fits in memory");
        layout
    }

    /// A path whose text is `parts` one after the other (valid UTF-8 each),
    /// in one allocation.
    fn from_parts(parts: &[&str]) -> ActorPath {
        let len = parts.iter().map(|p| p.len()).sum();
        let layout = Self::layout(len);
        // SAFETY: the layout is never zero-sized (it has the header).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(header) = NonNull::new(raw.cast::<PathText>()) else {
            alloc::handle_alloc_error(layout)
        };
        // SAFETY: `raw` is a fresh allocation of `layout`: the header at its
        // start, `len` bytes after it, written once here before it is shared.
        unsafe {
            header.as_ptr().write(PathText {
                count: AtomicUsize::new(1),
                len,
            });
            let mut at = raw.add(size_of::<PathText>());
            for part in parts {
                ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
        }
        ActorPath(header)
    }

    /// The path's address, for the mailbox's one-word path cell.
    pub(crate) fn into_raw(self) -> NonNull<PathText> {
        ManuallyDrop::new(self).0
    }

    /// Takes back a path given away by [`ActorPath::into_raw`].
    ///
    /// # Safety
    /// `raw` came from `into_raw` and is taken back once.
    pub(crate) unsafe fn from_raw(raw: NonNull<PathText>) -> ActorPath {
        ActorPath(raw)
    }

    /// The root of the tree, `/`: the parent of top-level actors.
    pub fn root() -> ActorPath {
        Self::root_ref().clone()
    }

    /// The root's one shared text: every top-level spawn names its parent,
    /// and a fresh allocation each time was an allocation per spawn (a
    /// borrow of it not even a count).
    pub(crate) fn root_ref() -> &'static ActorPath {
        static ROOT: std::sync::LazyLock<ActorPath> =
            std::sync::LazyLock::new(|| ActorPath::from_parts(&["/"]));
        &ROOT
    }

    /// The path of a child named `name` (already checked by
    /// [`check_name`]).
    pub(crate) fn child(&self, name: &str) -> ActorPath {
        ActorPath::from_parts(&[self.as_str(), self.separator(), name])
    }

    /// The path of the unnamed child `id`: segment `$<id>`, in one
    /// allocation (every actor spawned without a name, once asked for its
    /// path, pays this).
    pub(crate) fn unnamed_child(&self, id: ActorId) -> ActorPath {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(id.0);
        ActorPath::from_parts(&[self.as_str(), self.separator(), "$", digits])
    }

    /// What goes between this path and a child's segment: nothing after
    /// the root's `/`.
    fn separator(&self) -> &'static str {
        if self.is_root() {
            ""
        } else {
            "/"
        }
    }

    /// The path as text, e.g. `/orders/worker`.
    pub fn as_str(&self) -> &str {
        // SAFETY: the header and the `len` bytes after it were written by
        // `from_parts` from UTF-8 parts, never written again, and are alive
        // while this path (a count) is.
        unsafe {
            let header = self.0.as_ptr();
            let len = (*header).len;
            let text = header.cast::<u8>().add(size_of::<PathText>());
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(text, len))
        }
    }

    fn header(&self) -> &PathText {
        // SAFETY: alive while this path (a count) is; see `as_str`.
        unsafe { self.0.as_ref() }
    }

    /// True for `/`.
    pub fn is_root(&self) -> bool {
        self.as_str() == "/"
    }

    /// The last segment: the actor's name (`""` for the root).
    pub fn name(&self) -> &str {
        let path = self.as_str();
        match path.rfind('/') {
            Some(i) => &path[i + 1..],
            None => path,
        }
    }

    /// The parent's path; `None` for the root.
    pub fn parent(&self) -> Option<ActorPath> {
        if self.is_root() {
            return None;
        }
        let path = self.as_str();
        match path.rfind('/') {
            Some(0) | None => Some(ActorPath::root()),
            Some(i) => Some(ActorPath::from_parts(&[&path[..i]])),
        }
    }

    /// The names from the top-level actor down (none for the root).
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.as_str().split('/').filter(|s| !s.is_empty())
    }
}

impl Clone for ActorPath {
    fn clone(&self) -> Self {
        // Relaxed, as `Arc::clone`: a new count is made from one held.
        let old = self.header().count.fetch_add(1, Relaxed);
        // As `Arc`: a count this high is leaked clones; wrapping would free
        // a live text.
        if old > isize::MAX as usize {
            std::process::abort();
        }
        ActorPath(self.0)
    }
}

impl Drop for ActorPath {
    fn drop(&mut self) {
        // Release, then an acquire fence by the last one, as `Arc`'s drop:
        // every use of the text happens before it is freed.
        if self.header().count.fetch_sub(1, Release) != 1 {
            return;
        }
        fence(Acquire);
        let layout = Self::layout(self.header().len);
        // SAFETY: the last count: nobody else can reach the allocation,
        // made by `from_parts` with this layout.
        unsafe { alloc::dealloc(self.0.as_ptr().cast(), layout) }
    }
}

impl PartialEq for ActorPath {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ActorPath {}

impl PartialOrd for ActorPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ActorPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for ActorPath {
    /// As the text's: a map keyed by paths is looked up by `&str`
    /// ([`Borrow`](std::borrow::Borrow)).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl std::borrow::Borrow<str> for ActorPath {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActorPath({:?})", self.as_str())
    }
}

impl Serialize for ActorPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
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
