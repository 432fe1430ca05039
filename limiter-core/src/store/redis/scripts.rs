//! The four algorithms as Lua scripts: one atomic round trip per check, the same rules as
//! [`algorithm`](crate::algorithm), and the same decisions as the in-memory store.
//!
//! Every script takes `KEYS[1]`, the state of one key under one limit, and
//! `ARGV = [window_ms, max, now_ms or "", interval_ns, capacity_ns, min_ttl_ms]`; without a
//! `now` it reads the Redis server's clock (`TIME`), so instances with skewed clocks agree.
//! Expiry only reclaims memory — every script ignores state that no longer counts — so a
//! caller with a clock of its own (tests moving a manual clock, not in step with Redis's)
//! passes a `min_ttl_ms` that keeps keys alive while it works. It answers
//! `{allowed, remaining, wait_ns}`: `wait_ns` is `retry_after` on a rejection and the time
//! until used quota next comes back otherwise. Every key written gets an expiry.
//!
//! Lua numbers are doubles: integers are exact below 2⁵³, which bounds what the Redis store
//! accepts (see [`fits_in_lua`]); `idiv` corrects the rounding of a floating division.

use crate::{Algorithm, Policy};

const PRELUDE: &str = r#"
-- Redis 3.2 and 4 replicate scripts verbatim unless told otherwise, and then refuse writes
-- after TIME; from Redis 5 on (and in Valkey) this is the default and the call a no-op.
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local window = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local min_ttl = tonumber(ARGV[6]) or 0
local function expire_in(ms)
  if ms < min_ttl then ms = min_ttl end
  redis.call('PEXPIRE', key, ms)
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function idiv(a, b)
  local q = math.floor(a / b)
  while q * b > a do q = q - 1 end
  while (q + 1) * b <= a do q = q + 1 end
  return q
end
"#;

const SLIDING_WINDOW: &str = r#"
local len = redis.call('LLEN', key)
local oldest = nil
if len > 0 then
  -- instants stay in order even if the server clock steps back
  local newest = tonumber(redis.call('LINDEX', key, -1))
  if newest > now then now = newest end
end
while len > 0 do
  oldest = tonumber(redis.call('LINDEX', key, 0))
  if now - oldest < window then break end
  redis.call('LPOP', key)
  len = len - 1
  oldest = nil
end
if len < max then
  redis.call('RPUSH', key, now)
  expire_in(window)
  return {1, max - len - 1, ((oldest or now) + window - now) * 1000000}
end
return {0, 0, (oldest + window - now) * 1000000}
"#;

const FIXED_WINDOW: &str = r#"
local state = redis.call('HMGET', key, 's', 'c')
local start = tonumber(state[1])
local count = tonumber(state[2]) or 0
if start and now < start then now = start end
if not start or count == 0 or now - start >= window then
  start = now
  count = 0
end
local ends = start + window - now
if count < max then
  count = count + 1
  redis.call('HSET', key, 's', start, 'c', count)
  expire_in(ends)
  return {1, max - count, ends * 1000000}
end
return {0, 0, ends * 1000000}
"#;

const TOKEN_BUCKET: &str = r#"
local interval = tonumber(ARGV[4])
local capacity = tonumber(ARGV[5])
local state = redis.call('HMGET', key, 't', 'n')
local used = 0
if state[1] then
  used = (tonumber(state[1]) - now) * 1000000 + tonumber(state[2])
  if used < 0 then used = 0 end
end
if used + interval > capacity then
  return {0, 0, used + interval - capacity}
end
used = used + interval
local whole = idiv(used, 1000000)
redis.call('HSET', key, 't', now + whole, 'n', used - whole * 1000000)
expire_in(whole + 1)
local left = capacity - used
local remaining = idiv(left, interval)
local partial = left - remaining * interval
local next_back = interval
if partial ~= 0 then next_back = interval - partial end
return {1, remaining, next_back}
"#;

const SLIDING_WINDOW_COUNTER: &str = r#"
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
local index = idiv(now, window)
local elapsed = now - index * window
local state = redis.call('HMGET', key, 'w', 'p', 'c')
local prev, cur = 0, 0
local stored = tonumber(state[1])
if stored == index then
  prev = tonumber(state[2])
  cur = tonumber(state[3])
elseif stored == index - 1 then
  prev = tonumber(state[3])
end
local weighted = prev * (window - elapsed) + cur * window
if weighted >= max * window then
  return {0, 0, until_below(prev, cur, elapsed, window, max) * 1000000}
end
cur = cur + 1
redis.call('HSET', key, 'w', index, 'p', prev, 'c', cur)
expire_in(2 * window - elapsed)
local room = max * window - (weighted + window)
if room < 0 then room = 0 end
local remaining = idiv(room + window - 1, window)
return {1, remaining, until_below(prev, cur, elapsed, window, max - remaining) * 1000000}
"#;

/// One script: its source and the SHA-1 that `EVALSHA` names it by.
pub(crate) struct Script {
    pub(crate) source: String,
    pub(crate) sha: String,
}

impl Script {
    fn new(body: &str) -> Script {
        let source = format!("{PRELUDE}{body}");
        let sha = sha1_smol::Sha1::from(&source).digest().to_string();
        Script { source, sha }
    }
}

/// The scripts, one per algorithm.
pub(crate) struct Scripts {
    sliding_window: Script,
    fixed_window: Script,
    sliding_window_counter: Script,
    token_bucket: Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        Scripts {
            sliding_window: Script::new(SLIDING_WINDOW),
            fixed_window: Script::new(FIXED_WINDOW),
            sliding_window_counter: Script::new(SLIDING_WINDOW_COUNTER),
            token_bucket: Script::new(TOKEN_BUCKET),
        }
    }

    pub(crate) fn of(&self, algorithm: Algorithm) -> &Script {
        match algorithm {
            Algorithm::SlidingWindow => &self.sliding_window,
            Algorithm::FixedWindow => &self.fixed_window,
            Algorithm::SlidingWindowCounter => &self.sliding_window_counter,
            Algorithm::TokenBucket => &self.token_bucket,
        }
    }
}

/// Whether every number the scripts compute for `policy` stays below 2⁵³, where Lua's
/// doubles are exact: `max × window` (the counter), `burst × interval` (the bucket), and
/// waits in nanoseconds (two windows at most, or a full bucket).
pub(crate) fn fits_in_lua(policy: &Policy) -> bool {
    const EXACT: u128 = 1 << 53;
    let window_ms = u128::from(policy.window_ms());
    let max = u128::from(policy.max().get());
    let capacity = u128::from(policy.burst().get()) * u128::from(policy.emission_interval_ns());
    max * window_ms * 2 < EXACT && capacity * 2 < EXACT && window_ms * 2_000_000 < EXACT
}
