--[[
  Frees a holder's slot of a flow gate and its place in the queue, whichever it has.
  KEYS[1] slots  KEYS[2] waiting  KEYS[3] wait expiry  KEYS[4] holders
  ARGV[1] holder
]]
redis.call('ZREM', KEYS[1], ARGV[1])
local member = redis.call('HGET', KEYS[4], ARGV[1])
if member then
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
  redis.call('HDEL', KEYS[4], ARGV[1])
end
return 0
