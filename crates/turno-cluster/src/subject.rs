//! Subjects as addresses: the escaped mapping of node names and actor paths
//! to NATS subjects.
//!
//! NATS splits a subject into tokens at `.`, gives `*` and `>` a wildcard
//! meaning, refuses whitespace and empty tokens, and reserves tokens that
//! start with `$`. Actor names may contain any of these, so every name
//! (one node name, one path segment) becomes **one token** by escaping:
//!
//! - ASCII letters, digits and `-` stand for themselves;
//! - every other byte of the name's UTF-8 text (including `_` itself)
//!   becomes `_` followed by two upper-case hex digits (`.` is `_2E`,
//!   `*` is `_2A`, `>` is `_3E`, a space is `_20`, `_` is `_5F`);
//! - the empty name is the lone token `_`.
//!
//! Each escaped token is made of `[A-Za-z0-9_-]` only, so it is a valid,
//! literal NATS token; the mapping is injective (distinct names, distinct
//! tokens) and [`unescape`] inverts it. Both properties are checked with
//! proptest over arbitrary Unicode.
//!
//! The subjects of a cluster whose prefix is `turno` (the default):
//!
//! | subject | carries |
//! |---|---|
//! | `turno.<node>.a.<seg>.<seg>…` | messages for the actor at `/<seg>/<seg>…` on `<node>` |
//! | `turno.<node>.a._t` | the tail markers of the tell streams to `<node>` |
//! | `turno.<node>.i.<incarnation>.<request>` | the reply to one request of `<node>` |
//! | `turno.<node>.i.s` | system messages for `<node>` (watches, terminations) |
//! | `turno._hb` | heartbeats of every node |
//!
//! `_hb` cannot be the escape of any node name (`_h` is not an escape), so
//! the heartbeat subject never collides with a node's subjects; `_t`
//! cannot be the escape of any path segment, so the tail subject is no
//! actor's. It lies under the actors' wildcard on purpose: a node receives
//! it on the same subscription as the tells, after them.
//!
//! ```
//! use turno_cluster::subject::{escape, unescape, Subjects};
//!
//! assert_eq!(escape("orders.eu"), "orders_2Eeu");
//! assert_eq!(unescape("orders_2Eeu").unwrap(), "orders.eu");
//! let s = Subjects::new("turno");
//! assert_eq!(s.actor("node a", "/pay*/>").unwrap(), "turno.node_20a.a.pay_2A._3E");
//! assert_eq!(s.parse_actor("node a", "turno.node_20a.a.pay_2A._3E").unwrap(), "/pay*/>");
//! ```

use std::fmt::Write as _;

/// A name or subject that does not follow the mapping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubjectError {
    /// A token holds a byte outside `[A-Za-z0-9_-]`, or a bad escape.
    #[error("token {0:?} is not an escaped name")]
    BadToken(String),
    /// An escaped token decodes to bytes that are not UTF-8.
    #[error("token {0:?} does not decode to UTF-8")]
    NotUtf8(String),
    /// An actor path that does not start with `/`.
    #[error("actor path {0:?} does not start with '/'")]
    NotAPath(String),
    /// A subject that is not one of this node's actor subjects.
    #[error("subject {0:?} is not an actor subject of this node")]
    Foreign(String),
}

fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Escapes one name into one NATS token (see the [module docs](self)).
pub fn escape(name: &str) -> String {
    if name.is_empty() {
        return "_".to_owned();
    }
    let mut out = String::with_capacity(name.len());
    for &b in name.as_bytes() {
        if plain(b) {
            out.push(b as char);
        } else {
            // Writing into a String cannot fail.
            let _ = write!(out, "_{b:02X}");
        }
    }
    out
}

