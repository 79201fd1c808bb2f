--[[
  Settles messages that succeeded: acknowledged in the group and taken out of the stream, in one step.
  One script instead of MULTI/XACK/XDEL/EXEC: one command to send and one reply to read for a whole batch.
  KEYS[1] stream
  ARGV[1] group, ARGV[2..] entry ids
  Returns how many were still pending in the group.
]]
local ids = {}
for i = 2, #ARGV do
  ids[#ids + 1] = ARGV[i]
end
local acked = redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
redis.call('XDEL', KEYS[1], unpack(ids))
return acked
