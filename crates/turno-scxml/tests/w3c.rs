#![cfg(feature = "ecmascript")]
//! The W3C SCXML conformance suite: every mandatory automated test passes.
//!
//! The suite lives outside the repository (`../shared/conformance/scxml-w3c`
//! next to the workspace, or `$TURNO_SCXML_SUITE`).

use std::path::Path;

use turno_scxml::suite::{locate_suite, run_suite, Selection};

#[test]
fn w3c_mandatory_automated_tests_pass() {
    let dir = locate_suite(None, Path::new(env!("CARGO_MANIFEST_DIR"))).expect(
        "the W3C suite was not found: set TURNO_SCXML_SUITE or put it at ../shared/conformance/scxml-w3c",
    );
    let report = run_suite(&dir, Selection::Mandatory).unwrap();
    print!("{}", report.render());
    assert_eq!(
        report.outcomes.len(),
        158,
        "mandatory automated tests in the manifest"
    );
    assert_eq!(report.failed(), 0, "{}", report.render());
}

/// The optional automated tests, except those of the Basic HTTP Event I/O
/// Processor (turno does not provide one: see docs/conformance.md).
#[test]
fn w3c_optional_tests_pass_except_basic_http() {
    let dir = locate_suite(None, Path::new(env!("CARGO_MANIFEST_DIR"))).expect("suite");
    let report = run_suite(&dir, Selection::All).unwrap();
    print!("{}", report.render());
    let failed: Vec<_> = report
        .outcomes
        .iter()
        .filter(|o| o.failure.is_some())
        .map(|o| o.id.as_str())
        .collect();
    assert_eq!(failed, BASIC_HTTP, "{}", report.render());
}

/// The optional tests of the Basic HTTP Event I/O Processor (C.2).
const BASIC_HTTP: &[&str] = &[
    "201", "509", "510", "518", "519", "520", "522", "531", "532", "534", "567", "577",
];
