//! Memory per idle actor.

use crate::Args;

/// Measures every implementation.
pub fn run(_args: &Args) {}
