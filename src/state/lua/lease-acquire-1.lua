--[[
  Takes a lease when it is free, or renews it when the owner already holds it.
  KEYS[1] lease key
  ARGV[1] owner, ARGV[2] ttl (ms)
  Returns 1 when the owner holds the lease now, 0 when another owner does.
]]
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
