--[[
  Replaces a workflow run record when its version is the one the caller read.
  KEYS[1] run key (a hash: version, json), KEYS[2] the sorted set of active runs
  ARGV[1] run id, ARGV[2] expected version, ARGV[3] json, ARGV[4] ttl (ms), ARGV[5] active (1|0), ARGV[6] now (ms)
  Returns 1 when replaced, 0 when the run is gone or its version differs.
]]
local version = redis.call('HGET', KEYS[1], 'version')
if not version or version ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'version', tonumber(version) + 1, 'json', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[2], 'NX', ARGV[6], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1
