--[[
  Gives back a throttle slot taken for a poll that found no job, if nobody took a slot since.

  KEYS[1]  the queue's throttle key (see throttle-take-1)
  ARGV[1]  token returned by the take

  Result   1 if the slot was given back (key deleted), 0 if the token no longer matches (a later take,
           a reset, or expiry) and nothing changed.
  Deleting is exact: a take only succeeds when the previous slot time <= now, so the state before it
  was "admit at once", which is what an absent key means.
]]
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
