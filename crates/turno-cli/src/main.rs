//! The `turno` command.

fn main() {}
