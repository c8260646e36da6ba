//! An asymmetric fence pair for a Dekker hand-shake whose two sides run at
//! very different rates: a consumer, after every take, against a sender
//! that registers to wait for room, which happens only when the buffer is
//! full and the sender's short spin found no room. Two users:
//!
//! - the buffered stream's take, between its store of the take and its
//!   load of the senders' count (`stream/buffered/shared.rs`);
//! - a mailbox's take (`Lane::take`), between its store of `taken` and its
//!   load of `tail`, whose depth tells the mailbox whether a sender may
//!   have been refused and be waiting (`crate::waiters`); the outside
//!   sender's registration (`Waiters::register`) is the heavy side.
//!
//! A symmetric pair (a `SeqCst` fence on both sides) makes the consumer
//! wait, on every take, for its stores to drain before its load of the
//! senders' count: measured on the bounded stream benches, that fence took
//! a sixth of the consumer's throughput (the run is kept in `bench/runs/`). Here the
//! frequent side, [`light`], is only a compiler fence, and the rare side,
//! [`heavy`], is Linux's `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`:
//! the kernel makes every thread of the process that is running execute a
//! full memory barrier before the call returns (a thread not running has
//! passed one in its context switch). That gives the hand-shake its two
//! fences: either the consumer's load of the count comes after the barrier
//! the call forced on it, and sees the registration (stored before the
//! call), or its store of the take comes before that barrier, and the
//! sender's load after the call sees it. The same technique as the
//! asymmetric fences of user-space RCU and Folly.
//!
//! Where the call is not available (not Linux, an old kernel, a seccomp
//! filter), [`init`] finds out once and both sides fence as before. The
//! consumer uses the light fence only after [`init`] has registered the
//! process for the call, and every sender then uses the call, so the two
//! sides never mix a light fence with a plain one. Under loom both are a
//! `SeqCst` fence: the model checks the hand-shake with two fences, which
//! is what this pair provides.

#[cfg(all(target_os = "linux", not(turno_loom)))]
mod imp {
    use std::sync::atomic::{compiler_fence, fence, AtomicBool, Ordering};
    use std::sync::OnceLock;

    const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// Set once, when the process is registered: from then on the light
    /// side is a compiler fence and the heavy side the call.
    static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
    static INIT: OnceLock<bool> = OnceLock::new();

    /// The commands the kernel supports (`MEMBARRIER_CMD_QUERY`), for the
    /// test below; `None` if the call itself is missing.
    #[cfg(test)]
    fn supported() -> Option<libc::c_long> {
        // SAFETY: as in `membarrier`.
        let r =
            unsafe { libc::syscall(libc::SYS_membarrier, 0, 0 as libc::c_uint, 0 as libc::c_int) };
        (r >= 0).then_some(r)
    }

    fn membarrier(cmd: libc::c_int) -> bool {
        // SAFETY: `membarrier` takes two integers and touches no memory of
        // ours; an unknown command or an old kernel answers an error.
        let r = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_uint,
                0 as libc::c_int,
            )
        };
        r == 0
    }

    pub(crate) fn init() -> bool {
        *INIT.get_or_init(|| {
            let ok = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
            if ok {
                ASYMMETRIC.store(true, Ordering::SeqCst);
            }
            ok
        })
    }

    #[inline]
    pub(crate) fn light() {
        light_where(true);
    }

    #[inline]
    pub(crate) fn light_where(needed: bool) {
        if ASYMMETRIC.load(Ordering::Relaxed) {
            compiler_fence(Ordering::SeqCst);
        } else if needed {
            fence(Ordering::SeqCst);
        }
    }

    pub(crate) fn heavy() {
        if init() {
            // Registered, so the call does not fail (its only errors are an
            // unknown command and an unregistered process); a fence as well
            // would change nothing for a consumer that uses the light side.
            let done = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
            debug_assert!(done, "membarrier failed after registration");
            if !done {
                // Not expected; at least order this side.
                fence(Ordering::SeqCst);
            }
        } else {
            fence(Ordering::SeqCst);
        }
    }

    #[cfg(test)]
    mod tests {
        /// Where the kernel offers the private expedited command, `init`
        /// registers for it (a wrong command number would leave both sides
        /// fencing, silently), and the heavy side's call then succeeds (its
        /// debug assertion).
        #[test]
        fn the_pair_is_asymmetric_where_the_kernel_offers_it() {
            let offered = super::supported().is_some_and(|cmds| {
                cmds & libc::c_long::from(super::MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0
            });
            assert_eq!(super::init(), offered);
            assert_eq!(
                super::ASYMMETRIC.load(std::sync::atomic::Ordering::SeqCst),
                offered
            );
            super::heavy();
            super::light();
        }
    }
}

#[cfg(not(all(target_os = "linux", not(turno_loom))))]
mod imp {
    use crate::sync::fence;
    use std::sync::atomic::Ordering;

    pub(crate) fn init() -> bool {
        false
    }

    #[inline]
    pub(crate) fn light() {
        fence(Ordering::SeqCst);
    }

    #[inline]
    pub(crate) fn light_where(needed: bool) {
        if needed {
            fence(Ordering::SeqCst);
        }
    }

    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
    }
}

/// Registers the process for the heavy side, once (later calls only read
/// the answer); true when the pair is asymmetric. Called before a light
/// fence is first needed (a suspend stream's creation, a system's), so
/// that its consumer does not fence fully until a sender finds out. (Were
/// it not called, both sides would still be ordered: `heavy` calls it
/// first, and `light` stays a full fence until it has succeeded.)
pub(crate) use imp::init;

/// The frequent side: a compiler fence once [`init`] succeeded, else a
/// `SeqCst` fence.
pub(crate) use imp::light;

/// [`light`] for a caller that needs the order only sometimes (a mailbox's
/// take: only a suspend lane has senders waiting for room): when the pair
/// is not asymmetric, the full fence only where `needed`.
pub(crate) use imp::light_where;

/// The rare side: `membarrier` once [`init`] succeeded, else a `SeqCst`
/// fence.
pub(crate) use imp::heavy;
