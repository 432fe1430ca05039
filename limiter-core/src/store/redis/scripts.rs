//! The four algorithms as one Lua script: one atomic round trip per request, whatever the
//! number of limits it is checked against, the same rules as [`algorithm`](crate::algorithm),
//! and the same decisions as the in-memory store.
//!
//! `KEYS[i]` holds the state of one key under one limit; `ARGV` is
//! `[now_ms or "", min_ttl_ms]` followed by five values per key:
//! `algorithm (1 sliding window, 2 fixed window, 3 counter, 4 bucket), window_ms, max,
//! interval_ns, capacity_ns`. Without a `now` the script reads the Redis server's clock
//! (`TIME`), so instances with skewed clocks agree. It answers three numbers per key,
//! `allowed, remaining, wait_ns`, with the meaning of [`Store::check_all`](crate::Store):
//! the request is counted by every limit or by none.
//!
//! A reading earlier than a key's state — the server's clock stepping back, or callers
//! whose clocks differ — is treated as the newest instant the state holds: nothing is
//! dropped or reset by it. Expiry only reclaims memory — every algorithm ignores state that
//! no longer counts — so a caller with a clock of its own (tests moving a manual clock, not
//! in step with Redis's) passes a `min_ttl_ms` that keeps keys alive while it works. Every
//! key written gets an expiry.
//!
//! Lua numbers are doubles: integers are exact below 2⁵³. [`Policy`](crate::Policy) keeps
//! every number these scripts compute below that (the counter's `max × window`, the
//! bucket's capacity in nanoseconds, waits of two windows at most); `idiv` corrects the
//! rounding of a floating division.

use crate::Algorithm;

const SCRIPT: &str = r#"
-- Redis 3.2 and 4 replicate scripts verbatim unless told otherwise, and then refuse writes
-- after TIME; from Redis 5 on (and in Valkey) this is the default and the call a no-op.
if redis.replicate_commands then redis.replicate_commands() end
local clock = tonumber(ARGV[1])
if not clock then
  local t = redis.call('TIME')
  clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local min_ttl = tonumber(ARGV[2]) or 0
local function expire(key, ms)
  if ms < min_ttl then ms = min_ttl end
  if ms < 1 then ms = 1 end
  redis.call('PEXPIRE', key, ms)
end
local function idiv(a, b)
  local q = math.floor(a / b)
  while q * b > a do q = q - 1 end
  while (q + 1) * b <= a do q = q + 1 end
  return q
end

-- Each algorithm reads its key and returns
--   admits (boolean), {remaining, wait_ns} if counted (or the rejection), the status with
--   nothing counted {remaining, wait_ns}, and a function that writes the counted state.

local function sliding_window(key, window, max)
  local now = clock
  local len = redis.call('LLEN', key)
  if len > 0 then
    local newest = tonumber(redis.call('LINDEX', key, -1))
    if newest > now then now = newest end
  end
  local expired, oldest = 0, nil
  while expired < len do
    local t = tonumber(redis.call('LINDEX', key, expired))
    if now - t < window then oldest = t break end
    expired = expired + 1
  end
  local count = len - expired
  local status_wait = 0
  if oldest then status_wait = (oldest + window - now) * 1000000 end
  local status = {max - count, status_wait}
  if count >= max then
    return false, {0, status_wait}, status, nil
  end
  local counted = {max - count - 1, ((oldest or now) + window - now) * 1000000}
  return true, counted, status, function()
    if expired > 0 then redis.call('LTRIM', key, expired, -1) end
    redis.call('RPUSH', key, now)
    expire(key, window)
  end
end

local function fixed_window(key, window, max)
  local now = clock
  local state = redis.call('HMGET', key, 's', 'c')
  local start = tonumber(state[1])
  local count = tonumber(state[2]) or 0
  if start and count > 0 and now < start then now = start end
  if not start or count == 0 or now - start >= window then
    start = now
    count = 0
  end
  local ends = (start + window - now) * 1000000
  local status = {max - count, 0}
  if count > 0 then status[2] = ends end
  if count >= max then
    return false, {0, ends}, status, nil
  end
  return true, {max - count - 1, ends}, status, function()
    redis.call('HSET', key, 's', start, 'c', count + 1)
    expire(key, start + window - now)
  end
end

local function until_below(prev, cur, elapsed, t, target)
  local to_edge = t - elapsed
  if cur < target and prev > 0 then
    local x_max = idiv((target - cur) * t + prev - 1, prev) - 1
    if x_max >= to_edge then return 0 end
    if x_max >= 1 then return to_edge - x_max end
  end
  if cur == 0 then return to_edge end
  local y_max = idiv(target * t + cur - 1, cur) - 1
  if y_max >= t then return to_edge end
  return to_edge + t - y_max
end

