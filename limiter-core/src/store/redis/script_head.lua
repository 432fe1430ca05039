-- The check sent as a script (see scripts.rs): Redis runs it whole on every call.
-- Redis 3.2 and 4 replicated scripts verbatim unless told otherwise, and then refused
-- writes after TIME; from Redis 5 on this is the default and the call a no-op.
if redis.replicate_commands then redis.replicate_commands() end
-- The states (1 to 6) and whether penalties are among the call's policies (see check.lua's
-- head): each policy is 65 bytes from the header's 13th, its state first and its penalty's
-- block (ms, 8 bytes) 29 bytes on. A cluster's group counts after the policies may read as
-- one more: that only makes more functions.
local make = {}
do
  local header, byte = ARGV[1], string.byte
  for base = 13, #header - 64, 65 do
    make[byte(header, base)] = true
    local a, b, c, d, e, f, g, h = byte(header, base + 29, base + 36)
    if a + b + c + d + e + f + g + h > 0 then make.penalties = true end
  end
end
