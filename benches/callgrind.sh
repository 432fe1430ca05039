#!/usr/bin/env bash
# Instructions per request of the http bench's servers, counted by callgrind: repeatable
# where timings are not. Each variant's server runs under callgrind twice, answering
# N1 and then N2 keep-alive GETs on one connection (the http bench's request); the
# difference of the two totals over N2 - N1 is what one request costs, start-up excluded.
#   benches/callgrind.sh [VARIANT...]     (default: bare headers limiter quiet rejecting governor)
# HTTP_BENCH=path/to/http-binary measures another build (say, a worktree of the commit before
# a change) with the same requests. MANY=1 sends every request from a new address (the
# `*_many` variants' load); the Redis variants need LIMITER_BENCH_REDIS=redis://... (a
# redis-server of your own, never the machine's). IN_HANDLER=0 leaves out the handler's
# column (benches/callgrind_gate.sh reads the totals only).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
n1="${N1:-2000}"
n2="${N2:-12000}"
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(bare headers limiter quiet rejecting governor)
bin="${HTTP_BENCH:-}"
[ -n "$bin" ] || bin="$(cd "$here" && cargo bench --manifest-path benches/Cargo.toml --bench http --no-run 2>&1 \
    | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)"
case "$bin" in /*) ;; *) bin="$here/$bin" ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Sends $2 sequential GETs to $1 (host:port) and reads each whole response.
client() {
    python3 - "$1" "$2" "${MANY:-0}" <<'PY'
import random, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
n = int(sys.argv[2])
many = sys.argv[3] == "1"
s = socket.create_connection((host, int(port)))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
req = b"GET / HTTP/1.1\r\nHost: bench\r\nX-Forwarded-For: 198.51.100.3, 203.0.113.7\r\n\r\n"
buf = b""
for _ in range(n):
    if many:
        x = random.getrandbits(20)
        req = b"GET / HTTP/1.1\r\nHost: bench\r\nX-Forwarded-For: 10.%d.%d.%d\r\n\r\n" % (
            x >> 16, (x >> 8) & 0xFF, x & 0xFF)
    s.sendall(req)
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = buf[:end].lower()
            length = 0
            for line in head.split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if len(buf) >= end + 4 + length:
                buf = buf[end + 4 + length:]
                break
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("the server closed the connection")
        buf += chunk
PY
}

# Total instructions of one server run answering $2 requests, and (second word) those of
# the handler's future, what actix runs for a route between its extraction and its
# response: the middleware and the I/O around it are left out. (The totals of two runs
# agree within 0.03%, a flood's 429s within 0.5%: they are built anew each second.)
instructions() {
    local variant="$1" n="$2" out="$work/$1.$2"
    valgrind --tool=callgrind --callgrind-out-file="$out.cg" "$bin" --serve "$variant" \
        >"$out.addr" 2>"$out.log" &
    local pid=$!
    for _ in $(seq 600); do [ -s "$out.addr" ] && break; sleep 0.1; done
    client "$(head -1 "$out.addr")" "$n"
    kill -INT "$pid"
    wait "$pid" || true
    local total handler
    total="$(grep -h '^summary:' "$out".cg* | awk '{s += $2} END {print s}')"
    [ "${IN_HANDLER:-1}" = 1 ] && handler="$(callgrind_annotate --inclusive=yes --threshold=100 "$out".cg* 2>/dev/null \
        | grep -m1 'handler_service::{{closure}}::{{closure}} \[' | awk '{gsub(",", "", $1); print $1}')"
    echo "$total ${handler:-0}"
}

printf '%-10s %14s %14s\n' variant 'instr/request' 'in handler'
for variant in "${variants[@]}"; do
    read -r a ha <<<"$(instructions "$variant" "$n1")"
    read -r b hb <<<"$(instructions "$variant" "$n2")"
    printf '%-10s %14.0f %14.0f\n' "$variant" "$(echo "($b - $a) / ($n2 - $n1)" | bc -l)" \
        "$(echo "($hb - $ha) / ($n2 - $n1)" | bc -l)"
done
