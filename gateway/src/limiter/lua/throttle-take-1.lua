--[[
  Takes the queue's throttle slot if it is free (one claim per interval, cluster-wide).

  KEYS[1]  the queue's throttle key, a hash {next = next slot time (µs, Redis TIME), token = slot token,
           interval = the interval (ms) the slot was taken under}
  ARGV[1]  interval (integer ms >= 1): the slot taken frees interval ms after now
  ARGV[2]  token (string): identifies the slot taken, for throttle-refund-1

  Result   {1, 0, nowMs}             admitted: next = now + interval, token stored
           {0, retryAfterMs, nowMs}  refused: retryAfterMs = ceil((next - now) / 1000) >= 1
  nowMs is the Redis TIME of the decision, floored to whole ms.
  Time comes from Redis TIME only. The key expires when its slot frees (its state then equals "absent").
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowMs = math.floor(now / 1000)
local interval = tonumber(ARGV[1])

local slot = redis.call('HMGET', KEYS[1], 'next', 'interval')
local nextSlot = tonumber(slot[1])
-- A slot held under another interval belongs to an old throttle: a change drops it.
if nextSlot and nextSlot > now and tonumber(slot[2]) == interval then
  return {0, math.ceil((nextSlot - now) / 1000), nowMs}
end

-- %.0f: µs since the epoch has 16 digits, more than Lua's default number-to-string keeps.
redis.call('HSET', KEYS[1], 'next', string.format('%.0f', now + interval * 1000), 'token', ARGV[2],
  'interval', interval)
redis.call('PEXPIRE', KEYS[1], interval + 1)
return {1, 0, nowMs}
