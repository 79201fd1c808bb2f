--[[
  Creates a session hash unless the id is taken.
  KEYS[1] session key
  ARGV[1] id, ARGV[2] appId, ARGV[3] now (ms), ARGV[4] ttl (ms), ARGV[5] data (JSON)
  Returns 1 when created, 0 when the id already exists.
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local expiresAt = tonumber(ARGV[3]) + tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'appId', ARGV[2], 'createdAt', ARGV[3], 'lastSeenAt', ARGV[3],
  'expiresAt', tostring(expiresAt), 'turns', '0', 'data', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