/// Inverts [`escape`]: the name a token stands for.
pub fn unescape(token: &str) -> Result<String, SubjectError> {
    if token == "_" {
        return Ok(String::new());
    }
    let bytes = token.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let bad = || SubjectError::BadToken(token.to_owned());
    if bytes.is_empty() {
        return Err(bad());
    }
    while i < bytes.len() {
        let b = bytes[i];
        if plain(b) {
            out.push(b);
            i += 1;
        } else if b == b'_' {
            let hex = |c: u8| match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'A'..=b'F' => Some(c - b'A' + 10),
                _ => None,
            };
            let hi = bytes.get(i + 1).copied().and_then(hex).ok_or_else(bad)?;
            let lo = bytes.get(i + 2).copied().and_then(hex).ok_or_else(bad)?;
            let v = hi * 16 + lo;
            // An escape of a plain byte is not what `escape` writes:
            // refusing it keeps the mapping one-to-one both ways.
            if plain(v) {
                return Err(bad());
            }
            out.push(v);
            i += 3;
        } else {
            return Err(bad());
        }
    }
    String::from_utf8(out).map_err(|_| SubjectError::NotUtf8(token.to_owned()))
}

/// The subjects of one cluster, under a prefix (a literal NATS subject,
/// e.g. `turno`). See the [module docs](self) for the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subjects {
    prefix: String,
}

