--[[
  Moves the messages whose retry is due back into their stream, as new entries.
  KEYS[1] retry set, KEYS[2] stream
  ARGV[1] now (epoch ms), ARGV[2] most messages moved
  Each member is the JSON object {payload, invocationId, attempt, publishedAt, meta?, nonce}.
  Returns the number of messages moved.
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  local message = cjson.decode(member)
  local fields = { 'payload', message.payload, 'invocationId', message.invocationId, 'attempt', tostring(message.attempt), 'publishedAt', tostring(message.publishedAt) }
  if message.meta then
    table.insert(fields, 'meta')
    table.insert(fields, message.meta)
  end
  redis.call('XADD', KEYS[2], '*', unpack(fields))
  redis.call('ZREM', KEYS[1], member)
end
return #due
