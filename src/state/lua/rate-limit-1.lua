--[[
  One hit against an app's rate limit: GCRA, a token bucket kept as one number
  (the theoretical arrival time, integer microseconds). The same arithmetic as
  src/state/rate-limit-gcra.ts; keep the two in step. Time comes from Redis so
  that every core replica shares one clock.
  KEYS[1] rate key (a string: the TAT in epoch microseconds)
  ARGV[1] limit per second (1 to 1000000)
  Returns {allowed (0|1), retryAfterMs}.
]]
local PERIOD = 1000000
local limit = tonumber(ARGV[1])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

local interval = math.floor(PERIOD / limit)
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then
  tat = now
end
-- L intervals, not the whole period: with the interval rounded down, the period would fit more than L.
local burst = limit * interval
local ahead = tat + interval - now
if ahead <= burst then
  -- %.0f: an exact integer string (tostring would round to 14 significant digits).
  redis.call('SET', KEYS[1], string.format('%.0f', tat + interval), 'PX', math.max(1, math.ceil(ahead / 1000)))
  return {1, 0}
end
return {0, math.max(1, math.ceil((ahead - burst) / 1000))}
