--[[
  Slow-start ramp of a queue's claim rate (flow-control gate 7). Over the ramp window W the claims
  allowed since the ramp started grow as rate * t^2 / (2W) — the integral of a rate rising linearly
  from zero to full — plus one, so the first claim is always possible. Counted fleet-wide.

  KEYS[1]  the ramp's counter key (one per queue and ramp start): claims admitted since the start
  ARGV[1]  ramp start (integer ms since the epoch, from Postgres)
  ARGV[2]  window W (integer ms >= 1)
  ARGV[3]  full rate, claims per minute (> 0)
  ARGV[4]  want (integer >= 1); 0 peeks (explain): decides, takes and writes nothing

  Result   {admitted, retryAfterMs, nowMs}: admitted = want once the window is over; retryAfterMs, when
           nothing was admitted, is the exact wait until one more claim is allowed (>= 1; 0 for a
           peek while claims are allowed); a fourth value, the claims allowed now beyond this take's (-1
           once the window is over: no limit).
  Time comes from Redis TIME only. The key expires after the window.
]]
local t = redis.call('TIME')
local nowMs = math.floor((tonumber(t[1]) * 1000000 + tonumber(t[2])) / 1000)
local start = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local perMs = tonumber(ARGV[3]) / 60000
local want = tonumber(ARGV[4])
local elapsed = math.max(0, nowMs - start)
if elapsed >= window then
  return {want, 0, nowMs, -1}
end

local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local allowed = math.floor(perMs * elapsed * elapsed / (2 * window)) + 1
local left = math.max(0, allowed - count)
local admitted = math.min(want, left)
if admitted > 0 then
  redis.call('INCRBY', KEYS[1], admitted)
  redis.call('PEXPIRE', KEYS[1], window - elapsed + 1000)
  return {admitted, 0, nowMs, left - admitted}
end
if left > 0 then return {0, 0, nowMs, left} end
-- One more claim is allowed once perMs * e^2 / (2W) >= count.
local due = math.sqrt(2 * window * count / perMs)
return {0, math.max(1, math.ceil(due - elapsed)), nowMs, 0}
