-- Publishes a stored bundle as the next version of a function, atomically.
-- KEYS[1]: the function's versions hash (fields "seq", "latest", "v:<n>").
-- ARGV[1]: sha256, ARGV[2]: publishedAt (epoch ms).
-- Returns {version, record JSON, created (1|0)}; the newest version is answered
-- again when it already has this bundle.
local latest = redis.call('HGET', KEYS[1], 'latest')
if latest then
  local record = redis.call('HGET', KEYS[1], 'v:' .. latest)
  if record and cjson.decode(record).sha256 == ARGV[1] then
    return {tonumber(latest), record, 0}
  end
end
local version = redis.call('HINCRBY', KEYS[1], 'seq', 1)
local record = cjson.encode({version = version, sha256 = ARGV[1], publishedAt = tonumber(ARGV[2])})
redis.call('HSET', KEYS[1], 'v:' .. version, record, 'latest', version)
return {version, record, 1}