impl Subjects {
    /// The subjects under `prefix` (itself a valid literal subject, such as
    /// `turno` or `prod.turno`).
    pub fn new(prefix: impl Into<String>) -> Self {
        Subjects {
            prefix: prefix.into(),
        }
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The subject of the actor at `path` (`/a/b`) on `node`.
    pub fn actor(&self, node: &str, path: &str) -> Result<String, SubjectError> {
        let rest = path
            .strip_prefix('/')
            .ok_or_else(|| SubjectError::NotAPath(path.to_owned()))?;
        let mut s = format!("{}.{}.a", self.prefix, escape(node));
        for seg in rest.split('/') {
            s.push('.');
            s.push_str(&escape(seg));
        }
        Ok(s)
    }

    /// The wildcard a node subscribes to for all its actors.
    pub fn actors_of(&self, node: &str) -> String {
        format!("{}.{}.a.>", self.prefix, escape(node))
    }

    /// The subject of the tail markers of the tell streams to `node` (see
    /// [`crate::node`]): under [`Subjects::actors_of`], never an actor's.
    pub fn tail(&self, node: &str) -> String {
        format!("{}.{}.a._t", self.prefix, escape(node))
    }

    /// The actor path a subject of `node`'s actors stands for.
    pub fn parse_actor(&self, node: &str, subject: &str) -> Result<String, SubjectError> {
        let head = format!("{}.{}.a.", self.prefix, escape(node));
        let rest = subject
            .strip_prefix(&head)
            .ok_or_else(|| SubjectError::Foreign(subject.to_owned()))?;
        let mut path = String::new();
        for tok in rest.split('.') {
            path.push('/');
            path.push_str(&unescape(tok)?);
        }
        Ok(path)
    }

    /// The reply subject of request `req` of `node`'s incarnation `inc`.
    pub fn reply(&self, node: &str, inc: u64, req: u64) -> String {
        format!("{}.{}.i.{inc}.{req}", self.prefix, escape(node))
    }

    /// `(incarnation, request)` of a reply subject of `node`.
    pub fn parse_reply(&self, node: &str, subject: &str) -> Option<(u64, u64)> {
        let head = format!("{}.{}.i.", self.prefix, escape(node));
        let rest = subject.strip_prefix(&head)?;
        let (inc, req) = rest.split_once('.')?;
        Some((inc.parse().ok()?, req.parse().ok()?))
    }

    /// The subject of `node`'s system messages.
    pub fn system(&self, node: &str) -> String {
        format!("{}.{}.i.s", self.prefix, escape(node))
    }

    /// The wildcard a node subscribes to for its replies and system
    /// messages.
    pub fn inbox_of(&self, node: &str) -> String {
        format!("{}.{}.i.>", self.prefix, escape(node))
    }

    /// The heartbeat subject every node publishes to and subscribes to.
    pub fn heartbeat(&self) -> String {
        format!("{}._hb", self.prefix)
    }
}

impl Default for Subjects {
    fn default() -> Self {
        Subjects::new("turno")
    }
}

/// Whether a NATS subject matches a subscription's subject (with `*` for
/// one token and a final `>` for one or more).
pub fn matches(filter: &str, subject: &str) -> bool {
    let mut f = filter.split('.');
    let mut s = subject.split('.');
    loop {
        match (f.next(), s.next()) {
            (Some(">"), Some(_)) => return true,
            (Some("*"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn valid_token(t: &str) -> bool {
        !t.is_empty()
            && !t.starts_with('$')
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }

    #[test]
    fn reserved_characters_are_escaped() {
        assert_eq!(escape("a.b"), "a_2Eb");
        assert_eq!(escape("*"), "_2A");
        assert_eq!(escape(">"), "_3E");
        assert_eq!(escape(" \t\n"), "_20_09_0A");
        assert_eq!(escape("_"), "_5F");
        assert_eq!(escape("$sys"), "_24sys");
        assert_eq!(escape(""), "_");
        assert_eq!(escape("é"), "_C3_A9");
        assert!(unescape("_2e").is_err(), "lower-case hex is not written");
        assert!(unescape("_41").is_err(), "an escaped plain byte is refused");
        assert!(unescape("a_").is_err());
        assert!(unescape("a.b").is_err());
        assert!(unescape("").is_err());
    }

    #[test]
    fn subjects_of_a_node() {
        let s = Subjects::default();
        assert_eq!(s.actor("n1", "/").unwrap(), "turno.n1.a._");
        assert_eq!(s.parse_actor("n1", "turno.n1.a._").unwrap(), "/");
        assert_eq!(s.reply("n1", 7, 9), "turno.n1.i.7.9");
        assert_eq!(s.parse_reply("n1", "turno.n1.i.7.9"), Some((7, 9)));
        assert_eq!(s.parse_reply("n1", "turno.n1.i.s"), None);
        assert!(matches(&s.actors_of("n1"), "turno.n1.a.x.y"));
        assert!(!matches(&s.actors_of("n1"), "turno.n1.i.s"));
        assert!(matches(&s.inbox_of("n1"), &s.system("n1")));
        assert!(!matches(&s.actors_of("hb"), &s.heartbeat()));
        assert!(s.actor("n1", "no-slash").is_err());
        assert!(s.parse_actor("n2", "turno.n1.a.x").is_err());
    }

    proptest! {
        #[test]
        fn escape_round_trips_and_makes_one_valid_token(name in any::<String>()) {
            let t = escape(&name);
            prop_assert!(valid_token(&t), "{t:?}");
            prop_assert_eq!(unescape(&t).unwrap(), name);
        }

        #[test]
        fn escape_is_injective(a in any::<String>(), b in any::<String>()) {
            prop_assume!(a != b);
            prop_assert_ne!(escape(&a), escape(&b));
        }

        #[test]
        fn reserved_heavy_names_are_injective(
            a in "[._*> \\t$a-]{0,6}", b in "[._*> \\t$a-]{0,6}"
        ) {
            prop_assume!(a != b);
            prop_assert_ne!(escape(&a), escape(&b));
        }

        #[test]
        fn actor_subjects_round_trip_and_are_injective(
            node in "[a-z._* >]{1,6}",
            p in proptest::collection::vec(any::<String>(), 1..4),
            q in proptest::collection::vec(any::<String>(), 1..4),
        ) {
            let s = Subjects::default();
            let path_p = format!("/{}", p.join("/"));
            let path_q = format!("/{}", q.join("/"));
            let sp = s.actor(&node, &path_p).unwrap();
            prop_assert!(sp.split('.').all(valid_token), "{sp:?}");
            prop_assert!(matches(&s.actors_of(&node), &sp));
            prop_assert_eq!(s.parse_actor(&node, &sp).unwrap(), path_p.clone());
            if path_p != path_q {
                prop_assert_ne!(sp, s.actor(&node, &path_q).unwrap());
            }
        }
    }
}
