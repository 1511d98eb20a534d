--[[
  Gives back n admitted GCRA claims that were not used.

  KEYS[1]  the rate key (see rate-take-1)
  ARGV[1]  T, emission interval (integer µs >= 1)
  ARGV[2]  n (integer >= 1): claims to give back

  TAT becomes TAT - n*T; if that is <= now the key is deleted (full burst, never more).
  Result   1 if a TAT was lowered or deleted, 0 if there was no state (nothing to give back).
]]
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
tat = tat - tonumber(ARGV[2]) * tonumber(ARGV[1])
if tat <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', string.format('%.0f', math.ceil((tat - now) / 1000) + 1))
end
return 1
