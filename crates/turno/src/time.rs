//! Time as actors see it.
//!
//! An [`Instant`] counts nanoseconds since the actor system started. On the
//! deterministic scheduler that clock is *virtual*: it only moves when the
//! test (or the demo) advances it, so timeouts and delays are exact and
//! repeatable.

use std::fmt;
use std::ops::{Add, Sub};
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sync::AtomicU64;

/// A point in time, in nanoseconds since the actor system started.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Instant(u64);

impl Instant {
    /// The system's start.
    pub const ZERO: Instant = Instant(0);

    /// Nanoseconds since the system started.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// The time elapsed since the system started.
    pub fn since_start(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The instant `nanos` nanoseconds after the start.
    pub fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        // Saturate rather than wrap: a timer set for "never" stays in the far future.
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(nanos))
    }
}

impl Sub for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.0 as f64 / 1e9)
    }
}

/// The system clock shared by mailboxes, contexts and the scheduler: virtual
/// (moved by the deterministic scheduler) or real (monotonic, since start).
#[derive(Debug)]
#[cfg_attr(turno_loom, allow(dead_code))] // the real clock serves the threaded scheduler only
pub(crate) enum Clock {
    Virtual(AtomicU64),
    Real(std::time::Instant),
}

impl Default for Clock {
    fn default() -> Self {
        Clock::Virtual(AtomicU64::new(0))
    }
}

#[cfg_attr(turno_loom, allow(dead_code))]
impl Clock {
    pub(crate) fn real() -> Self {
        Clock::Real(std::time::Instant::now())
    }

    pub(crate) fn now(&self) -> Instant {
        match self {
            Clock::Virtual(n) => Instant(n.load(Ordering::Acquire)),
            Clock::Real(start) => {
                Instant(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX))
            }
        }
    }

    /// Moves virtual time forward; never backwards. No effect on a real clock.
    pub(crate) fn advance_to(&self, t: Instant) {
        if let Clock::Virtual(n) = self {
            n.fetch_max(t.0, Ordering::AcqRel);
        }
    }

    /// The real `std` instant of `t`, for sleeping until it (real clock only).
    pub(crate) fn to_std(&self, t: Instant) -> Option<std::time::Instant> {
        match self {
            Clock::Real(start) => Some(*start + Duration::from_nanos(t.0)),
            Clock::Virtual(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_nanos(10);
        assert_eq!(t + Duration::from_nanos(5), Instant::from_nanos(15));
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!((t + Duration::MAX).as_nanos(), u64::MAX);
    }

    #[test]
    fn clock_only_moves_forward() {
        let c = Clock::default();
        c.advance_to(Instant::from_nanos(100));
        c.advance_to(Instant::from_nanos(50));
        assert_eq!(c.now(), Instant::from_nanos(100));
    }
}
