#!/usr/bin/env bash
# Instructions the Redis server spends per check of the check script, counted by callgrind:
# repeatable where timings on a shared machine are not. A `redis-server` of its own runs
# under callgrind on a free port while a replayer sends the script's calls, as the store
# makes them under load: KEYS checks per call, the usual check (one unit, the server's
# clock), 100 per minute. It runs twice, for N1 and N2 calls; the difference over the
# (N2 - N1) * KEYS checks is what one check costs, start-up excluded.
#   benches/script_callgrind.sh [STATE...]   (default: peer mark set 2 3 4 5 1 f2 f3 f4 f5 f1)
# STATE is the script's code for a policy's state (scripts.rs): 1 a long sliding log (a
# list), 5 a short one (a packed string), 2 fixed window, 3 counter, 4 bucket, as a script
# (EVALSHA); f1 to f5 the same as the library's function (FCALL, Redis 7); or `peer`:
# actix-extensible-rate-limit's check instead, a transaction per check (MULTI, BITFIELD
# OVERFLOW SAT INCRBY, EXPIRE NX, TTL, EXEC), pipelined as its users' requests are; or
# `mark`: a new client's first check as limiter sends it on one server on the server's
# clock, `SET key MARK NX PXAT`, a batch's pipelined; `set`: the same with the caller's
# clock, `SET key STATE NX PX`; or `hset`: the layout not taken (yet), each
# client a field of a hash its limit and window share, `HSET window-key CLIENT STATE`, to
# weigh a key per client against a field per client; or `hgen`: that layout with the
# generations and shards its expiry needs (see the replayer); or `hsetex`: a field per
# client with an expiry of its own (Redis 8, Valkey 9). Beside the instructions, Redis's
# `used_memory` per check: with a new client per check, the bytes one client's state costs.
# KEYS=16 checks per call; HOT=1 makes every check one client's (else each a new client's),
# sent as the store sends them (one entry for them all, for a window or a log);
# SCRIPT=path measures another version of check.lua (same arguments); REDIS_SERVER=path
# another server (`hsetex` needs Redis 8 or Valkey 9).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
server_binary="${REDIS_SERVER:-redis-server}"
keys="${KEYS:-16}"
hot="${HOT:-}"
n1="${N1:-200}"
n2="${N2:-1200}"
states=("$@")
[ ${#states[@]} -gt 0 ] || states=(peer mark set 2 3 4 5 1 f2 f3 f4 f5 f1)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The store's check as scripts.rs makes it: as a script, script_head.lua, first_state.lua and
# check.lua with the body of its `run` as the script's own; as a library, a first line
# naming it, first_state.lua, check.lua and the registration of `run`.
sources="$here/limiter-core/src/store/redis"
if [ -n "${SCRIPT:-}" ]; then
    script="$SCRIPT"
else
    script="$work/check.lua"
    { cat "$sources"/{script_head,first_state}.lua
      sed -e '/^local function run(KEYS, ARGV)$/d' -e '/^end -- run$/d' "$sources/check.lua"
    } > "$script"
fi
library="$work/library.lua"
{ echo '#!lua name=limiter_bench'
  echo 'local make = nil'
  cat "$sources"/{first_state,check}.lua
  echo "redis.register_function{function_name = 'limiter_check', callback = run, flags = {'allow-cross-slot-keys'}}"
} > "$library"

# Sends $3 calls of $2 checks of state $1 to the server on port $4.
replay() {
    python3 - "$@" "$script" "$hot" "$library" <<'PY'
import socket, sys
state, k, calls, port, script, hot, library = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7]
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
def read():
    line = f.readline()
    kind = line[:1]
    if kind == b"-":
        sys.exit("Redis answered: " + line.decode())
    if kind in b"+:":
        return line
    if kind == b"$":
        n = int(line[1:])
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"*":
        return [read() for _ in range(int(line[1:]))]
s.sendall(cmd("SCRIPT", "LOAD", open(script).read()))
sha = read()
# `f2` and so on: the check as the library's function (FCALL) rather than the script.
function = state.startswith("f")
if function:
    state = state[1:]
    s.sendall(cmd("FUNCTION", "LOAD", "REPLACE", open(library).read()))
    read()
import struct
interval = 600_000_000  # 100 per minute
# The header (scripts.rs): min_ttl 0, one policy.
code = 0 if not state.isdigit() else int(state)
header = struct.pack(">QI", 0, 1) + struct.pack(">BQIQQ", code, 60_000, 100, interval, 100 * interval)
# No penalty (block_ms 8, after 1, within_ms 8, escalated block_ms 8), no calendar (period 1,
# offset 2), no delay (8): the header's other fields, as call.rs packs them.
header += bytes(8 + 1 + 8 + 8 + 1 + 2 + 8)
def first_state(c):
    # The fixed window's state after one unit (check.lua's '>I6I4'), at call c's instant.
    return struct.pack(">Q", 1_700_000_000_000 + c)[2:] + struct.pack(">I", 1)
def client_of(name):
    # The client's part of a key name: a field of the hash layouts.
    return name[9:17]
def shard_of(name):
    # 8 shards of clients: each holds more than 128 fields from the first run on, a hash
    # table as at a million clients (a listpack below that is scanned on every write).
    return int(client_of(name), 16) % 8
def exchange(commands):
    s.sendall(b"".join(commands))
    for _ in commands:
        read()
layouts = {
    # A new client's first check as the store sends it on one server (fresh.rs): the state
    # with its lifetime, only if the key is absent.
    "set": lambda name, c: [cmd("SET", name, first_state(c), "NX", "PX", 60_012)],
    # As the store sends it on the server's clock: a mark (the reading modulo 8,192, an
    # integer Redis shares), the state being the key's expiry (far ahead: not to expire here).
    "mark": lambda name, c: [cmd("SET", name, (1_700_000_000_000 + c) % 8192, "NX", "PXAT",
        4_000_000_000_000 + c)],
    # Every client of the limit in one hash per window (its lifetime set once, not per
    # check).
    "hset": lambda name, c: [cmd("HSET", "limiter:bench:29000", client_of(name), first_state(c))],
    # The generation layout's first check: a state lives in the hash of the generation of a
    # window's length in which it stops mattering, one hash per shard, so a reader looks in
    # two; a new client's check writes its field only if absent (HSETNX) and looks in the
    # generation before (HEXISTS): the least it can be (a hash's lifetime set once a
    # generation, as in `hset`; a `PEXPIRE ... NX` per check made it 22,700 instructions).
    "hgen": lambda name, c: [
        cmd("HSETNX", "limiter:{%02x}:bench:29001" % shard_of(name), client_of(name), first_state(c)),
        cmd("HEXISTS", "limiter:{%02x}:bench:29000" % shard_of(name), client_of(name)),
    ],
    # A field per client with its own expiry, one command (Redis 8, Valkey 9), written only
    # if absent (FNX), one hash per shard.
    "hsetex": lambda name, c: [
        cmd("HSETEX", "limiter:{%02x}:bench" % shard_of(name), "FNX", "PX", 60_012,
            "FIELDS", 1, client_of(name), first_state(c)),
    ],
}
batch = []
for c in range(calls):
    names = ["limiter:{%08x}:bench" % (7 if hot else c * k + i) for i in range(k)]
    if state in layouts:
        exchange([command for name in names for command in layouts[state](name, c)])
        continue
    if state == "peer":
        for name in names:
            s.sendall(cmd("MULTI") + cmd("BITFIELD", name, "OVERFLOW", "SAT", "INCRBY", "u63", 0, 1, "GET", "u63", 0)
                + cmd("EXPIRE", name, 60, "NX") + cmd("TTL", name) + cmd("EXEC"))
            for _ in range(5):
                read()
        continue
    call = ("FCALL", "limiter_check") if function else ("EVALSHA", sha)
    if hot and state in "1256":
        # One client's checks side by side, as the store sends them: one entry of the
        # plan (255 and the count less one), its key named once.
        batch.append(cmd(*call, 1, names[0], header, bytes([1, 255, k - 1])))
    else:
        batch.append(cmd(*call, k, *names, header, bytes([1] * k)))
    if len(batch) == 50 or (c == calls - 1 and batch):
        s.sendall(b"".join(batch))
        for _ in batch:
            read()
        batch = []
PY
}

# The server's instructions for $3 calls of $2 checks of state $1.
instructions() {
    local port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    rm -f "$work"/cg.*
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
        "$server_binary" --port "$port" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
    local server=$!
    for _ in $(seq 200); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    replay "$1" "$2" "$3" "$port"
    memory="$(redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}')"
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    wait "$server" 2>/dev/null || true
    echo "$(grep -h '^summary:\|^totals:' "$work"/cg.* | head -1 | awk '{print $2}') $memory"
}

printf '%-6s %-12s %s\n' state instructions "bytes (per check; $keys checks a call${hot:+, one client})"
for state in "${states[@]}"; do
    read -r a a_bytes <<<"$(instructions "$state" "$keys" "$n1")"
    read -r b b_bytes <<<"$(instructions "$state" "$keys" "$n2")"
    checks=$(( (n2 - n1) * keys ))
    printf '%-6s %-12d %d\n' "$state" $(( (b - a) / checks )) $(( (b_bytes - a_bytes) / checks ))
done
