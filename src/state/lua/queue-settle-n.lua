--[[
  Settles messages that succeeded together with the once-only answers of those that ran here, in one step:
  each record is completed as idempotency-complete-1 does, then the ids are acknowledged and taken out of
  the stream as queue-ack-1 does. Either all of it happens or none: no record is left completed for a
  message still pending, and no message leaves with its record still in flight.
  The key count is given at each call (`-n`): one stream, then as many records as the batch kept.
  KEYS[1] stream, KEYS[2..] idempotency records
  ARGV[1] group, ARGV[2] number of entry ids n, ARGV[3..2+n] entry ids,
  then for the record KEYS[1+i]: its response (JSON) and its ttl (ms)
  Returns how many were still pending in the group.
]]
local n = tonumber(ARGV[2])
local at = 3 + n
for i = 2, #KEYS do
  redis.call('HSET', KEYS[i], 'state', 'completed', 'response', ARGV[at])
  redis.call('PEXPIRE', KEYS[i], ARGV[at + 1])
  at = at + 2
end
if n == 0 then
  return 0
end
local ids = {}
for i = 3, 2 + n do
  ids[#ids + 1] = ARGV[i]
end
local acked = redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
redis.call('XDEL', KEYS[1], unpack(ids))
return acked
