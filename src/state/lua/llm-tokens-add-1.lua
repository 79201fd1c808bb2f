--[[
  Adds tokens to an app's count of one UTC day. The expiry is set when the
  count is made and never pushed back, so a day's count goes away on its own
  once the day is over.
  KEYS[1] token count key (a string: the count)
  ARGV[1] tokens to add (0 or more)
  ARGV[2] TTL of a new count, milliseconds
  Returns the count after the addition.
]]
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return total
