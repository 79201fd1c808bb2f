--[[
  One holder asks a flow gate for a slot (src/state/flow-store.ts; the same
  rules as memory-flow-store.ts, keep the two in step). Expired slots and lapsed
  waiters are dropped first, so a dead core's slots and places free up. The
  holder keeps a slot it has; otherwise it joins the queue (or keeps its place,
  its wait refreshed) and takes a slot when one of the first `free` places is
  its own. Time comes from Redis, one clock for every core.
  KEYS[1] slots       (zset: holder -> slot expiry ms)
  KEYS[2] waiting     (zset: '<seq>:<holder>' -> -priority)
  KEYS[3] wait expiry (zset: '<seq>:<holder>' -> wait expiry ms)
  KEYS[4] holders     (hash: holder -> waiting member; '#seq' -> arrival counter)
  ARGV[1] holder  ARGV[2] limit  ARGV[3] holdMs  ARGV[4] priority  ARGV[5] waitTtlMs
  Returns {granted (0|1), position, retryAfterMs}.
]]
local holder = ARGV[1]
local limit = tonumber(ARGV[2])
local holdMs = tonumber(ARGV[3])
local priority = tonumber(ARGV[4])
local waitTtl = tonumber(ARGV[5])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, member in ipairs(lapsed) do
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
  redis.call('HDEL', KEYS[4], string.sub(member, 18))
end

-- Every key of the gate lives as long as its longest slot or wait, and no longer.
local function keepAlive()
  local last = now
  local slot = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if slot[2] then last = math.max(last, tonumber(slot[2])) end
  local wait = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  if wait[2] then last = math.max(last, tonumber(wait[2])) end
  for i = 1, 4 do
    redis.call('PEXPIREAT', KEYS[i], string.format('%.0f', last + 1000))
  end
end

if redis.call('ZSCORE', KEYS[1], holder) then
  return {1, 0, 0}
end
local member = redis.call('HGET', KEYS[4], holder)
if not member then
  local seq = redis.call('HINCRBY', KEYS[4], '#seq', 1)
  member = string.format('%016d', seq) .. ':' .. holder
  redis.call('HSET', KEYS[4], holder, member)
  redis.call('ZADD', KEYS[2], -priority, member)
end
redis.call('ZADD', KEYS[3], now + waitTtl, member)

local free = limit - redis.call('ZCARD', KEYS[1])
local rank = redis.call('ZRANK', KEYS[2], member)
if rank < free then
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
  redis.call('HDEL', KEYS[4], holder)
  redis.call('ZADD', KEYS[1], now + holdMs, holder)
  keepAlive()
  return {1, 0, 0}
end
local retry = 0
if free <= 0 then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if first[2] then retry = math.max(0, tonumber(first[2]) - now) end
end
keepAlive()
return {0, rank + 1, retry}
