--[[
  Extends a holder's slot of a flow gate by holdMs from now (Redis's clock), and
  the slots key's life with it; nothing when the slot expired.
  KEYS[1] slots (zset: holder -> slot expiry ms)
  ARGV[1] holder  ARGV[2] holdMs
  Returns 1 when renewed, 0 when the holder has no live slot.
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= now then
  return 0
end
local until_ = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], until_, ARGV[1])
if redis.call('PTTL', KEYS[1]) < until_ - now + 1000 then
  redis.call('PEXPIRE', KEYS[1], until_ - now + 1000)
end
return 1
