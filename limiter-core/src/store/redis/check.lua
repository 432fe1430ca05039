-- The check of every algorithm, for a batch of checks: see scripts.rs for its arguments
-- and its answer, and for the two ways Redis is given it: a function library (`FCALL`,
-- Redis 7 and Valkey), loaded once, whose functions are made once at its load; or a script
-- (`EVALSHA`), which Redis runs whole on every call. scripts.rs puts before it the `make`
-- of its way: for a library nil, every function being made; for a script the states and
-- penalties of the call's policies, only whose functions are made (a script makes every
-- function it defines on every call, which cost Redis more than a new client's whole
-- check). Either way `run(KEYS, ARGV)` decides the call.
-- Needs Redis 6.0 or later, or Valkey (refunds keep an expiry with `SET ... KEEPTTL`).
-- A library's load may read no global but `redis`: the others (`struct`, `string`,
-- `math`) are read when called.

-- What `run` sets for the call it decides. `min_ttl`, the policies and whether any keeps
-- a packed string (not a list: a long log), or a penalty record, from the header.
local min_ttl, policies, strings
-- The reading the check being decided counts at: its caller's, or the server's TIME, read
-- once for a whole batch (`server_now`, first_state.lua).
local clock = 0
-- The checks' key names (see `run`).
local names
local encode, decode
local expire, keep, log_of, instant, log_answer, sliding_window, formats, decoded, format_of
local short_log, fixed_window, DAY, civil_from_days, days_from_civil, period_of, period_start
local calendar_quota, until_below, sliding_window_counter, token_bucket, record_of, block_left
local start_block, window_answer
if not make or make[1] then
  expire = function(key, ms)
    if ms < min_ttl then ms = min_ttl end
    if ms < 1 then ms = 1 end
    redis.call('PEXPIRE', key, int(ms))
  end
  -- Every key written must live as long as its state can change a decision (`need` ms). Its
  -- expiry is read and, when short of that (a new key, or one another writer gave less),
  -- set to `give` ms, a little more than needed, so that the next writes find it long
  -- enough. A caller with a clock of its own always sets it (to at least `min_ttl`).
  -- A key this call found absent (`fresh`) has no expiry to read.
  keep = function(key, need, give, fresh)
    if fresh or min_ttl > 0 or redis.call('PTTL', key) < need then expire(key, give) end
  end
end

-- State read once per call and written once at its end: a batch's checks of one key (a
-- busy client) share one read and one write. The fixed window, the counter and the bucket
-- keep their state in a string of a few packed integers (`values[key]`: as read, `false`
-- for none, then as changed), written with its expiry in one `SET PX` (`dirty[key]`: the
-- ms it must live); `logs[key]` is a view of a sliding log with the changes still to write.
local values, dirty, order, logs, log_order
-- The packed states, big-endian unsigned: the fixed window's start (ms) and count; the
-- counter's window index and the previous and current windows' counts; the bucket's
-- theoretical arrival time in ms and the nanoseconds beyond them.
local FIXED, COUNTER, BUCKET = '>I6I4', '>I6I4I4', '>I6I4'

