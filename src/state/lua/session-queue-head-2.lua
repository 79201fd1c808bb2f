--[[
  Keeps a waiting ticket alive, drops the tickets past their time, and says
  whether the ticket is at the head of its session's queue.
  KEYS[1] queue (sorted set), KEYS[2] tickets (hash)
  ARGV[1] ticket, ARGV[2] ttl (ms), ARGV[3] now (ms)
  Returns 1 at the head, 0 behind others, -1 when the ticket is no longer queued.
]]
local ttl = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
for _, ticket in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local expiry = tonumber(redis.call('HGET', KEYS[2], ticket))
  if expiry == nil or expiry <= now then
    redis.call('ZREM', KEYS[1], ticket)
    redis.call('HDEL', KEYS[2], ticket)
  end
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return -1
end
redis.call('HSET', KEYS[2], ARGV[1], now + ttl)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
redis.call('PEXPIRE', KEYS[2], ttl * 2)
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if head[1] == ARGV[1] then
  return 1
end
return 0
