--[[
  Stores the response of a key; the fingerprint of the claim is kept.
  KEYS[1] idempotency key
  ARGV[1] response (JSON), ARGV[2] ttl (ms)
]]
redis.call('HSET', KEYS[1], 'state', 'completed', 'response', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
