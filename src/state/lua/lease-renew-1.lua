--[[
  Extends a lease only for its current owner.
  KEYS[1] lease key
  ARGV[1] owner, ARGV[2] ttl (ms)
  Returns 1 when renewed, 0 when the lease expired or belongs to another owner.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
