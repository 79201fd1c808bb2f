--[[
  Writes the oracle's record of a component if its version is still the one
  the writer read (compare-and-set), so two cores never both move a stage.
  KEYS[1] the record hash: v (version), json
  ARGV[1] expected version (0: no record yet)   ARGV[2] the new record JSON
  Returns the new version, or false when another writer came first.
]]
local current = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if current ~= tonumber(ARGV[1]) then return false end
redis.call('HSET', KEYS[1], 'v', current + 1, 'json', ARGV[2])
return current + 1
