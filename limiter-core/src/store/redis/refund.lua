-- The refund by receipt: see scripts.rs for its arguments.
if redis.replicate_commands then redis.replicate_commands() end
local clock = tonumber(ARGV[1])
if not clock then
  local t = redis.call('TIME')
  clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
for i = 1, #KEYS do
  local key = KEYS[i]
  local base = 1 + (i - 1) * 6
  local algorithm = tonumber(ARGV[base + 1])
  local window = tonumber(ARGV[base + 2])
  local interval = tonumber(ARGV[base + 3])
  local cost = tonumber(ARGV[base + 4])
  local mark = tonumber(ARGV[base + 5])
  local mark_ns = tonumber(ARGV[base + 6])
  if algorithm == 1 then
    -- Instants equal to the mark, while it is in the window. The log is in order and a
    -- refund is usually recent: the mark is found by galloping from the newest instant
    -- (1, 2, 4, ... back) and bisecting, a few reads whatever the log's length; those
    -- instants are then removed from the newest end.
    if clock - mark < window then
      local len = redis.call('LLEN', key)
      local function back(j) return tonumber(redis.call('LINDEX', key, -1 - j)) end
      local later = 0
      if len > 0 and back(0) > mark then
        local lo, hi = 0, 1
        while hi < len and back(hi) > mark do lo, hi = hi, hi * 2 end
        if hi > len then hi = len end
        while hi - lo > 1 do
          local mid = math.floor((lo + hi) / 2)
          if back(mid) > mark then lo = mid else hi = mid end
        end
        later = hi
      end
      local n = 0
      while n < cost and later + n < len and back(later + n) == mark do n = n + 1 end
      if n > 0 then
        for j = later, later + n - 1 do redis.call('LSET', key, -1 - j, 'refunded') end
        redis.call('LREM', key, -n, 'refunded')
      end
    end
  elseif algorithm == 2 then
    -- From the window that counted it, while it is still the open one.
    local state = redis.call('HMGET', key, 's', 'c')
    local start, count = tonumber(state[1]), tonumber(state[2]) or 0
    if start == mark and count > 0 and clock - start < window then
      redis.call('HSET', key, 'c', count - math.min(cost, count))
    end
  elseif algorithm == 3 then
    -- From the count of its window, while that window weighs.
    local state = redis.call('HMGET', key, 'w', 'p', 'c')
    local stored = tonumber(state[1])
    if stored then
      local behind = stored - math.floor(mark / window)
      local field, n = nil, 0
      if behind == 0 then field, n = 'c', tonumber(state[3]) or 0
      elseif behind == 1 then field, n = 'p', tonumber(state[2]) or 0 end
      if field and n > 0 then redis.call('HSET', key, field, n - math.min(cost, n)) end
    end
  else
    -- What is still owed of its tokens: they come back oldest first, all by the mark. The
    -- theoretical arrival time moves back by that much (relative to the clock, to stay
    -- within exact doubles); one in the past is a full bucket.
    local state = redis.call('HMGET', key, 't', 'n')
    if state[1] then
      local owed = (mark - clock) * 1000000 + mark_ns
      if owed > cost * interval then owed = cost * interval end
      if owed > 0 then
        local tat = (tonumber(state[1]) - clock) * 1000000 + tonumber(state[2]) - owed
        local whole = math.floor(tat / 1000000)
        redis.call('HSET', key, 't', clock + whole, 'n', tat - whole * 1000000)
      end
    end
  end
end
return 0
