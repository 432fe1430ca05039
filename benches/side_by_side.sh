#!/usr/bin/env bash
# The loads that matter, side by side with the peers and with Redis's floor, in one run:
# in memory one client, a rejected flood (the http bench: throughput and CPU per request
# beside bare actix and actix-governor), a new client per request (callgrind, MANY=1,
# beside actix-governor keyed by X-Forwarded-For);
# on Redis a busy client and a new client per request, fixed window and sliding log, beside
# actix-extensible-rate-limit and beside Redis's floor for each (benches/floor.rs). Needs
# redis-server and valgrind; about three minutes after the build. Compare two commits by
# running it in a worktree of each, one after the other, and reading the ratios.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
bin="$(cargo bench --manifest-path benches/Cargo.toml --features redis --bench http --no-run 2>&1 \
    | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)"
echo "== over HTTP, on loopback ($bin)"
ONLY=bare,limiter,governor,rejecting,redis,redis_fixed,aerl_redis,redis_many,redis_many_log,aerl_many \
    ROUNDS="${ROUNDS:-3}" "$bin" 2>/dev/null
echo "== instructions per request (callgrind): one client"
HTTP_BENCH="$bin" benches/callgrind.sh bare headers limiter quiet rejecting governor
echo "== instructions per request (callgrind): a new client per request, named by a trusted proxy"
echo "   (governor_xff: actix-governor keyed by the address actix reads from X-Forwarded-For)"
HTTP_BENCH="$bin" MANY=1 benches/callgrind.sh bare proxied governor_xff
