--[[
  Claims several idempotency keys in one step, each exactly as idempotency-begin-1 claims one, with its own
  fingerprint and in-flight ttl: the records of the messages one read hands a delivery consumer.
  The key count is given at each call (`-n`).
  KEYS[1..n] idempotency keys
  ARGV[2i-1] fingerprint of KEYS[i] ('' for none), ARGV[2i] its in-flight ttl (ms)
  Returns, per key in order, {'new'} | {'in-flight'} | {'completed', response} | {'key-reused'}.
]]
local replies = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local fingerprint = ARGV[2 * i - 1]
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'state', 'in-flight', 'fingerprint', fingerprint)
    redis.call('PEXPIRE', key, ARGV[2 * i])
    replies[i] = {'new'}
  else
    local record = redis.call('HMGET', key, 'state', 'fingerprint', 'response')
    local held = record[2] or ''
    if held ~= '' and fingerprint ~= '' and held ~= fingerprint then
      replies[i] = {'key-reused'}
    elseif record[1] == 'completed' then
      replies[i] = {'completed', record[3]}
    else
      replies[i] = {'in-flight'}
    end
  end
end
return replies
