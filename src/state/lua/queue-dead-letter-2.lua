--[[
  Takes a message out of its stream into the dead letters.
  KEYS[1] stream, KEYS[2] dead-letter stream
  ARGV[1] group, ARGV[2] entry id (may be empty: a message that never was in the stream), ARGV[3] most dead letters kept,
  ARGV[4..] the dead letter's fields and values
  Returns 1 when the message was moved, 0 when another core had already settled it.
]]
if ARGV[2] ~= '' then
  local acked = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  if acked == 0 then
    return 0
  end
  redis.call('XDEL', KEYS[1], ARGV[2])
end
local fields = {}
for i = 4, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(fields))
return 1
