--[[
  Moves dead letters back into their stream, oldest first, as fresh messages
  (attempt 1, published now) that keep their invocation id.
  KEYS[1] dead-letter stream, KEYS[2] stream
  ARGV[1] most messages moved, ARGV[2] now (epoch ms)
  Returns the number of messages moved.
]]
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', tonumber(ARGV[1]))
for _, entry in ipairs(entries) do
  local id, flat = entry[1], entry[2]
  local message = {}
  for i = 1, #flat, 2 do
    message[flat[i]] = flat[i + 1]
  end
  local fields = { 'payload', message.payload or 'null', 'invocationId', message.invocationId or id, 'attempt', '1', 'publishedAt', ARGV[2] }
  if message.meta then
    table.insert(fields, 'meta')
    table.insert(fields, message.meta)
  end
  redis.call('XADD', KEYS[2], '*', unpack(fields))
  redis.call('XDEL', KEYS[1], id)
end
return #entries
