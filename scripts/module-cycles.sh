#!/usr/bin/env bash
# Prints the import graph of crates/turno/src (one node per file) and its
# cycles, as crates/turno/tests/module_graph.rs computes them; that test
# fails on any cycle but the one ARCHITECTURE.md names ("Module graph").
#   scripts/module-cycles.sh            this checkout
#   scripts/module-cycles.sh DIR        another tree's crates/turno/src
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  export TURNO_MODULE_GRAPH_SRC="$(cd "$1" && pwd)"
fi
cargo test -q -p turno --test module_graph --locked -- --exact print_the_module_graph --nocapture
