//! Which rules the core follows where XState v5 and SCXML 1.0 differ.
//!
//! The algorithm ([`crate::algorithm`]) is one implementation of SCXML's
//! Appendix D. A [`Machine`](crate::Machine) built from an XState JSON
//! config follows XState v5 at every point where the two disagree (that is
//! what the differential tests against XState check); a machine compiled
//! from an SCXML document (`turno-scxml`) follows the SCXML recommendation.
//! Each difference is one branch in the algorithm, listed in
//! `docs/statecharts.md` ("Semantics: XState and SCXML") and tested in
//! `algorithm_tests.rs`.

/// The rule set of a machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Semantics {
    /// XState v5 (JSON configs, the builder): the default.
    #[default]
    XState,
    /// W3C SCXML 1.0, Appendix D (documents loaded by `turno-scxml`).
    Scxml,
}

/// SCXML's event descriptor match (3.12.1): a transition's `event` is a
/// space-separated list of descriptors; a descriptor matches a name equal
/// to it or starting with it followed by `.`; a trailing `.*` or `.` is
/// ignored, and `*` matches every name.
///
/// ```
/// use turno_chart::semantics::scxml_descriptor_matches;
/// assert!(scxml_descriptor_matches("error", "error.execution"));
/// assert!(scxml_descriptor_matches("a b.*", "b.c"));
/// assert!(!scxml_descriptor_matches("foo", "foobar"));
/// assert!(scxml_descriptor_matches("*", "anything"));
/// ```
pub fn scxml_descriptor_matches(descriptors: &str, name: &str) -> bool {
    descriptors.split_ascii_whitespace().any(|d| {
        if d == "*" {
            return true;
        }
        let d = d.strip_suffix(".*").unwrap_or(d);
        let d = d.strip_suffix('.').unwrap_or(d);
        name == d || (name.starts_with(d) && name.as_bytes().get(d.len()) == Some(&b'.'))
    })
}

#[cfg(test)]
#[path = "semantics_tests.rs"]
mod tests;
