--[[
  The slot's claim found a job: the slot is spent, and other takes stop waiting on its reservation.

  KEYS[1]  the queue's throttle key (see throttle-take-1)
  ARGV[1]  token returned by the take

  Result   1 if the reservation was closed, 0 if the token no longer matches (nothing changed).
]]
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'held')
  return 1
end
return 0
