--[[
  Offers one sample to an LLM component's reservoir (Algorithm R), atomically.
  A held input's repeat is compared with the held sample (stability); a new
  input is held while there is room, then replaces a held one with odds
  limit/seen, so every input seen has the same chance to be held.
  KEYS[1] the reservoir hash: s:<slot> sample JSON, k:<slot> its input hash,
          i:<input hash> "<slot> <output hash>", and seen, stored, repeats, unstable
  ARGV[1] input hash      ARGV[2] output hash     ARGV[3] sample JSON
  ARGV[4] "1" for a fresh answer (it counts for stability), else "0"
  ARGV[5] limit           ARGV[6] TTL, ms         ARGV[7] the caller's random draw (>= 0)
  Returns {outcome, seen, stored, repeats, unstable}.
]]
local key = KEYS[1]
local limit = tonumber(ARGV[5])
local outcome
local held = redis.call('HGET', key, 'i:' .. ARGV[1])
if held then
  outcome = 'repeat'
  if ARGV[4] == '1' then
    redis.call('HINCRBY', key, 'repeats', 1)
    local space = string.find(held, ' ', 1, true)
    if string.sub(held, space + 1) ~= ARGV[2] then
      redis.call('HINCRBY', key, 'unstable', 1)
      outcome = 'unstable'
    end
  end
else
  local seen = redis.call('HINCRBY', key, 'seen', 1)
  local stored = tonumber(redis.call('HGET', key, 'stored') or '0')
  local slot
  if stored < limit then
    slot = stored
    redis.call('HSET', key, 'stored', stored + 1)
    outcome = 'added'
  else
    local draw = tonumber(ARGV[7]) % seen
    if draw < limit then
      slot = draw
      local previous = redis.call('HGET', key, 'k:' .. slot)
      if previous then redis.call('HDEL', key, 'i:' .. previous) end
      outcome = 'replaced'
    else
      outcome = 'passed'
    end
  end
  if slot then
    redis.call('HSET', key, 's:' .. slot, ARGV[3], 'k:' .. slot, ARGV[1], 'i:' .. ARGV[1], slot .. ' ' .. ARGV[2])
  end
end
redis.call('PEXPIRE', key, ARGV[6])
local stats = redis.call('HMGET', key, 'seen', 'stored', 'repeats', 'unstable')
return {outcome, tonumber(stats[1] or '0'), tonumber(stats[2] or '0'), tonumber(stats[3] or '0'), tonumber(stats[4] or '0')}
