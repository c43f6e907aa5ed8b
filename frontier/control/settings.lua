-- requires: base
-- settings.lua: a live change of the crawl's settings
-- ('crawler set') in one shard, one atomic step. In the first shard it
-- writes the changed fields into the settings hash, only if no other
-- change came since the caller read them (the hash's version is still
-- the one it read: two changes at once never undo each other's), and
-- counts the version one up; in every shard it raises the shard's
-- settings key to that version, which its pops read (exchange.lua: an
-- exchange carrying an older version pops nothing), and says so on the
-- shard's wake channel ('settings N'), so that idle workers read the new
-- settings at once. With reopen (a page budget raised or lifted), the
-- shard's done flag goes, and the budget's end-of-crawl scan is begun
-- anew when it next ends: a crawl that had ended on its budget goes on.
-- With a budget lowered over several shards, each shard's share takes
-- back what it leaves unused (allow down to pages fetched + URLs in
-- flight): no shard pops past the new budget from this step on, and the
-- scheduler, once it read the new settings, shares out what room is left
-- (allow.lua gives nothing under older settings).
-- KEYS[1] the shard's config (base.lua's fr_ours)   KEYS[2] settings
-- KEYS[3] done   KEYS[4] stats   KEYS[5] leases
-- ARGV[1] the crawl instance the caller read   ARGV[2] the first shard:
-- the version the caller read; another: '' (ARGV[5] then gives the
-- version)   ARGV[3] '1' to reopen   ARGV[4] the shard's wake channel
-- ARGV[5] the version (a shard other than the first)   ARGV[6..] field,
-- value, … (the first shard; none: nothing changes, the version in force
-- is spread again)
-- Returns {1, version}; {0, version} when the first shard's version is not
-- the one read (nothing written); the GONE error, with nothing written,
-- when the crawl is gone.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
local v
if ARGV[2] ~= '' then
  v = tonumber(redis.call('HGET', KEYS[1], 'version') or '0') or 0
  if v ~= tonumber(ARGV[2]) then return {0, v} end
  if #ARGV > 5 then
    redis.call('HSET', KEYS[1], unpack(ARGV, 6))
    v = redis.call('HINCRBY', KEYS[1], 'version', 1)
  end
else
  v = tonumber(ARGV[5])
end
if (tonumber(redis.call('GET', KEYS[2]) or '0') or 0) < v then redis.call('SET', KEYS[2], v) end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[3])
  redis.call('HDEL', KEYS[4], 'end_scan')
end
if ARGV[3] == '2' then
  local allow = tonumber(redis.call('HGET', KEYS[4], 'allow') or '')
  local used = tonumber(redis.call('HGET', KEYS[4], 'pages') or '0') + redis.call('ZCARD', KEYS[5])
  if allow and allow > used then redis.call('HSET', KEYS[4], 'allow', used) end
end
redis.call('PUBLISH', ARGV[4], 'settings ' .. v)
return {1, v}
