#!/usr/bin/env bash
# Runs the contention bench of this tree and of another checkout (say, a `git worktree` of
# the commit before a change) alternately, so that both see the same machine noise.
#   benches/contention.sh ../baseline [rounds]
set -euo pipefail
baseline="${1:?usage: benches/contention.sh BASELINE_DIR [ROUNDS]}"
rounds="${2:-3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
build() { (cd "$1" && CARGO_TARGET_DIR="$2" cargo bench --manifest-path benches/Cargo.toml --bench contention --no-run 2>&1 | grep -o '/[^ ]*contention-[0-9a-f]*' | tail -1); }
ours="$(build "$here" "${CARGO_TARGET_DIR:-$here/target}")"
theirs="$(build "$baseline" "$baseline/target")"
for round in $(seq "$rounds"); do
    echo "== round $round: this tree"; "$ours"
    echo "== round $round: $baseline"; "$theirs"
done
