--[[
  Gives back a throttle slot taken for a poll that found no job, if nobody took a slot since.

  KEYS[1]  the queue's throttle key (see throttle-take-1)
  ARGV[1]  token returned by the take

  Result   1 if the slot was given back, 0 if the token no longer matches (a later take, a reset, or
           expiry) and nothing changed.
  The next slot goes back to what it was before the take (prev), which is exact: nothing else changed
  the key since, or the token would differ. The version stays, so a stale take cannot revive an old slot.
]]
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'next', redis.call('HGET', KEYS[1], 'prev') or '0')
  redis.call('HDEL', KEYS[1], 'token', 'held', 'prev')
  return 1
end
return 0
