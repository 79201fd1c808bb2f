--[[
  Counts one more turn of a live session. HINCRBY alone would resurrect an
  expired session as a hash without TTL, hence the existence check.
  KEYS[1] session key
  Returns the new turn number, or -1 when the session is gone.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
return redis.call('HINCRBY', KEYS[1], 'turns', 1)
