#!/usr/bin/env python3
"""Sides of one bench alternated over rounds, each run placed as asked.

side_by_side.sh compares two builds; this compares any number of sides of
one bench, each a binary, an implementation, and optionally an environment
(a build's knobs) and a CPU list for `taskset` (where the process may run).
Each round runs every side once (one process, `--runs 3`), in an order that
flips every round, so that a change of the machine's regime falls on every
side alike. Prints each side's median and its paired ratio against BASE: the
median over rounds of side / BASE in the same round, with how many rounds
were below 1. With REGIME=X (M/s) it also splits the rounds by whether BASE
ran at X or faster.

    crates/turno-bench/scripts/alternate.py 20 chameneos 1t \\
        1t=target/release/turno-bench:turno-1t \\
        2w=target/release/turno-bench:turno \\
        2w-cpu0=target/release/turno-bench:turno@0

A side is LABEL=[ENV=VALUE,...;]BIN:IMPL[@CPUS]. EXTRA="--n 1000000" adds
arguments to every run; the raw lines (round label M/s) go to $RAW if set.
"""

import collections
import json
import os
import statistics
import subprocess
import sys


def parse_side(spec):
    label, rest = spec.split("=", 1)
    env = dict(os.environ)
    if ";" in rest:
        assignments, rest = rest.split(";", 1)
        for kv in assignments.split(","):
            key, value = kv.split("=", 1)
            env[key] = value
    cpus = None
    if "@" in rest:
        rest, cpus = rest.rsplit("@", 1)
    binary, impl = rest.rsplit(":", 1)
    return label, env, binary, impl, cpus


def run(side, bench, extra):
    _, env, binary, impl, cpus = side
    cmd = [binary, bench, "--only", "=" + impl, "--runs", "3", "--json", *extra]
    if cpus is not None:
        cmd = ["taskset", "-c", cpus, *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    rates = [json.loads(line)["per_sec"] / 1e6 for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not rates:
        sys.exit(f"{' '.join(cmd)} failed (exit {out.returncode}): {out.stderr.strip()[-500:]}")
    return rates[0]


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    rounds, bench, base = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sides = [parse_side(s) for s in sys.argv[4:]]
    labels = [s[0] for s in sides]
    if base not in labels:
        sys.exit(f"BASE {base!r} is not one of the sides' labels {labels}")
    extra = os.environ.get("EXTRA", "").split()
    raw = open(os.environ["RAW"], "w") if os.environ.get("RAW") else None
    by = collections.defaultdict(dict)
    for r in range(rounds):
        for side in sides if r % 2 == 0 else reversed(sides):
            by[side[0]][r] = run(side, bench, extra)
            if raw:
                print(r, side[0], by[side[0]][r], file=raw, flush=True)

    def paired(label, among):
        return [by[label][r] / by[base][r] for r in among]

    every = range(rounds)
    print(f"{bench}: {rounds} rounds, paired against {base}")
    for label in labels:
        p = paired(label, every)
        print(f"  {label:16} median {statistics.median(by[label].values()):8.3f} M/s"
              f"  paired {statistics.median(p):.4f} ({min(p):.3f}-{max(p):.3f}),"
              f" below 1 in {sum(x < 1 for x in p)} of {len(p)}")
    threshold = float(os.environ.get("REGIME", "0"))
    if threshold:
        for name, among in (
            (f"rounds where {base} ran at {threshold} M/s or faster", [r for r in every if by[base][r] >= threshold]),
            ("the other rounds", [r for r in every if by[base][r] < threshold]),
        ):
            if not among:
                continue
            print(f"  {name} ({len(among)}):")
            for label in labels:
                p = paired(label, among)
                print(f"    {label:16} paired {statistics.median(p):.4f}, below 1 in {sum(x < 1 for x in p)} of {len(p)}")


if __name__ == "__main__":
    main()
