-- Read by both scripts before their own source (scripts.rs joins them).
-- Integer division, exact where a floating division rounds across a whole number.
local function idiv(a, b)
  local q = math.floor(a / b)
  while q * b > a do q = q - 1 end
  while (q + 1) * b <= a do q = q + 1 end
  return q
end

-- A whole number as the text Redis takes it in: a number given to `redis.call` Redis 7.0
-- prints with "%.17g" (glibc's multiple-precision digits, thousands of instructions, more
-- than many a command it is for); "%d" costs a tenth of that — where Lua's integers are
-- 64 bits (a C `long`): elsewhere (a 32-bit build, Windows) "%.0f", found at first use.
local int_format = nil
local function int(n)
  if not int_format then
    int_format = '%.0f'
    if string.format('%d', 2 ^ 40) == '1099511627776' then int_format = '%d' end
  end
  return string.format(int_format, n)
end

-- The server's clock (ms), read with `TIME` once a call: a call starts with `server_clock`
-- nil (check.lua's `run` sets it so; a script's chunk is new each call).
local server_clock = nil
local function server_now()
  if not server_clock then
    local t = redis.call('TIME')
    server_clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return server_clock
end

-- A new client's first state as fresh.rs writes it without a script on the server's clock:
-- the key holds a small integer, the MARK, and expires (`PXAT`) at the state's reading plus
-- the lifetime its policy gives a first state (12 ms of margin in it). The mark is that
-- reading modulo 8,192 (the counter's: its window's index), so the expiry read back
-- within four seconds of the one written says which reading it was. (An integer below
-- 10,000 is one Redis shares between keys: such a key costs Redis its name and expiry
-- only.) Any packed state is 6 bytes or longer, a mark 4 digits at most.
-- `state` is the policy's state (2 to 5), `window` its ms and `interval` its ns. Returns the
-- packed state check.lua would have written. The expiry is read against the server's
-- clock of the call (never a caller's: the two may differ by more than the four seconds a
-- mark is read within; one read earlier in the call is off by the call's length, ms).
local function first_state(key, mark, state, window, interval)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then ttl = 0 end
  local expires = server_now() + ttl - 12
  local whole = idiv(interval, 1000000)
  local near
  if state == 3 then
    near = idiv(expires, window) - 2
  elseif state == 4 then
    near = expires - whole - 1
  else
    near = expires - window
  end
  local at = near + (tonumber(mark) - near + 4096) % 8192 - 4096
  if state == 5 then return struct.pack('>I6', at) end
  if state == 2 then return struct.pack('>I6I4', at, 1) end
  if state == 3 then return struct.pack('>I6I4I4', at, 0, 1) end
  return struct.pack('>I6I4', at + whole, interval - whole * 1000000)
end
