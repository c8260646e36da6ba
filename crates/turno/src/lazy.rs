//! A part of a shared structure allocated on its first use, so that an
//! idle actor pays one pointer for what only some actors need (the lane's
//! rare counters, the mailbox's muted senders).
//!
//! Lock-free: the first user allocates and installs with one
//! compare-exchange; a racing loser frees its copy and uses the winner's.
//! A part may also be *sealed* while still unallocated (a closing mailbox
//! does this): no one can allocate it afterwards, and every later
//! [`LazyBox::get_or_init`] answers `None`.

use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

use crate::sync::AtomicPtr;

/// A `T` allocated on first use; see the [module docs](self).
pub(crate) struct LazyBox<T> {
    /// Null (not allocated), [`sealed`] (never will be), or a pointer from
    /// `Box::into_raw`, owned by this value.
    ptr: AtomicPtr<T>,
    /// Owns a `T`: `Send`/`Sync` as `Box<T>` is.
    _owns: PhantomData<Box<T>>,
}

/// The sealed marker: a dangling, aligned address no allocation of a
/// non-zero-sized `T` returns.
fn sealed<T>() -> *mut T {
    ptr::dangling_mut()
}

impl<T> LazyBox<T> {
    pub(crate) fn new() -> Self {
        const { assert!(std::mem::size_of::<T>() > 0) };
        LazyBox {
            ptr: AtomicPtr::new(ptr::null_mut()),
            _owns: PhantomData,
        }
    }

    /// A part sealed from the start: never allocated.
    pub(crate) fn new_sealed() -> Self {
        const { assert!(std::mem::size_of::<T>() > 0) };
        LazyBox {
            ptr: AtomicPtr::new(sealed()),
            _owns: PhantomData,
        }
    }

    /// True once sealed (then never allocated).
    #[inline]
    pub(crate) fn is_sealed(&self) -> bool {
        self.ptr.load(Acquire) == sealed()
    }

    /// The part, if it was allocated.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        let p = self.ptr.load(Acquire);
        if p.is_null() || p == sealed() {
            return None;
        }
        // SAFETY: a non-null, non-sealed pointer came from `Box::into_raw`
        // in `init`, published by its compare-exchange (acquire above), and
        // is freed only by `drop`, which has `&mut self`.
        Some(unsafe { &*p })
    }

    /// The part, made by `make` now if this is its first use (a racing
    /// first use may make one too: one of them is kept); `None` once sealed.
    #[inline]
    pub(crate) fn get_or_init_with(&self, make: impl FnOnce() -> T) -> Option<&T> {
        let p = self.ptr.load(Acquire);
        if p.is_null() {
            return self.init(make);
        }
        if p == sealed() {
            return None;
        }
        // SAFETY: as in `get`.
        Some(unsafe { &*p })
    }

    #[cold]
    #[inline(never)]
    fn init(&self, make: impl FnOnce() -> T) -> Option<&T> {
        let new = Box::into_raw(Box::new(make()));
        match self
            .ptr
            .compare_exchange(ptr::null_mut(), new, AcqRel, Acquire)
        {
            // SAFETY: just installed; owned by `self` from now on.
            Ok(_) => Some(unsafe { &*new }),
            Err(other) => {
                // SAFETY: `new` was never shared.
                drop(unsafe { Box::from_raw(new) });
                if other == sealed() {
                    None
                } else {
                    // SAFETY: as in `get`.
                    Some(unsafe { &*other })
                }
            }
        }
    }

    /// Seals the part if it was never allocated (`None`: nobody can
    /// allocate it from now on); otherwise the part. A read-modify-write,
    /// so it and every allocation are totally ordered.
    pub(crate) fn seal(&self) -> Option<&T> {
        match self
            .ptr
            .compare_exchange(ptr::null_mut(), sealed(), AcqRel, Acquire)
        {
            Ok(_) => None,
            Err(p) if p == sealed() => None,
            // SAFETY: as in `get`.
            Err(p) => Some(unsafe { &*p }),
        }
    }
}

impl<T: Default> LazyBox<T> {
    /// The part, allocated now if this is its first use; `None` once sealed.
    #[inline]
    pub(crate) fn get_or_init(&self) -> Option<&T> {
        self.get_or_init_with(T::default)
    }
}

impl<T: Default> Default for LazyBox<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for LazyBox<T> {
    fn drop(&mut self) {
        let p = self.ptr.load(Acquire);
        if !p.is_null() && p != sealed() {
            // SAFETY: `&mut self`: no reference handed out by `get` is
            // alive; the pointer came from `Box::into_raw` and is freed once.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A lazily allocated counter for the loom model (`tests/lazy_loom.rs`),
/// with a deliberately broken first use the model must catch.
#[cfg(turno_loom)]
pub mod model {
    use super::LazyBox;
    use crate::sync::AtomicUsize;
    use std::sync::atomic::Ordering::{Relaxed, Release};

    /// The part: one counter.
    pub struct Part(AtomicUsize);

    impl Default for Part {
        fn default() -> Self {
            Part(AtomicUsize::new(0))
        }
    }

    /// A `LazyBox<Part>`.
    pub struct ModelLazy {
        inner: LazyBox<Part>,
        /// Install the first part with a plain store instead of the
        /// compare-exchange (the injected bug).
        racy: bool,
    }

    impl ModelLazy {
        /// A model; `racy` injects the bug.
        pub fn new(racy: bool) -> Self {
            ModelLazy {
                inner: LazyBox::new(),
                racy,
            }
        }

        /// Adds one to the part, allocating it first if needed; false once
        /// sealed.
        pub fn add_one(&self) -> bool {
            let part = if self.racy && self.inner.get().is_none() {
                let new = Box::into_raw(Box::<Part>::default());
                self.inner.ptr.store(new, Release);
                // SAFETY: just allocated; the model only reads it (and
                // leaks what a racing store overwrote).
                Some(unsafe { &*new })
            } else {
                self.inner.get_or_init()
            };
            part.map(|p| p.0.fetch_add(1, Relaxed)).is_some()
        }

        /// Seals the part; its count if it was allocated.
        pub fn seal(&self) -> Option<usize> {
            self.inner.seal().map(|p| p.0.load(Relaxed))
        }

        /// The count, if the part was allocated.
        pub fn total(&self) -> Option<usize> {
            self.inner.get().map(|p| p.0.load(Relaxed))
        }
    }
}

#[cfg(all(test, not(turno_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    #[test]
    fn allocated_once_then_shared_and_sealing_refuses_later_allocations() {
        let lazy: LazyBox<AtomicU64> = LazyBox::new();
        assert!(lazy.get().is_none());
        lazy.get_or_init().unwrap().fetch_add(1, Relaxed);
        lazy.get_or_init().unwrap().fetch_add(1, Relaxed);
        assert_eq!(lazy.get().unwrap().load(Relaxed), 2);
        // Sealing an allocated part hands it over.
        assert_eq!(lazy.seal().unwrap().load(Relaxed), 2);

        let sealed: LazyBox<AtomicU64> = LazyBox::new();
        assert!(sealed.seal().is_none());
        assert!(sealed.get_or_init().is_none());
        assert!(sealed.get().is_none());
        assert!(sealed.seal().is_none());
    }

    #[test]
    fn racing_first_uses_agree_on_one_part() {
        let lazy: LazyBox<AtomicU64> = LazyBox::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        lazy.get_or_init().unwrap().fetch_add(1, Relaxed);
                    }
                });
            }
        });
        assert_eq!(lazy.get().unwrap().load(Relaxed), 4000);
    }
}
