#!/usr/bin/env bash
# The instance side's paths, instructions per request counted by callgrind (benches/
# callgrind.sh, the http bench's servers), against the figures pinned in
# benches/callgrind.pinned: fails when one grows more than 5% over its pin. Instructions are
# repeatable where timings are not; each figure is the median of three measurements (a run
# now and then counts a timer's work into its requests).
#   benches/callgrind_gate.sh           check (.ci/run runs it)
#   PIN=1 benches/callgrind_gate.sh     measure and write the pins (say why in the commit)
# HTTP_BENCH=path/to/http-binary measures another build.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
pins="$here/benches/callgrind.pinned"
most_growth_percent=5
export N1="${N1:-1000}" N2="${N2:-6000}" IN_HANDLER=0
bin="${HTTP_BENCH:-}"
[ -n "$bin" ] || bin="$(cd "$here" && cargo bench --manifest-path benches/Cargo.toml --bench http --no-run 2>&1 \
    | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)"
export HTTP_BENCH="$bin"

# The median of three measurements of variant $1, a new client per request when $2 is 1.
measure() {
    for _ in 1 2 3; do
        MANY="$2" bash "$here/benches/callgrind.sh" "$1" | tail -1 | awk '{print $2}'
    done | sort -n | sed -n 2p
}

failed=0
new_pins=""
printf '%-12s %-5s %10s %10s %8s\n' variant many pinned now growth
while read -r variant many pinned; do
    case "$variant" in ''|'#'*) new_pins+="$variant $many $pinned"$'\n'; continue ;; esac
    now="$(measure "$variant" "$many")"
    growth="$(echo "scale=2; 100 * ($now - $pinned) / $pinned" | bc -l)"
    printf '%-12s %-5s %10s %10s %7s%%\n' "$variant" "$many" "$pinned" "$now" "$growth"
    new_pins+="$variant $many $now"$'\n'
    if [ "$(echo "$growth > $most_growth_percent" | bc -l)" = 1 ]; then
        echo "  $variant grew more than $most_growth_percent% over its pin: find the instructions" \
             "(benches/callgrind.sh, callgrind_annotate) or, if the cost is meant, PIN=1 $0"
        failed=1
    fi
done < "$pins"
if [ "${PIN:-0}" = 1 ]; then
    printf '%s' "$new_pins" > "$pins"
    echo "pinned in $pins"
    exit 0
fi
exit "$failed"
