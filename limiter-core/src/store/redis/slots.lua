-- Concurrency slots: KEYS[1] is a sorted set of leases, each scored by the instant (ms,
-- this server's clock) it expires at. ARGV: `a` to take a lease or `r` to renew one, the
-- lease's name, the most leases at once, and a lease's length in ms. Expired leases go
-- first: an instance that died without giving its slots back holds none for longer than a
-- lease. Answers the leases held once it is (taken, or renewed), 0 when none is free. A
-- renewal of a lease Redis no longer has (it expired while Redis was away, or Redis lost its
-- data: a restart without persistence, a flush) takes it again where a slot is free — the
-- request still runs — and answers 0 where none is: its slot is someone else's by now.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, op, lease = KEYS[1], ARGV[1], ARGV[2]
local most, length = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if op ~= 'r' or not redis.call('ZSCORE', key, lease) then
  if redis.call('ZCARD', key) >= most then return 0 end
end
redis.call('ZADD', key, now + length, lease)
-- The set lives as long as its longest lease (instances may give leases of other lengths).
if redis.call('PTTL', key) < length then redis.call('PEXPIRE', key, length) end
return redis.call('ZCARD', key)
