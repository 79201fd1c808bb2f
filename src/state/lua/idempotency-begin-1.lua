--[[
  Claims an idempotency key, or reports what holds it.
  KEYS[1] idempotency key (a hash: state, fingerprint, response)
  ARGV[1] fingerprint ('' for none), ARGV[2] in-flight ttl (ms)
  Returns {'new'} | {'in-flight'} | {'completed', response} | {'key-reused'}.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'state', 'in-flight', 'fingerprint', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'new'}
end
local record = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'response')
local fingerprint = record[2] or ''
if fingerprint ~= '' and ARGV[1] ~= '' and fingerprint ~= ARGV[1] then
  return {'key-reused'}
end
if record[1] == 'completed' then
  return {'completed', record[3]}
end
return {'in-flight'}
