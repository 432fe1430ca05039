-- The refund by receipt: see scripts.rs for its arguments.
if redis.replicate_commands then redis.replicate_commands() end
-- The caller's clock, or the server's (read once a call, first_state.lua; a first state's
-- mark is read with the server's whatever the call's clock).
local clock = tonumber(ARGV[1]) or server_now()
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
  else
    -- The packed states of check.lua, changed in place: the expiry stays what the last
    -- check set (a refund never makes a state matter longer).
    local raw = redis.call('GET', key)
    if raw and #raw < 6 and algorithm <= 5 then
      raw = first_state(key, raw, algorithm, window, interval)
    end
    if raw then
      local changed = nil
      if algorithm == 5 then
        -- A short log (see check.lua): the newest instants equal to the mark, while it is
        -- in the window.
        local n = (#raw - 2) / 4
        local v = {struct.unpack('>I6' .. string.rep('I4', n - 1), raw)}
        local at = {v[1]}
        for i = 2, n do at[i] = v[1] + v[i] end
        local removed, gone = 0, {}
        if clock - mark < window then
          for i = n, 1, -1 do
            if removed == cost then break end
            if at[i] == mark then
              gone[i], removed = true, removed + 1
            end
          end
        end
        if removed == n then
          redis.call('DEL', key)
        elseif removed > 0 then
          local out, k, from = {}, 0, nil
          for i = 1, n do
            if not gone[i] then
              k = k + 1
              if from then out[k] = at[i] - from else from = at[i]; out[k] = from end
            end
          end
          changed = struct.pack('>I6' .. string.rep('I4', k - 1), unpack(out, 1, k))
        end
      elseif algorithm == 2 then
        -- From the window that counted it, while it is still the open one.
        local start, count = struct.unpack('>I6I4', raw)
        if start == mark and count > 0 and clock - start < window then
          changed = struct.pack('>I6I4', start, count - math.min(cost, count))
        end
      elseif algorithm == 6 then
        -- A calendar quota: from its period (`window` is its number, `interval` its end),
        -- while that period lasts.
        local index, count = struct.unpack('>I6I4', raw)
        if index == window and count > 0 and clock < interval then
          changed = struct.pack('>I6I4', index, count - math.min(cost, count))
        end
      elseif algorithm == 3 then
        -- From the count of its window, while that window weighs.
        local stored, prev, cur = struct.unpack('>I6I4I4', raw)
        local behind = stored - math.floor(mark / window)
        if behind == 0 and cur > 0 then
          changed = struct.pack('>I6I4I4', stored, prev, cur - math.min(cost, cur))
        elseif behind == 1 and prev > 0 then
          changed = struct.pack('>I6I4I4', stored, prev - math.min(cost, prev), cur)
        end
      else
        -- What is still owed of its tokens: they come back oldest first, all by the mark.
        -- The theoretical arrival time moves back by that much (relative to the clock, to
        -- stay within exact doubles), to no earlier than 0; one in the past is a full
        -- bucket.
        local tat, tat_ns = struct.unpack('>I6I4', raw)
        local owed = (mark - clock) * 1000000 + mark_ns
        if owed > cost * interval then owed = cost * interval end
        if owed > 0 then
          local moved = (tat - clock) * 1000000 + tat_ns - owed
          local whole = math.floor(moved / 1000000)
          if clock + whole < 0 then
            changed = struct.pack('>I6I4', 0, 0)
          else
            changed = struct.pack('>I6I4', clock + whole, moved - whole * 1000000)
          end
        end
      end
      if changed then redis.call('SET', key, changed, 'KEEPTTL') end
    end
  end
end
return 0
