--[[
  Creates a workflow run record unless one of that id exists.
  KEYS[1] run key (a hash: version, json), KEYS[2] the sorted set of active runs
  ARGV[1] run id, ARGV[2] json, ARGV[3] ttl (ms), ARGV[4] active (1|0), ARGV[5] now (ms)
  Returns 1 when created, 0 when the run exists.
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'version', 1, 'json', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[2], 'NX', ARGV[5], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1
