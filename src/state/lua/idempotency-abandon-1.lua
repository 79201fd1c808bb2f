--[[
  Frees a key that is still in flight; a completed record stays.
  KEYS[1] idempotency key
  Returns 1 when freed, 0 otherwise.
]]
if redis.call('HGET', KEYS[1], 'state') ~= 'in-flight' then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
