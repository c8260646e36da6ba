#!/usr/bin/env bash
# Records the expected output of every differential case by running the
# real XState v5 (the version pinned in package.json):
#   tests/corpus/<case>/expected.jsonl  <-  node run.js machine.json events.json
# Run after adding or changing a case. Needs `npm ci` in this folder first.
set -euo pipefail
cd "$(dirname "$0")"
[ -d node_modules/xstate ] || npm ci --no-audit --no-fund
for dir in ../corpus/*/; do
  node run.js "$dir/machine.json" "$dir/events.json" > "$dir/expected.jsonl"
done
echo "recorded $(ls -d ../corpus/*/ | wc -l) cases with xstate $(node -p 'require("xstate/package.json").version')"
