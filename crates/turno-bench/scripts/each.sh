#!/bin/bash
# Every actor bench, one process per implementation (so one that hangs or is
# slow on a loaded machine costs only its own line, and no implementation
# runs next to another's leftover threads), then the memory measurement.
# JSON lines on stdout; a failed or timed-out implementation is one line
# with "error".
#
#   cargo build --profile bench -p turno-bench --no-default-features
#   crates/turno-bench/scripts/each.sh target/release/turno-bench > all.json
#
# crossbeam (one OS thread per actor) takes part only in fanin, where it is
# the channel baseline of a target, and in fanout, where the work per message
# dominates: elsewhere one context switch per message makes it minutes per
# run on a shared 2-core machine. kanal and std (`sync_channel`) are channel
# baselines of fanin only. In fanout the single-threaded implementations
# print nothing (n/a).
set -u
bin=${1:?usage: each.sh PATH/TO/turno-bench [RUNS]}
runs=${2:-3}
for b in pingpong ring spawn fanin fanout counting chameneos bndbuffer; do
  for i in turno turno-1t turno-det turno-local turno-tuned actix ractor ractor-ct kameo kameo-ct stakker tokio-ct tokio-mt crossbeam kanal std; do
    [ "$i" = crossbeam ] && [ "$b" != fanin ] && [ "$b" != fanout ] && continue
    { [ "$i" = kanal ] || [ "$i" = std ]; } && [ "$b" != fanin ] && continue
    timeout 200 "$bin" "$b" --only "=$i" --runs "$runs" --json 2>/dev/null ||
      echo "{\"bench\":\"$b\",\"impl\":\"$i\",\"error\":\"failed or timed out (exit $?)\"}"
  done
done
timeout 200 "$bin" memory --json 2>/dev/null
