#!/usr/bin/env python3
"""Prints ours/governor per workload from criterion's results of `cargo bench --manifest-path benches/Cargo.toml --bench store`.

Every ratio compares two benchmarks of the same run, so machine noise mostly cancels out.
"""
import json
import os
import sys

root = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join("benches", "target")), "criterion")
workloads = ["hot_key_1_thread", "hot_key_2_threads", "100k_keys_1_thread",
             "100k_keys_2_threads", "rejecting_1_thread"]
algorithms = ["sliding_window", "fixed_window", "sliding_window_counter", "token_bucket"]
extra = "sliding_window_100"  # not in the worst ratio: a larger log by design


def ns(workload, name):
    path = os.path.join(root, workload, name, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


header = f"{'workload':<22}{'governor':>10}" + "".join(f"{a:>26}" for a in algorithms)
print(header)
worst = 0.0
for w in workloads:
    try:
        base = ns(w, "governor")
    except FileNotFoundError:
        sys.exit(f"no results for {w} under {root}: run `cargo bench --manifest-path benches/Cargo.toml --bench store` first")
    cells = []
    for a in algorithms:
        t = ns(w, a)
        worst = max(worst, t / base)
        cells.append(f"{t:>9.1f} ns  ratio {t / base:>5.2f}")
    line = f"{w:<22}{base:>7.1f} ns" + "".join(f"{c:>26}" for c in cells)
    try:
        t = ns(w, extra)
        line += f"   ({extra}: {t:.1f} ns, ratio {t / base:.2f})"
    except FileNotFoundError:
        pass
    print(line)
print(f"worst ratio ours/governor: {worst:.2}")
