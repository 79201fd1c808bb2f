--[[
  One hit against a one-second sliding window, estimated from the current and
  previous fixed windows. The same arithmetic as src/state/sliding-window.ts;
  keep the two in step. Time comes from Redis so that every core shares a clock.
  KEYS[1] rate key (a hash: w = window index, c = current count, p = previous count)
  ARGV[1] limit per second
  Returns {allowed (0|1), retryAfterMs}.
]]
local WINDOW = 1000
local limit = tonumber(ARGV[1])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local window = math.floor(now / WINDOW)

local stored = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local current, previous = 0, 0
local storedWindow = tonumber(stored[1])
if storedWindow == window then
  current = tonumber(stored[2]) or 0
  previous = tonumber(stored[3]) or 0
elseif storedWindow == window - 1 then
  previous = tonumber(stored[2]) or 0
end

local elapsed = now - window * WINDOW
local estimate = previous * (WINDOW - elapsed) / WINDOW + current
if estimate + 1 <= limit then
  redis.call('HSET', KEYS[1], 'w', window, 'c', current + 1, 'p', previous)
  redis.call('PEXPIRE', KEYS[1], 2 * WINDOW)
  return {1, 0}
end

local retry
if current + 1 <= limit then
  retry = math.ceil(WINDOW * (1 - (limit - 1 - current) / previous) - elapsed)
else
  retry = WINDOW - elapsed + math.max(0, math.ceil(WINDOW * (1 - (limit - 1) / current)))
end
return {0, math.max(1, retry)}