local function sliding_window_counter(key, window, max)
  local now = clock
  local state = redis.call('HMGET', key, 'w', 'p', 'c')
  local stored = tonumber(state[1])
  local stored_prev = tonumber(state[2]) or 0
  local stored_cur = tonumber(state[3]) or 0
  if stored and (stored_prev > 0 or stored_cur > 0) and idiv(now, window) < stored then
    now = stored * window
  end
  local index = idiv(now, window)
  local elapsed = now - index * window
  local prev, cur = 0, 0
  if stored == index then
    prev, cur = stored_prev, stored_cur
  elseif stored == index - 1 then
    prev = stored_cur
  end
  local weighted = prev * (window - elapsed) + cur * window
  if weighted >= max * window then
    local wait = until_below(prev, cur, elapsed, window, max) * 1000000
    return false, {0, wait}, {0, wait}, nil
  end
  local left = idiv(max * window - weighted + window - 1, window)
  local status = {left, 0}
  if left < max then status[2] = until_below(prev, cur, elapsed, window, max - left) * 1000000 end
  local room = max * window - (weighted + window)
  if room < 0 then room = 0 end
  local remaining = idiv(room + window - 1, window)
  local wait = until_below(prev, cur + 1, elapsed, window, max - remaining) * 1000000
  return true, {remaining, wait}, status, function()
    redis.call('HSET', key, 'w', index, 'p', prev, 'c', cur + 1)
    expire(key, 2 * window - elapsed)
  end
end

local function token_bucket(key, interval, capacity)
  local now = clock
  local state = redis.call('HMGET', key, 't', 'n')
  local used = 0
  if state[1] then
    used = (tonumber(state[1]) - now) * 1000000 + tonumber(state[2])
    if used < 0 then used = 0 end
  end
  local function standing(u)
    local left = capacity - u
    local remaining = idiv(left, interval)
    local partial = left - remaining * interval
    local next_back = interval
    if partial ~= 0 then next_back = interval - partial end
    return remaining, next_back
  end
  if used + interval > capacity then
    local wait = used + interval - capacity
    return false, {0, wait}, {0, wait}, nil
  end
  local status_remaining, status_wait = standing(used)
  if used == 0 then status_wait = 0 end
  local after = used + interval
  local remaining, next_back = standing(after)
  return true, {remaining, next_back}, {status_remaining, status_wait}, function()
    local whole = idiv(after, 1000000)
    redis.call('HSET', key, 't', now + whole, 'n', after - whole * 1000000)
    expire(key, whole + 1)
  end
end

local n = #KEYS
local admitted, counted, statuses, writes = true, {}, {}, {}
for i = 1, n do
  local base = 2 + (i - 1) * 5
  local algorithm = tonumber(ARGV[base + 1])
  local window = tonumber(ARGV[base + 2])
  local max = tonumber(ARGV[base + 3])
  local admits, decision, status, write
  if algorithm == 1 then
    admits, decision, status, write = sliding_window(KEYS[i], window, max)
  elseif algorithm == 2 then
    admits, decision, status, write = fixed_window(KEYS[i], window, max)
  elseif algorithm == 3 then
    admits, decision, status, write = sliding_window_counter(KEYS[i], window, max)
  else
    admits, decision, status, write =
      token_bucket(KEYS[i], tonumber(ARGV[base + 4]), tonumber(ARGV[base + 5]))
  end
  if not admits then admitted = false end
  counted[i] = {admits, decision}
  statuses[i] = status
  writes[i] = write
end
local reply = {}
for i = 1, n do
  local admits, decision = counted[i][1], counted[i][2]
  if admitted then
    writes[i]()
    reply[#reply + 1] = 1
    reply[#reply + 1] = decision[1]
    reply[#reply + 1] = decision[2]
  elseif admits then
    -- Another limit rejects the request: this one counts nothing and says where it stands.
    reply[#reply + 1] = 1
    reply[#reply + 1] = statuses[i][1]
    reply[#reply + 1] = statuses[i][2]
  else
    reply[#reply + 1] = 0
    reply[#reply + 1] = 0
    reply[#reply + 1] = decision[2]
  end
end
return reply
"#;

/// The script: its source and the SHA-1 that `EVALSHA` names it by.
pub(crate) struct Script {
    pub(crate) source: &'static str,
    pub(crate) sha: String,
}

impl Script {
    pub(crate) fn new() -> Script {
        Script {
            source: SCRIPT,
            sha: sha1_smol::Sha1::from(SCRIPT).digest().to_string(),
        }
    }
}

/// The number the script knows an algorithm by.
pub(crate) fn code(algorithm: Algorithm) -> u8 {
    match algorithm {
        Algorithm::SlidingWindow => 1,
        Algorithm::FixedWindow => 2,
        Algorithm::SlidingWindowCounter => 3,
        Algorithm::TokenBucket => 4,
    }
}
