--[[
  Puts a ticket at the back of a session's queue of waiting requests, or keeps
  one already in it alive; tickets past their time are dropped first.
  KEYS[1] queue (sorted set: ticket by arrival), KEYS[2] tickets (hash: ticket -> expiry ms, '#arrivals' -> counter)
  ARGV[1] ticket, ARGV[2] max tickets, ARGV[3] ttl (ms), ARGV[4] now (ms)
  Returns the ticket's place (0 = head), or -1 when the queue is full.
]]
local ttl = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
for _, ticket in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local expiry = tonumber(redis.call('HGET', KEYS[2], ticket))
  if expiry == nil or expiry <= now then
    redis.call('ZREM', KEYS[1], ticket)
    redis.call('HDEL', KEYS[2], ticket)
  end
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return -1
  end
  local arrival = redis.call('HINCRBY', KEYS[2], '#arrivals', 1)
  redis.call('ZADD', KEYS[1], arrival, ARGV[1])
end
redis.call('HSET', KEYS[2], ARGV[1], now + ttl)
-- A queue nobody waits in any more goes away by itself.
redis.call('PEXPIRE', KEYS[1], ttl * 2)
redis.call('PEXPIRE', KEYS[2], ttl * 2)
return redis.call('ZRANK', KEYS[1], ARGV[1])
