//! Mailbox overflow policies as they appear in traces.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A mailbox's policy, written `unbounded`, `keep-newest(N)`,
/// `keep-oldest(N)`, `reject(N)` or `suspend(N)` (the `policy` of `spawn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// No bound (the hazard).
    Unbounded,
    /// A sliding window: the oldest queued message is evicted.
    KeepNewest(usize),
    /// The incoming message is dropped.
    KeepOldest(usize),
    /// The sender gets its message back.
    Reject(usize),
    /// The sender waits (or is muted).
    Suspend(usize),
}

impl Policy {
    /// The capacity, `None` when unbounded.
    pub fn capacity(&self) -> Option<usize> {
        match *self {
            Policy::Unbounded => None,
            Policy::KeepNewest(n)
            | Policy::KeepOldest(n)
            | Policy::Reject(n)
            | Policy::Suspend(n) => Some(n),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Policy::Unbounded => return f.write_str("unbounded"),
            Policy::KeepNewest(_) => "keep-newest",
            Policy::KeepOldest(_) => "keep-oldest",
            Policy::Reject(_) => "reject",
            Policy::Suspend(_) => "suspend",
        };
        write!(f, "{name}({})", self.capacity().unwrap_or(0))
    }
}

/// A policy text that is not one of the five forms.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a mailbox policy: {0:?} (expected unbounded, keep-newest(N), keep-oldest(N), reject(N) or suspend(N))")]
pub struct PolicyParseError(pub String);

impl FromStr for Policy {
    type Err = PolicyParseError;

    /// ```
    /// use turno_trace::Policy;
    /// assert_eq!("keep-newest(16)".parse(), Ok(Policy::KeepNewest(16)));
    /// assert_eq!(Policy::Suspend(3).to_string(), "suspend(3)");
    /// assert!("keep-newest".parse::<Policy>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "unbounded" {
            return Ok(Policy::Unbounded);
        }
        let err = || PolicyParseError(s.to_owned());
        let (name, rest) = s.split_once('(').ok_or_else(err)?;
        let n: usize = rest
            .strip_suffix(')')
            .and_then(|n| n.parse().ok())
            .ok_or_else(err)?;
        match name {
            "keep-newest" => Ok(Policy::KeepNewest(n)),
            "keep-oldest" => Ok(Policy::KeepOldest(n)),
            "reject" => Ok(Policy::Reject(n)),
            "suspend" => Ok(Policy::Suspend(n)),
            _ => Err(err()),
        }
    }
}

impl Serialize for Policy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The policy that lost a message (the `policy` of `drop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropPolicy {
    /// The oldest queued message was evicted.
    KeepNewest,
    /// The incoming message was dropped.
    KeepOldest,
}
