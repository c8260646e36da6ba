//! An actor's path as its mailbox keeps it: one word, written lazily for
//! unnamed actors (see [`PathCell`]).

use std::ptr::{self, NonNull};
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::{Acquire, Release};

use crate::ids::{ActorId, ActorPath, PathText};

/// An actor's path as its mailbox keeps it, in one word: a named actor's
/// path, or an unnamed actor's parent's path until its own (`$<id>` under
/// the parent) is first asked for, written then. Most actors are unnamed
/// and never asked for their path (only names, traces, errors and metrics
/// ask), so spawning one costs no allocation for it, and an idle one keeps
/// one word (the three of an `Arc<str>` and a pointer before).
pub(crate) struct PathCell {
    /// The actor's own path, bit 0 clear: an owned [`ActorPath`]'s address
    /// (never written again once there, so [`PathCell::get`] lends the word
    /// itself as the path); or bit 0 set: the parent's, owned, until the
    /// own is written ([`PARENT_IS_ROOT`] alone for the root, so that a
    /// top-level spawn touches no shared count). Only [`PathCell::write`]
    /// changes it, and only it reads a parent's path, under [`WRITING`], so
    /// the parent's count it drops is never being read.
    word: AtomicPtr<PathText>,
}

/// The parent tag of [`PathCell::word`] (a path's allocation is aligned to
/// a word, so its address's bit 0 is free).
const PARENT: usize = 1;
/// The word of an unnamed top-level actor's cell before its path is
/// written: the root's path, not counted.
const PARENT_IS_ROOT: usize = PARENT;

/// Held while an unnamed actor's path is written: the first ask for a
/// path is rare (names, traces, errors), and the lock lets the writer drop
/// the parent's count it replaces while no other writer reads it.
static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl PathCell {
    /// The path of a child of `parent`: `named` if given (see
    /// [`Props::check`](crate::Props)), else `$<id>` under `parent`, written
    /// when first asked for.
    pub(crate) fn new(parent: &ActorPath, named: Option<ActorPath>) -> PathCell {
        let word = match named {
            Some(path) => path.into_raw().as_ptr(),
            None if parent.is_root() => ptr::without_provenance_mut(PARENT_IS_ROOT),
            None => parent.clone().into_raw().as_ptr().map_addr(|a| a | PARENT),
        };
        PathCell {
            word: AtomicPtr::new(word),
        }
    }

    /// The actor's own path, if it is there (a named actor's, or an
    /// unnamed one's once written).
    #[inline]
    fn own(&self) -> Option<&ActorPath> {
        let p = self.word.load(Acquire);
        if p.addr() & PARENT != 0 {
            return None;
        }
        // SAFETY: bit 0 clear: the word is an owned `ActorPath`'s address
        // (`ActorPath` is one `NonNull`), published by the acquire above and
        // never written again until the cell is dropped (`&mut self`), so
        // the word itself can be lent as the path.
        Some(unsafe { &*self.word.as_ptr().cast::<ActorPath>() })
    }

    /// The path of actor `id` (the id this cell was made for), written now
    /// if this is the first time an unnamed actor's is asked for.
    #[inline]
    pub(crate) fn get(&self, id: ActorId) -> &ActorPath {
        match self.own() {
            Some(path) => path,
            None => self.write(id),
        }
    }

    /// Writes an unnamed actor's own path (unless a racing ask did).
    #[cold]
    #[inline(never)]
    fn write(&self, id: ActorId) -> &ActorPath {
        let writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
        let p = self.word.load(Acquire);
        if p.addr() & PARENT != 0 {
            let parent = NonNull::new(p.map_addr(|a| a & !PARENT)).map(|raw| {
                // SAFETY: a parent's address, bit 0 set by `new` from an
                // owned path's `into_raw`; taken back once, here, under
                // `WRITING` (no other writer reads it meanwhile).
                unsafe { ActorPath::from_raw(raw) }
            });
            let own = parent
                .as_ref()
                .unwrap_or(ActorPath::root_ref())
                .unnamed_child(id);
            self.word.store(own.into_raw().as_ptr(), Release);
            // The parent's count goes: the own path has its text.
            drop(parent);
        }
        drop(writing);
        self.own().expect("the own path is written")
    }

    /// True when the actor was spawned with a name (an unnamed actor's
    /// written segment starts with `$`, which no name does).
    pub(crate) fn is_named(&self) -> bool {
        self.own().is_some_and(|path| !path.name().starts_with('$'))
    }

    /// The actor's name, the path's last segment, without writing the
    /// path (a metric's label).
    pub(crate) fn name(&self, id: ActorId) -> String {
        match self.own() {
            Some(path) => path.name().to_string(),
            None => format!("${}", id.as_u64()),
        }
    }
}

impl Drop for PathCell {
    fn drop(&mut self) {
        let p = *self.word.get_mut();
        let owned = if p.addr() & PARENT == 0 {
            NonNull::new(p)
        } else {
            NonNull::new(p.map_addr(|a| a & !PARENT))
        };
        if let Some(raw) = owned {
            // SAFETY: the word owns the path at this address (its own, or
            // the parent's, from `into_raw`); `&mut self`: nothing borrows it.
            drop(unsafe { ActorPath::from_raw(raw) });
        }
    }
}

#[cfg(all(test, not(turno_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_path_cell_writes_an_unnamed_path_once_asked_and_keeps_a_named_one() {
        let root = ActorPath::root();
        let top = PathCell::new(&root, None);
        assert!(!top.is_named());
        assert_eq!(top.name(ActorId(3)), "$3");
        assert!(top.own().is_none(), "a name does not write the path");
        let path = top.get(ActorId(3));
        assert_eq!(path.as_str(), "/$3");
        assert!(std::ptr::eq(path, top.get(ActorId(3))), "written once");
        assert_eq!(top.name(ActorId(3)), "$3");

        let sup = root.child("sup");
        let named = PathCell::new(&root, Some(sup.clone()));
        assert!(named.is_named());
        assert_eq!(named.get(ActorId(4)), &sup);
        assert_eq!(named.name(ActorId(4)), "sup");

        let child = PathCell::new(&sup, None);
        assert_eq!(child.get(ActorId(5)).as_str(), "/sup/$5");
        assert_eq!(child.get(ActorId(5)).parent(), Some(sup));
        assert!(!child.is_named());
        // One word inline: the own path, or the parent's.
        assert_eq!(std::mem::size_of::<PathCell>(), 8);
        assert_eq!(std::mem::size_of::<ActorPath>(), 8);
    }
}
