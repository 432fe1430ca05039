-- Concurrency slots: KEYS[1] is a sorted set of leases, each scored by the instant (ms,
-- this server's clock) it expires at. ARGV: `a` to acquire or `r` to renew, the lease's
-- name, the most leases at once, and a lease's length in ms. Expired leases go first: an
-- instance that died without giving its slots back holds none for longer than a lease.
-- Answers the leases held once it is (taken, or renewed), 0 when none is free.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, op, lease = KEYS[1], ARGV[1], ARGV[2]
local most, length = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if op == 'r' and redis.call('ZSCORE', key, lease) then
  redis.call('ZADD', key, now + length, lease)
  redis.call('PEXPIRE', key, length)
  return redis.call('ZCARD', key)
end
-- A lease to take, or one that expired before its renewal (Redis was slow): taken again
-- if there is room.
if redis.call('ZCARD', key) >= most then return 0 end
redis.call('ZADD', key, now + length, lease)
-- Every lease is as long: the newest is the last to expire.
redis.call('PEXPIRE', key, length)
return redis.call('ZCARD', key)
