#!/usr/bin/env bash
# Records the real traces the tests read, one per producer, with the binaries
# of a debug build (cargo build -p turno-cli; cargo build -p turno-inspect
# --examples):
#   html_anim_input.jsonl   turno-js, html model: animations, the compositor,
#                           scripted input (turno js run)
#   overload_keep_oldest.jsonl  the turno runtime: the overload demo under
#                           keep-oldest(5), 2 virtual seconds
#   chart_crossing.jsonl    turno-chart's interpreter on the runtime
#                           (turno-inspect's chart_trace example)
#   cluster_sim.jsonl      turno-cluster's simulated cluster, three nodes
#                           merged (turno-cluster's cluster_trace example)
#   worker_messages.jsonl   turno-js, html model, two event loops: the page
#                           and a dedicated worker (html-live/l03)
# node_combinators.jsonl and html_raf.jsonl come from turno js run of the
# seed's corpus programs (h08_raf_microtasks.js and a Promise combinator
# program) and are kept as recorded.
# every_kind_actor.jsonl and every_kind_js.jsonl are written by hand: one
# line (or a few) of every kind of each family in the writer's shape, for the
# fast decoder's tests (src/fast/tests.rs checks they are what the writer
# writes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${CARGO_TARGET_DIR:-$here/../../../../target}
turno=${TURNO_BIN:-$target/debug/turno}
chart=${CHART_TRACE_BIN:-$target/debug/examples/chart_trace}
cd "$here"

"$turno" js run --model html --input html_anim_input.input.json \
  --trace html_anim_input.jsonl html_anim_input.js >/dev/null 2>&1

# The demo serves the trace once recorded: read its path, then stop it.
err=$(mktemp)
"$turno" demo overload --seconds 2 --capacity 5 --inspect keep-oldest >/dev/null 2>"$err" &
pid=$!
for _ in $(seq 1 300); do
  grep -q "trace in" "$err" && break
  sleep 0.1
done
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
path=$(sed -n 's/.*trace in \(.*\)$/\1/p' "$err" | head -1)
mv "$path" overload_keep_oldest.jsonl
rm -f "$err"

"$chart" chart_crossing.jsonl >/dev/null

corpus=$here/../../../turno-js/tests/corpus/html-live
(cd "$corpus" && "$turno" js run --model html --trace "$here/worker_messages.jsonl" \
  l03_worker_messages.js >/dev/null)
cargo run -q -p turno-cluster --example cluster_trace -- "$here/cluster_sim.jsonl" >/dev/null
echo "recorded: html_anim_input.jsonl overload_keep_oldest.jsonl chart_crossing.jsonl worker_messages.jsonl cluster_sim.jsonl"
