--[[
  Takes the queue's throttle slot if it is free (one claim per interval, cluster-wide).

  KEYS[1]  the queue's throttle key, a hash {next = next slot time (µs, Redis TIME), prev = next before
           the last take (for a refund), token = the last take's token, interval = its interval (ms),
           version = the throttle version it was taken under, held = end of its reservation (µs)}
  ARGV[1]  interval (integer ms >= 1): the slot taken frees interval ms after its time
  ARGV[2]  token (string): identifies the slot taken, for throttle-confirm-1 / throttle-refund-1
  ARGV[3]  version (integer >= 0): the throttle's version
  ARGV[4]  early (integer µs >= 0): a take this close before the slot frees gets the slot's own time
  ARGV[5]  hold (integer µs >= 0): the slot stays reserved this long unless confirmed or refunded
  ARGV[6]  peek (optional, 1): decide as a take would, but take nothing (explain reads the gate so)

  Result   {1, waitMs, slotMs}      admitted: the slot's time is slotMs (now, or up to `early` later:
                                    waitMs = ceil of the difference); next = slot + interval
           {0, retryAfterMs, nowMs} refused: retryAfterMs = ceil((next - now) / 1000) >= 1
           {2, retryAfterMs, nowMs} pending: refused, but the last take's reservation is open (its
                                    slot may be given back); ask again soon
           {3, waitMs, slotMs}      peek only: a take now would be admitted; nothing was written
  Once the next slot is due, a take is admitted even while the last one's reservation is open: that
  slot then counts as spent (its refund no longer matches), and nobody was refused for it.
  Time comes from Redis TIME only. The key expires once its slot and reservation are over.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowMs = math.floor(now / 1000)
local interval = tonumber(ARGV[1])
local version = tonumber(ARGV[3])
local early = tonumber(ARGV[4])
local hold = tonumber(ARGV[5])

local slot = redis.call('HMGET', KEYS[1], 'next', 'interval', 'version', 'held')
local nextSlot = tonumber(slot[1])
local held = tonumber(slot[4])
local stored = tonumber(slot[3]) or 0
if stored > version then
  -- This caller has not heard of the newer throttle yet: the slot stands.
  version = stored
elseif stored < version or tonumber(slot[2]) ~= interval then
  -- A slot held under an older version or another interval belongs to an old throttle: a change drops it.
  nextSlot = nil
  held = nil
end

if nextSlot and nextSlot - now > early then
  -- While the last take's claim still looks for a job, its slot may yet be given back: no verdict.
  if held and held > now then return {2, math.min(5, math.ceil((held - now) / 1000)), nowMs} end
  return {0, math.ceil((nextSlot - now) / 1000), nowMs}
end

local start = now
if nextSlot and nextSlot > now then start = nextSlot end
if ARGV[6] == '1' then return {3, math.ceil((start - now) / 1000), math.floor(start / 1000)} end
-- %.0f: µs since the epoch has 16 digits, more than Lua's default number-to-string keeps.
redis.call('HSET', KEYS[1], 'next', string.format('%.0f', start + interval * 1000),
  'prev', string.format('%.0f', nextSlot or 0), 'token', ARGV[2], 'interval', interval,
  'version', string.format('%.0f', version), 'held', string.format('%.0f', now + hold))
redis.call('PEXPIRE', KEYS[1], math.ceil((math.max(start + interval * 1000, now + hold) - now) / 1000) + 1)
return {1, math.ceil((start - now) / 1000), math.floor(start / 1000)}
