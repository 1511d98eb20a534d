--[[
  GCRA with burst and partial admission.

  KEYS[1]  the rate key, a string: TAT, the theoretical arrival time (µs, Redis TIME)
  ARGV[1]  T, emission interval (integer µs >= 1) = 60e6 / rate_per_minute
  ARGV[2]  burst b (integer >= 1): claims admitted at once from idle
  ARGV[3]  want (integer >= 1): claims asked for; 0 peeks (explain): decides, takes and writes nothing

  With tat = max(TAT, now), k = min(want, floor((now + b*T - tat) / T)) claims are admitted (k >= 0),
  and TAT becomes tat + k*T. Hence over any window w at most b + floor(w / T) claims are admitted.

  Result   {k, retryAfterMs, nowMs}
           retryAfterMs = ceil(max(0, tat' - (b-1)*T - now) / 1000): wait until one more is admitted
           (> 0 when k = 0); nowMs = Redis TIME of the decision, floored to whole ms.
           A fourth value: the claims a take right after this one would get (tokens left, 0..b).
  The key expires when TAT passes (its state then equals "absent": full burst).
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local T = tonumber(ARGV[1])
local b = tonumber(ARGV[2])
local want = tonumber(ARGV[3])

local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end

local k = math.floor((now + b * T - tat) / T)
if k > want then k = want end
if k < 0 then k = 0 end

if k > 0 then
  tat = tat + k * T
  -- %.0f: µs since the epoch has 16 digits, more than Lua's default number-to-string keeps.
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', string.format('%.0f', math.ceil((tat - now) / 1000) + 1))
end

local wait = tat - (b - 1) * T - now
if wait < 0 then wait = 0 end
local left = math.floor((now + b * T - tat) / T)
if left < 0 then left = 0 end
return {k, math.ceil(wait / 1000), math.floor(now / 1000), left}
