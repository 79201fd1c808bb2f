--[[
  Drops a lease only for its current owner.
  KEYS[1] lease key
  ARGV[1] owner
  Returns 1 when released, 0 when the owner did not hold it.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
