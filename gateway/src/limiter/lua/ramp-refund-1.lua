--[[
  Gives back ramp claims that found no job.

  KEYS[1]  the ramp's counter key (see ramp-take-1)
  ARGV[1]  n (integer >= 0)

  Result   the counter after the refund (never below 0; the key is deleted at 0).
]]
local count = tonumber(redis.call('GET', KEYS[1]) or '0') - tonumber(ARGV[1])
if count <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], count, 'KEEPTTL')
return count
