--[[
  Marks a session seen and extends its life.
  KEYS[1] session key
  ARGV[1] now (ms), ARGV[2] ttl (ms)
  Returns the session hash as a flat array, or an empty array when it is gone.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
redis.call('HSET', KEYS[1], 'lastSeenAt', ARGV[1], 'expiresAt', tostring(tonumber(ARGV[1]) + tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('HGETALL', KEYS[1])