if not make or make[1] then
  -- A sliding log as read (`loaded` instants, those asked for kept in `seen` by index), less
  -- the `off` oldest instants dropped since, plus the instants pushed since (`tail`). Single
  -- instants are read with LINDEX, which costs Redis far less than a range.
  log_of = function(key)
    if not logs then logs, log_order = {}, {} end
    local log = logs[key]
    if not log then
      local len = redis.call('LLEN', key)
      local newest = nil
      local seen = {}
      if len > 0 then
        newest = tonumber(redis.call('LINDEX', key, '-1'))
        seen[len - 1] = newest
      end
      log = {loaded = len, off = 0, seen = seen, tail = {}, newest = newest, fresh = len == 0}
      logs[key] = log
      log_order[#log_order + 1] = key
    end
    return log
  end
  -- The log's i-th instant (from 0).
  instant = function(key, log, i)
    local p = log.off + i
    if p >= log.loaded then return log.tail[p - log.loaded + 1] end
    local at = log.seen[p]
    if not at then
      at = tonumber(redis.call('LINDEX', key, int(p)))
      log.seen[p] = at
    end
    return at
  end
end

-- Each algorithm returns six values: whether it admits `cost`; if it does, {remaining,
-- wait_ns} with it counted, else its rejection; where it stands with nothing counted
-- {remaining, wait_ns}; and the instant it counted at. The log reads its key and, with
-- `commit`, records what it admits; the others decide on their packed state (`raw`, false
-- for none) and, when they admit, also return the state counted and the ms it must live.
-- (No closures or tables per check: Redis runs this for every request.)

if not make or make[1] or make[5] then
  -- A sliding log's answer, either representation, from its `count` instants in the window
  -- and the oldest of them: where it stands, and `cost` admitted, or refused until `last`
  -- (the instant whose leaving admits it) leaves the window.
  log_answer = function(count, oldest, last, now, window, max, cost)
    local status_wait = 0
    if oldest then status_wait = (oldest + window - now) * 1000000 end
    if last then
      return false, max - count, (last + window - now) * 1000000, max - count, status_wait, now
    end
    return true, max - count - cost, ((oldest or now) + window - now) * 1000000, max - count,
      status_wait, now
  end
end

if not make or make[1] then
  sliding_window = function(key, window, max, cost, commit)
    local now = clock
    local log = log_of(key)
    local len = log.loaded - log.off + #log.tail
    local newest = nil
    if len > 0 then
      newest = log.newest
      if newest > now then now = newest end
    end
    -- The instants are in order. The first one still in the window is found by galloping
    -- from the oldest (1, 2, 4, ... on) and then bisecting: a few reads when a few instants
    -- left the window, a few dozen for a log of 65,535 (a scan would block Redis).
    local expired, oldest = 0, nil
    if len > 0 then
      local first = instant(key, log, 0)
      if now - first < window then
        oldest = first
      else
        local lo, hi, step = 0, len, 1
        while lo + step < len do
          if now - instant(key, log, lo + step) < window then hi = lo + step break end
          lo, step = lo + step, step * 2
        end
        while hi - lo > 1 do
          local mid = math.floor((lo + hi) / 2)
          if now - instant(key, log, mid) < window then hi = mid else lo = mid end
        end
        expired = hi
        if expired < len then oldest = instant(key, log, expired) end
      end
    end
    local count = len - expired
    if count + cost > max then
      -- Admitted once the oldest count + cost - max instants have left the window; more than
      -- max at once never is (the wait is until the log is empty).
      local leaving = count + cost - max
      local last = now
      if leaving <= count then
        last = instant(key, log, expired + leaving - 1)
      elseif count > 0 then
        last = newest
      end
      return log_answer(count, oldest, last, now, window, max, cost)
    end
    if commit then
      log.off = log.off + expired
      for _ = 1, cost do log.tail[#log.tail + 1] = now end
      log.newest = now
      -- The log matters until its newest instant leaves the window (counted from the call's
      -- reading, as Redis counts expiries: later by as much as the state was caught up past
      -- it); when its expiry falls short of that, it is set to two windows, so that it stands
      -- for a window of pushes.
      local ahead = now - clock
      log.need, log.give = window + ahead, 2 * window + ahead
    end
    return log_answer(count, oldest, nil, now, window, max, cost)
  end
end

if not make or make[5] then
  -- A short log (a limit of at most 128, the usual ones): its instants packed in a string,
  -- oldest first — the oldest in 6 bytes, each later one in 4 as its distance from it (the
  -- instants kept all lie within a window, at most 7 days) — read and rewritten whole: a
  -- `GET` and a `SET PX` like the other states, 4 bytes an instant and no list to keep.
  -- A log read or written in this call is decoded once (`decoded[raw]`): a busy client's
  -- checks in one call, most of them rejected, do not decode it each.
  formats, decoded = {}, {}
  -- The struct format of a short log of `n` instants.
  format_of = function(n)
    local format = formats[n]
    if not format then
      format = '>I6' .. string.rep('I4', n - 1)
      -- (A library keeps them: the lengths of the short logs, 128 at most.)
      if n <= 128 then formats[n] = format end
    end
    return format
  end
  short_log = function(raw, window, max, cost)
    local now = clock
    local v, n = nil, 0
    if raw then
      n = (#raw - 2) / 4
      v = decoded[raw]
      if not v then
        v = {decode(format_of(n), raw)}
        decoded[raw] = v
      end
      local newest = v[1]
      if n > 1 then newest = newest + v[n] end
      if newest > now then now = newest end
    end
    -- The i-th instant (from 1) is v[1] for the oldest, v[1] + v[i] after it.
    local base = v and v[1]
    local expired = 0
    while expired < n do
      local at = base
      if expired > 0 then at = base + v[expired + 1] end
      if now - at < window then break end
      expired = expired + 1
    end
    local count = n - expired
    local oldest = nil
    if count > 0 then
      oldest = base
      if expired > 0 then oldest = base + v[expired + 1] end
    end
    if count + cost > max then
      -- The instant whose leaving admits it: the (count + cost - max)-th in the window, or
      -- the newest (or now) when it needs more than the log holds.
      local last = now
      if count > 0 then
        local i = expired + count + cost - max
        if i > n then i = n end
        last = base
        if i > 1 then last = base + v[i] end
      end
      return log_answer(count, oldest, last, now, window, max, cost)
    end
    -- The instants still in the window, then `cost` of now, from the first of them.
    local from = oldest or now
    local out, k = {from}, 1
    for i = expired + 2, n do
      k = k + 1
      out[k] = base + v[i] - from
    end
    local first = 1
    if count == 0 then first = 2 end
    for _ = first, cost do
      k = k + 1
      out[k] = now - from
    end
    -- The log matters until its newest instant (now) leaves the window.
    local admits, remaining, wait, status_remaining, status_wait, used =
      log_answer(count, oldest, nil, now, window, max, cost)
    return admits, remaining, wait, status_remaining, status_wait, used,
      encode(format_of(k), unpack(out, 1, k)), window
  end
end

if not make or make[2] or make[6] then
  -- A count in a window (the fixed window's, a calendar period's) that ends `left` ms after
  -- `now`, its state packed as `from` (the window's start, the period's number) and the
  -- count: its answer, and when it admits, the state counted and the ms it must live.
  window_answer = function(from, count, max, cost, left, now)
    local ends = left * 1000000
    local status_wait = 0
    if count > 0 then status_wait = ends end
    if cost > max - count then
      return false, max - count, ends, max - count, status_wait, now
    end
    return true, max - count - cost, ends, max - count, status_wait, now,
      encode(FIXED, from, count + cost), left
  end
end
if not make or make[2] then
  fixed_window = function(raw, window, max, cost)
    local now = clock
    local start, count = nil, 0
    if raw then start, count = decode(FIXED, raw) end
    if start and count > 0 and now < start then now = start end
    if not start or count == 0 or now - start >= window then
      start = now
      count = 0
    end
    -- The state matters until the window ends.
    return window_answer(start, count, max, cost, start + window - now, now)
  end
end

if not make or make[6] then
  -- Calendar quotas (calendar.rs has the rules): periods of days, Monday weeks or months,
  -- from an offset east of UTC; the state packs the period's number and its count as the
  -- fixed window packs its start and count.
  DAY = 86400000
  -- The (year, month) of a day counted from 1970-01-01 (H. Hinnant's algorithm; days after
  -- 1970 only, so every division is of positive numbers).
  civil_from_days = function(day)
    local z = day + 719468
    local era = math.floor(z / 146097)
    local doe = z - era * 146097
    local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
      - math.floor(doe / 146096)) / 365)
    local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
    local mp = math.floor((5 * doy + 2) / 153)
    local month = mp + 3
    if mp >= 10 then month = mp - 9 end
    local year = yoe + era * 400
    if month <= 2 then year = year + 1 end
    return year, month
  end
  -- The day, counted from 1970-01-01, of the first of `month` in `year`.
  days_from_civil = function(year, month)
    if month <= 2 then year = year - 1 end
    local era = math.floor(year / 400)
    local yoe = year - era * 400
    local mp = month - 3
    if month <= 2 then mp = month + 9 end
    local doy = math.floor((153 * mp + 2) / 5)
    return era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
  end
  period_of = function(policy, now)
    local loc = now + (policy[11] - 840) * 60000
    if loc < 0 then loc = 0 end
    local day = math.floor(loc / DAY)
    if policy[10] == 1 then return day end
    if policy[10] == 2 then return math.floor((day + 3) / 7) end
    local year, month = civil_from_days(day)
    return (year - 1970) * 12 + month - 1
  end
  period_start = function(policy, index)
    local day = index
    if policy[10] == 2 then
      day = index * 7 - 3
    elseif policy[10] == 3 then
      day = days_from_civil(1970 + math.floor(index / 12), index % 12 + 1)
    end
    local start = day * DAY - (policy[11] - 840) * 60000
    if start < 0 then start = 0 end
    return start
  end
  calendar_quota = function(policy, raw, cost)
    local now, max = clock, policy[3]
    local index, count = nil, 0
    if raw then index, count = decode(FIXED, raw) end
    local current = period_of(policy, now)
    if not index or count == 0 or current > index then index, count = current, 0 end
    -- A reading of an earlier period is counted at the state's period's start.
    local start = period_start(policy, index)
    if start > now then now = start end
    -- The state matters until its period ends.
    return window_answer(index, count, max, cost, period_start(policy, index + 1) - now, now)
  end
end

if not make or make[3] then
  until_below = function(prev, cur, elapsed, t, target)
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

  sliding_window_counter = function(raw, window, max, cost)
    local now = clock
    local stored, stored_prev, stored_cur = nil, 0, 0
    if raw then stored, stored_prev, stored_cur = decode(COUNTER, raw) end
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
    if cost > max or weighted + (cost - 1) * window >= max * window then
      local target = max + 1 - cost
      if target < 1 then target = 1 end
      local wait = until_below(prev, cur, elapsed, window, target) * 1000000
      local left = 0
      if weighted < max * window then left = idiv(max * window - weighted + window - 1, window) end
      return false, left, wait, left, wait, now
    end
    local left = idiv(max * window - weighted + window - 1, window)
    local status_wait = 0
    if left < max then status_wait = until_below(prev, cur, elapsed, window, max - left) * 1000000 end
    local room = max * window - (weighted + cost * window)
    if room < 0 then room = 0 end
    local remaining = idiv(room + window - 1, window)
    local wait = until_below(prev, cur + cost, elapsed, window, max - remaining) * 1000000
    -- The state matters until the next window ends.
    return true, remaining, wait, left, status_wait, now,
      encode(COUNTER, index, prev, cur + cost), 2 * window - elapsed
  end
end

if not make or make[4] then
  token_bucket = function(raw, interval, capacity, cost, delay)
    local now = clock
    local used = 0
    if raw then
      local tat, tat_ns = decode(BUCKET, raw)
      used = (tat - now) * 1000000 + tat_ns
      if used < 0 then used = 0 end
    end
    local taken = cost * interval
    if used + taken > capacity then
      local wait = used + taken - capacity
      if wait > 576460752303423488 then wait = 576460752303423488 end
      if wait <= delay and taken <= capacity then
        -- Its tokens come within the delay: taken now, ahead; it runs once they are back.
        -- (The answer's wait is negative: an admission that waits.) Where the bucket stands
        -- with nothing taken: admitting one more after a wait (0 left), or refusing (a status
        -- of -1 remaining says so) until a wait is within the delay.
        local over = used + interval - capacity
        local status_remaining, status_wait = 0, over
        if over > delay then status_remaining, status_wait = -1, over - delay end
        if over <= 0 then
          local left = capacity - used
          status_remaining = idiv(left, interval)
          status_wait = 0
          if used ~= 0 then
            status_wait = interval
            local partial = left - status_remaining * interval
            if partial ~= 0 then status_wait = interval - partial end
          end
        end
        local after = used + taken
        local whole = idiv(after, 1000000)
        return true, 0, -wait, status_remaining, status_wait, now,
          encode(BUCKET, now + whole, after - whole * 1000000), whole + 1
      end
      local left = 0
      if used < capacity then left = idiv(capacity - used, interval) end
      -- A request that fits comes back once its wait is within the delay.
      if taken <= capacity then wait = wait - delay end
      return false, left, wait, left, wait, now
    end
    local left = capacity - used
    local status_remaining = idiv(left, interval)
    local status_wait = 0
    if used ~= 0 then
      status_wait = interval
      local partial = left - status_remaining * interval
      if partial ~= 0 then status_wait = interval - partial end
    end
    local after = used + taken
    left = capacity - after
    local remaining = idiv(left, interval)
    local next_back = interval
    local partial = left - remaining * interval
    if partial ~= 0 then next_back = interval - partial end
    -- The bucket matters until it is full again.
    local whole = idiv(after, 1000000)
    return true, remaining, next_back, status_remaining, status_wait, now,
      encode(BUCKET, now + whole, after - whole * 1000000), whole + 1
  end
end


-- A packed state's algorithm (state 2, 3, 4, 5 or 6) on `raw`: its answer, and when it admits,
-- the state counted and the ms it must live.
local function packed(policy, raw, cost)
  local state = policy[1]
  if state == 5 then return short_log(raw, policy[2], policy[3], cost) end
  if state == 2 then return fixed_window(raw, policy[2], policy[3], cost) end
  if state == 6 then return calendar_quota(policy, raw, cost) end
  if state == 3 then return sliding_window_counter(raw, policy[2], policy[3], cost) end
  return token_bucket(raw, policy[4], policy[5], cost, policy[12])
end

-- How long a state counted at `used` must live, in ms from the call's reading (Redis counts
-- expiries from its own clock, and a state caught up past the reading matters that much
-- longer), and at least `min_ttl`.
-- And 12 ms more: a new client's first check made without the script (fresh.rs) counts at
-- the store's reading of the server's clock, up to 12 ms behind it; a key that is gone must
-- be one whose state stopped mattering by then. (fresh.rs's KEY_MARGIN_MS: a test there holds
-- the two equal.)
local function lifetime(ttl, used)
  ttl = ttl + used - clock
  if ttl < min_ttl then ttl = min_ttl end
  if ttl < 1 then ttl = 1 end
  return ttl + 12
end

-- Records `key`'s counted state, to be written once at the end, to live `ttl` ms.
local function record(key, counted, ttl)
  values[key] = counted
  if not dirty[key] then order[#order + 1] = key end
  dirty[key] = ttl
end

if not make or make.penalties then
  -- Penalties (penalty.rs has the rules): a limit with a block has a second key after its
  -- state's, the client's record under it, packed: when its block ends (ms), then the starts
  -- of its latest blocks, as many as the escalation counts, 6 bytes each.
  record_of = function(raw)
    local n = #raw / 6
    return {decode('>' .. string.rep('I6', n), raw)}, n
  end
  -- The ns the client's block still lasts, if one is in force.
  block_left = function(bkey)
    local raw = values[bkey]
    if not raw then return nil end
    local until_ms = decode('>I6', raw)
    if clock < until_ms then return (until_ms - clock) * 1000000 end
    return nil
  end
  -- Starts the client's block after its limit rejected it with `wait_ns`: the ns it lasts.
  start_block = function(policy, bkey, wait_ns)
    local block, after, within, long = policy[6], policy[7], policy[8], policy[9]
    local raw = values[bkey]
    local until_ms, strikes = 0, {}
    if raw then
      local v, n = record_of(raw)
      until_ms = v[1]
      for i = 2, n do
        if clock - v[i] < within then strikes[#strikes + 1] = v[i] end
      end
    end
    local length = block
    if after > 0 and #strikes >= after then length = long end
    -- Never shorter than the limit's own wait: a client that waits its block out is admitted.
    local wait_ms = idiv(wait_ns + 999999, 1000000)
    if wait_ms > length then length = wait_ms end
    if clock + length > until_ms then until_ms = clock + length end
    local out = {until_ms}
    if after > 0 then
      local from = 1
      if #strikes >= after then from = #strikes - after + 2 end
      for i = from, #strikes do out[#out + 1] = strikes[i] end
      out[#out + 1] = clock
    end
    -- The record matters while the block lasts, and while its latest start counts.
    local ttl = until_ms - clock
    if after > 0 and within > ttl then ttl = within end
    record(bkey, encode('>' .. string.rep('I6', #out), unpack(out)), lifetime(ttl, clock))
    return (until_ms - clock) * 1000000
  end
end

local function decide(p, key, cost, commit)
  local policy = policies[p]
  if policy[1] == 1 then
    return sliding_window(key, policy[2], policy[3], cost, commit)
  end
  local raw = values[key]
  if raw and #raw < 6 and policy[1] <= 5 then
    raw = first_state(key, raw, policy[1], policy[2], policy[4])
    values[key] = raw
  end
  local admits, remaining, wait, status_remaining, status_wait, used, counted, ttl =
    packed(policy, raw, cost)
  if commit and admits then record(key, counted, lifetime(ttl, used)) end
  return admits, remaining, wait, status_remaining, status_wait, used
end

-- An answer's first number: 0 if the key's limit did not count the check, else 1 plus how
-- far after the call's clock the instant it counted at lies (a reading earlier than the
-- state is counted at the state's newest instant), for the check's receipt.
local function counted(admits, used)
  if not admits then return 0 end
  return 1 + used - clock
end

-- Every key's packed state, read in one MGET per slot group: a command costs a script far
-- more than the key it reads (a list's, a long log's, reads as none and is not used). A key
-- asked again right after itself (a busy client's checks, side by side in a batch) is asked
-- once. With several slot groups each read is also the proof that its slot is served here:
-- a node that no longer holds one (a slot moved, a key migrating) fails the read, and the
-- call answers that before it wrote anything.
local function read_states(from, to, probe)
  local asked, lo, hi = names, from, to
  for i = from + 1, to do
    if names[i] == names[i - 1] then
      asked, lo, hi = {names[from]}, 1, 1
      for j = from + 1, to do
        if names[j] ~= asked[hi] then
          hi = hi + 1
          asked[hi] = names[j]
        end
      end
      break
    end
  end
  -- In parts of 1,000: Lua unpacks at most 8,000 values.
  for part = lo, hi, 1000 do
    local last = math.min(part + 999, hi)
    local stored
    if probe then
      stored = redis.pcall('MGET', unpack(asked, part, last))
      if stored.err then return stored.err end
    else
      stored = redis.call('MGET', unpack(asked, part, last))
    end
    for i = part, last do
      local key = asked[i]
      if values[key] == nil then values[key] = stored[i - part + 1] end
    end
  end
end
-- A new client's usual check (one unit, the server's clock) gets the same answer and the
-- same state whoever it is: decided once per policy per call (`fresh[p]`: the answer, the
-- state and its expiry as a string). Most checks of a busy Redis are of new clients, and
-- converting numbers to strings and back is much of what a script costs.
local fresh
local function usual_fresh(p, key)
  if not fresh then fresh = {} end
  local known = fresh[p]
  if not known then
    local admits, remaining, wait, _, _, used, state, ttl = packed(policies[p], false, 1)
    -- The lifetime as a string: `SET` would convert it for every key.
    known = {admits, remaining, wait, used, state, int(lifetime(ttl, used))}
    fresh[p] = known
  end
  if known[1] then record(key, known[5], known[6]) end
  return known[1], known[2], known[3], known[4]
end

-- The header's policies, parsed (see `parse`), by header: a library keeps them from call
-- to call (the few headers an instance sends); a script, for its one call.
local parsed, nparsed = {}, 0

-- The header, packed (no numbers to parse from strings): `min_ttl`, the number of
-- policies, then each policy (see below); after them, the cluster's groups (see `run`).
-- Returns {min_ttl, policies, strings, where the groups start}.
local function parse(header)
  local min_ttl, npolicies, at = struct.unpack('>I8I4', header)
  -- The policies this call's checks use, each once, from the header: state, window_ms, max,
  -- interval_ns, capacity_ns, then the penalty's block_ms (0: none), after, within_ms and
  -- escalated block_ms, the calendar's period (0: none) and UTC offset + 840 minutes, and the
  -- bucket's delay in ns (0: none).
  local policies = {}
  -- Whether any keeps a packed string (not a list: a long log), or a penalty record.
  local strings = false
  for p = 1, npolicies do
    local state, window, max, interval, capacity, block, after, within, long, period, offset
    local delay
    state, window, max, interval, capacity, block, after, within, long, period, offset, delay, at =
      struct.unpack('>I1I8I4I8I8I8I1I8I8I1I2I8', header, at)
    policies[p] = {state, window, max, interval, capacity, block, after, within, long, period,
      offset, delay}
    if state ~= 1 or block > 0 then strings = true end
  end
  return {min_ttl, policies, strings, at}
end

-- Writes every state a call's checks changed, once, with the expiry it needs from now.
-- `wrote` tells whether a write went through: a server that refuses writes (out of memory,
-- short of replicas, a failed save) refuses the first one.
local wrote
local function write_all()
  for i = 1, #order do
    local key = order[i]
    local ttl = dirty[key]
    if type(ttl) == 'number' then ttl = int(ttl) end
    redis.call('SET', key, values[key], 'PX', ttl)
    wrote = true
  end
  if log_order then
    for _, key in ipairs(log_order) do
      local log = logs[key]
      if log.off > 0 or #log.tail > 0 then
        -- The instants to push, and how many of those read to drop: every one read, and perhaps
        -- some pushed since, once `off` reaches past them.
        local from, drop = 1, log.off
        if log.off >= log.loaded then from, drop = log.off - log.loaded + 1, log.loaded end
        -- Whether anything is left of the key once it is written.
        local remains = from <= #log.tail or drop < log.loaded
        -- Pushed before the old ones are trimmed, so that the key never stops existing midway:
        -- a cluster node whose slot is migrating refuses a key it no longer holds, and a
        -- refusal after a write would leave the call half done.
        -- As text, each instant printed once (a call's instants are mostly of one ms).
        local pushing = #log.tail
        if from == pushing then
          redis.call('RPUSH', key, int(log.tail[from]))
          wrote = true
        elseif from < pushing then
          local texts, pushed = {}, {}
          while from <= pushing do
            local last = math.min(from + 999, pushing)
            for i = from, last do
              local at = log.tail[i]
              local text = texts[at]
              if not text then
                text = int(at)
                texts[at] = text
              end
              pushed[i - from + 1] = text
            end
            redis.call('RPUSH', key, unpack(pushed, 1, last - from + 1))
            wrote = true
            from = last + 1
          end
        end
        if drop > 0 then
          if remains then
            redis.call('LTRIM', key, int(drop), '-1')
          else
            redis.call('DEL', key)
          end
        end
        if log.need and remains then keep(key, log.need, log.give, log.fresh) end
      end
    end
  end
end

-- Whether `e`, an error a write raised, is a server refusing writes.
local function refuses_writes(e)
  -- (A table on Redis 7 and Valkey; text on Redis 6, after the script's place.)
  local text = type(e) == 'table' and e.err or tostring(e)
  return string.find(text, 'OOM ', 1, true) or string.find(text, 'MISCONF ', 1, true)
    or string.find(text, 'NOREPLICAS ', 1, true)
end

-- Decides a call: see scripts.rs.
local function run(KEYS, ARGV)
  encode, decode = struct.pack, struct.unpack
  local header = ARGV[1]
  local known = parsed[header]
  if not known then
    -- A few hundred headers at most are kept (a cluster's groups make many).
    if nparsed >= 256 then parsed, nparsed = {}, 0 end
    known = parse(header)
    parsed[header], nparsed = known, nparsed + 1
  end
  min_ttl, policies, strings = known[1], known[2], known[3]
  local at = known[4]
  clock, server_clock = 0, nil
  -- (A sliding log's, made by its first read: most calls have none.)
  values, dirty, order, logs, log_order = {}, {}, {}, nil, nil
  if decoded and next(decoded) then decoded = {} end

  -- The checks' key names: `KEYS`, in one hash slot. On a cluster node a call may carry the
  -- checks of several slots the node serves (a node takes declared keys of one slot only):
  -- the header then ends with the number of names in each slot's group ('>I4' each, the first
  -- being `KEYS`'), and the names of the other groups are the last `ARGV`s.
  names = KEYS
  local groups = nil
  if #header >= at then
    groups = {}
    local total = 0
    while at <= #header do
      groups[#groups + 1], at = struct.unpack('>I4', header, at)
      total = total + groups[#groups]
    end
    names = {}
    for i = 1, #KEYS do names[i] = KEYS[i] end
    local from = #ARGV - (total - #KEYS)
    for i = #KEYS + 1, total do names[i] = ARGV[from + i - #KEYS] end
  end
  if groups then
    local from = 1
    for g = 1, #groups do
      local failed = read_states(from, from + groups[g] - 1, true)
      if failed then return redis.error_reply('LIMITER_ELSEWHERE ' .. tostring(failed)) end
      from = from + groups[g]
    end
  elseif strings and #names > 0 then
    read_states(1, #names, false)
  end
  fresh = nil

  -- Then the plan: one byte per check, decided in order, each all or nothing, each seeing
  -- those before it; its keys are the next ones in `names`. A byte from 1 to 254 is the usual
  -- check of that policy: one limit, one unit, the server's clock. Followed by 255 and a
  -- count n, it stands for n + 1 such checks of one key, side by side (a busy client's, of a
  -- window or a log: see `usual_run`), its key named once. A 0 is any other check, given by
  -- the next ARGV as `now;peek;policy:cost;policy:cost...` (`now` empty for the server's
  -- clock, `peek` 1 or 2 to count nothing, 2 to change nothing at all).
  local reply, r = {}, 0
  local first = 1
  local plan = ARGV[2]
  local given = 3
  local byte = string.byte
  -- The usual checks this call rejected, by key: {policy, remaining, wait}. A rejection
  -- records nothing and the call's usual checks count at its one reading, so the same
  -- check of the same key again gets the same answer without being decided again (a busy
  -- client's flood, most of its batch) — until a check of another kind runs.
  local refused = nil
  local c, planned = 1, #plan
  while c <= planned do
    local single = byte(plan, c)
    c = c + 1
    if single > 0 then
      local times = 1
      if byte(plan, c) == 255 then
        times = byte(plan, c + 1) + 1
        c = c + 2
      end
      clock = server_now()
      local key = names[first]
      local known = refused and refused[key]
      if known and known[1] == single then
        if times == 1 then
          reply[r + 1], reply[r + 2], reply[r + 3], r = 0, known[2], known[3], r + 3
        else
          reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4], reply[r + 5], reply[r + 6], r =
            0, 0, known[2], known[3], known[2], known[3], r + 6
        end
      else
        local admits, remaining, wait, used, _
        if values[key] == false and policies[single][1] ~= 1 then
          admits, remaining, wait, used = usual_fresh(single, key)
        else
          admits, remaining, wait, _, _, used = decide(single, key, 1, true)
        end
        if times == 1 then
          if admits then
            reply[r + 1], reply[r + 2], reply[r + 3], r = 1 + used - clock, remaining, wait, r + 3
            -- (One key under two policies — a bucket with a delay and without share it — may
            -- admit under one after refusing under the other: that answer is stale then.)
            if refused then refused[key] = nil end
          else
            reply[r + 1], reply[r + 2], reply[r + 3], r = 0, remaining, wait, r + 3
            if not refused then refused = {} end
            refused[key] = {single, remaining, wait}
          end
        else
          -- A run of one key's usual checks under a fixed window, a log or a calendar quota,
          -- all at the call's one reading: the k-th admitted leaves one unit fewer than the
          -- one before and waits as long, so the first's answer stands for them all, and those
          -- `remaining` units are counted at once. The rest are refused as the one after them.
          -- Answered in six numbers: how many it admitted, the first's answer, the refusal's
          -- remaining and wait.
          local admitted, rejected_remaining, rejected_wait = 0, remaining, wait
          local flag = 0
          if admits then
            flag = 1 + used - clock
            admitted = remaining + 1
            if admitted > times then admitted = times end
            if admitted > 1 then decide(single, key, admitted - 1, true) end
            if admitted < times then
              local _
              _, rejected_remaining, rejected_wait = decide(single, key, 1, true)
            end
          end
          reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4], reply[r + 5], reply[r + 6], r =
            admitted, flag, remaining, wait, rejected_remaining, rejected_wait, r + 6
          if admitted < times then
            if not refused then refused = {} end
            refused[key] = {single, rejected_remaining, rejected_wait}
          elseif refused then
            refused[key] = nil
          end
        end
      end
      first = first + 1
    else
      refused = nil
      local arg = ARGV[given]
      given = given + 1
      local now, peek, rest = string.match(arg, '^(%d*);([012])(.*)$')
      clock = tonumber(now) or server_now()
      -- 1 reads as another node of a rejected check (a limit that rejects it itself still
      -- starts its block), 2 reads where the limits stand and changes nothing.
      local status = peek == '2'
      peek = peek ~= '0'
      -- Each limit's key, and its record's after it when it has a penalty.
      local limits, k = {}, first
      for p, cost in string.gmatch(rest, '(%d+):(%d+)') do
        p = tonumber(p)
        local bkey = nil
        if policies[p][6] > 0 then bkey = names[k + 1] end
        limits[#limits + 1] = {p, tonumber(cost), names[k], bkey}
        if bkey then k = k + 2 else k = k + 1 end
      end
      local n = #limits
      -- A client whose block is in force is refused by it: nothing counts (a limit that
      -- rejects it itself starts its own block, as on a cluster's other nodes).
      local lefts, blocked = {}, false
      for i = 1, n do
        if limits[i][4] then
          lefts[i] = block_left(limits[i][4])
          if lefts[i] then blocked = true end
        end
      end
      if n == 1 and not blocked then
        -- One limit: decided and counted in one pass.
        local l = limits[1]
        local admits, remaining, wait, status_remaining, status_wait, used =
          decide(l[1], l[3], l[2], not peek)
        local flag = counted(admits, used)
        if admits and peek then
          remaining, wait, flag = status_remaining, status_wait, -1
          -- A bucket whose place-holding admitted it, and that would refuse now.
          if status_remaining < 0 then remaining, flag = 0, 0 end
        end
        if not admits and l[4] and not status then
          wait, flag = start_block(policies[l[1]], l[4], wait), -2
        end
        reply[r + 1], reply[r + 2], reply[r + 3], r = flag, remaining, wait, r + 3
      else
        -- Several: every limit is read first; only if all admit (and not peeking) are they
        -- counted, in a second pass over the same, unchanged state.
        local answers = {}
        local admitted = not peek and not blocked
        for i = 1, n do
          local l = limits[i]
          if lefts[i] then
            answers[i] = {false, 0, lefts[i], 0, lefts[i], clock}
          else
            local admits, remaining, wait, status_remaining, status_wait, used =
              decide(l[1], l[3], l[2], false)
            if not admits then admitted = false end
            answers[i] = {admits, remaining, wait, status_remaining, status_wait, used}
          end
        end
        for i = 1, n do
          local answer, l = answers[i], limits[i]
          if admitted then
            decide(l[1], l[3], l[2], true)
            reply[r + 1], reply[r + 2], reply[r + 3], r = counted(true, answer[6]), answer[2], answer[3], r + 3
          elseif answer[1] and answer[4] < 0 then
            -- A bucket that would have held its place, and stands full: a refusal.
            reply[r + 1], reply[r + 2], reply[r + 3], r = 0, 0, answer[5], r + 3
          elseif answer[1] then
            -- Another limit rejects the request: this one counts nothing and says where it
            -- stands (-1: it would admit it, and counted nothing).
            reply[r + 1], reply[r + 2], reply[r + 3], r = -1, answer[4], answer[5], r + 3
          elseif lefts[i] then
            reply[r + 1], reply[r + 2], reply[r + 3], r = -3, 0, lefts[i], r + 3
          elseif l[4] and not status then
            -- It rejects the request itself: its block starts.
            local wait = start_block(policies[l[1]], l[4], answer[3])
            reply[r + 1], reply[r + 2], reply[r + 3], r = -2, answer[2], wait, r + 3
          else
            reply[r + 1], reply[r + 2], reply[r + 3], r = 0, answer[2], answer[3], r + 3
          end
        end
      end
      first = k
    end
  end
  -- The server's reading, if one was taken: the reading every check without a `now` was
  -- decided at, so that a check can be given back exactly.
  reply[r + 1] = server_clock or 0
  -- A server that refuses writes refuses the first: then the call's rejections are
  -- answered as decided, and what it admitted, which had to count, is undecided (-4); a
  -- block that could not be recorded is answered as a plain rejection.
  wrote = false
  local written, e = pcall(write_all)
  if not written then
    if wrote or not refuses_writes(e) then error(e) end
    for i = 1, r, 3 do
      if reply[i] >= 1 then
        reply[i] = -4
      elseif reply[i] == -2 then
        reply[i] = 0
      end
    end
  end
  return reply
end -- run
