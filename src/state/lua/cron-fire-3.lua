--[[
  Fires one slot of a cron job: claims it, records it as the job's last fired
  slot and publishes its message, at once, so a slot fires once however many
  cores run the schedule and a claimed slot always has its message.
  KEYS[1] slot claim, KEYS[2] last fired slot, KEYS[3] the route's stream
  ARGV[1] slot (epoch ms), ARGV[2] claim ttl (ms), ARGV[3] claimant, ARGV[4] payload, ARGV[5] invocation id,
  ARGV[6] meta (the firing's trace context; empty: none)
  A slot at or before the last fired one is refused too: a claim that expired
  cannot make an old slot fire again.
  Returns 1 when this call fired the slot, 0 when it was claimed already.
]]
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
if tonumber(ARGV[1]) <= last then
  return 0
end
if not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('SET', KEYS[2], ARGV[1])
if ARGV[6] ~= nil and ARGV[6] ~= '' then
  redis.call('XADD', KEYS[3], '*', 'payload', ARGV[4], 'invocationId', ARGV[5], 'meta', ARGV[6])
else
  redis.call('XADD', KEYS[3], '*', 'payload', ARGV[4], 'invocationId', ARGV[5])
end
return 1
