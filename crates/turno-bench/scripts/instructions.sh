#!/bin/bash
# Instructions per counted unit (message, hop, actor) of one implementation
# of one bench, under valgrind's callgrind: instruction counts are not
# disturbed by other jobs on the machine, unlike wall time. The marginal
# count between two sizes removes start-up and shut-down:
# (I(n2) - I(n1)) / (2 (n2 - n1)), two runs each (the warm-up and one timed).
#
#   crates/turno-bench/scripts/instructions.sh target/release/turno-bench pingpong turno 20000 60000
#
# CASE=NAME selects one case of a bench with several (the binary's --case),
# e.g. CASE=spsc_bounded ... stream turno 200000 600000.
set -eu
bin=${1:?usage: instructions.sh BIN BENCH IMPL N1 N2}
bench=$2 imp=$3 n1=$4 n2=$5
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$bench" ${CASE:+--case "$CASE"} --only "=$imp" --n "$1" --runs 1 2>&1 |
    awk '/Collected/ {print $4}'
}
a=$(count "$n1")
b=$(count "$n2")
echo "$bench${CASE:+/$CASE} $imp $(( (b - a) / (2 * (n2 - n1)) ))"
