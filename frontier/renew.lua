-- requires: base
-- renew.lua: a worker's heartbeat; extends the leases it still holds.
-- KEYS[1] leases   KEYS[2] workers (zset worker -> alive until, ms)
-- KEYS[3] the crawl's config: while it is missing the crawl is gone (reset)
-- KEYS[4] worker info (hash worker -> "pages leases beat-ms")
-- ARGV[1] worker id   ARGV[2] lease length ms   ARGV[3] "pages leases" of
-- the worker, for whoever watches   ARGV[4] the crawl's instance id as the
-- worker read it (base.lua's fr_ours: another instance is gone)
-- ARGV[5..] leases ("id\nhost\nitem-json")
-- Returns a flag per lease, in order (1: held, and extended; 0: lost, and
-- not revived: its URL was reclaimed for another worker), or the GONE
-- error, with nothing written, when the crawl is gone.
-- A worker is alive until its leases would lapse: one lease length after
-- its last heartbeat.
if not fr_ours(KEYS[3], ARGV[4]) then return redis.error_reply(FR_GONE) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ms = now + tonumber(ARGV[2])
if ARGV[1] ~= '' then -- '': leases only (a shard other than the first)
  redis.call('ZADD', KEYS[2], until_ms, ARGV[1])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[3] .. ' ' .. now)
end
local flags = {}
for from = 5, #ARGV, 1000 do -- in chunks: unpack has a limit
  local members = {unpack(ARGV, from, math.min(from + 999, #ARGV))}
  local held = redis.call('ZMSCORE', KEYS[1], unpack(members))
  local renew = {}
  for i, m in ipairs(members) do
    if held[i] then
      flags[#flags + 1] = 1
      renew[#renew + 1] = until_ms
      renew[#renew + 1] = m
    else
      flags[#flags + 1] = 0
    end
  end
  if #renew > 0 then redis.call('ZADD', KEYS[1], 'XX', unpack(renew)) end
end
return flags
