--[[
  Takes out of the sorted set of active runs the ids whose record is gone (expired), checking each record
  and removing its id in one step: an id is never taken out while its record exists on this node, so a
  running run stays where the orphan sweep looks for it (a check read on one node, or a failed read, and a
  removal made on another would drop a live run's id, and no core would resume it).
  The key count is given at each call (`-n`): the set, then one run record per id.
  KEYS[1] the sorted set of active runs, KEYS[1+i] the record of ARGV[i]
  ARGV[i] run id
  Returns, per id in order, 1 when its record exists (kept), 0 when it was taken out.
]]
local live = {}
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    live[i - 1] = 1
  else
    redis.call('ZREM', KEYS[1], ARGV[i - 1])
    live[i - 1] = 0
  end
end
return live
