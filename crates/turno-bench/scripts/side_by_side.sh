#!/bin/bash
# Two builds of turno-bench side by side: turno from the START binary and
# from the END binary, and each named peer (from the END binary), one
# process each per round, alternated over ROUNDS rounds, so that a change
# of the machine's regime (placement, other jobs) falls on every side
# alike. Prints, per case, each side's median and range over the rounds and
# the paired ratios (END's turno over each other side in the same round).
#
#   crates/turno-bench/scripts/side_by_side.sh START END stream _bounded 8 crossbeam-channel kanal
#
# BENCH and CASE are the binary's bench and `--case` filter (CASE `-` for
# none); the raw lines (round side case M/s) go to $RAW if set.
set -u
start=${1:?usage: side_by_side.sh START_BIN END_BIN BENCH CASE ROUNDS [PEER ...]}
end=${2:?} bench=${3:?} case=${4:?} rounds=${5:?}
shift 5
raw=${RAW:-$(mktemp -t turno-side.XXXXXX)}
: > "$raw"
case_args=()
[ "$case" != - ] && case_args=(--case "$case")

one() { # side binary impl round
  timeout 300 "$2" "$bench" "${case_args[@]}" --only "=$3" --runs 3 --json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    print(sys.argv[2], sys.argv[1], d["bench"], d["per_sec"])' "$1" "$4" >> "$raw"
}

for r in $(seq 1 "$rounds"); do
  one start "$start" turno "$r"
  one end "$end" turno "$r"
  for p in "$@"; do one "$p" "$end" "$p" "$r"; done
done

python3 - "$raw" "$@" <<'EOF'
import collections, statistics, sys
raw, peers = sys.argv[1], sys.argv[2:]
by = collections.defaultdict(dict)
for line in open(raw):
    r, side, case, v = line.split()
    by[(case, side)][int(r)] = float(v) / 1e6
for case in sorted({c for c, _ in by}):
    print(f"{case} (M/s: median, min-max over rounds)")
    for side in ["start", "end", *peers]:
        d = by.get((case, side), {})
        if d:
            lo, hi = min(d.values()), max(d.values())
            print(f"  {side:20} {statistics.median(d.values()):8.2f}  {lo:.2f}-{hi:.2f}")
    end = by.get((case, "end"), {})
    for side in ["start", *peers]:
        other = by.get((case, side), {})
        paired = [end[k] / other[k] for k in end if k in other]
        if paired:
            print(f"  end / {side:14} paired median {statistics.median(paired):.2f}x"
                  f" ({min(paired):.2f}-{max(paired):.2f})")
EOF
echo "raw lines: $raw"
