--[[
  Takes a failed message out of its stream and keeps it for its next attempt.
  KEYS[1] stream, KEYS[2] retry set (sorted by due time)
  ARGV[1] group, ARGV[2] entry id, ARGV[3] due time (epoch ms), ARGV[4] the message as JSON (the retry set member)
  Returns 1 when the entry was still pending in the group (this core still owned it), 0 otherwise.
]]
local acked = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if acked == 0 then
  return 0
end
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
