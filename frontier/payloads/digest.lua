-- requires: gone
-- digest.lua: the crawl's payload digest index (frontier/payloads/payloads.go).
-- KEYS[1] the index (hash digest -> "uri\tdate-ns")  KEYS[2] the crawl's
-- config (missing: the crawl is gone, nothing is written)
-- ARGV[1] 'claim' or 'unclaim'  ARGV[2] the index's cap  then triples:
-- a digest, "uri\tdate-ns" of the response that would archive it, and
-- the entry an earlier crawl's committed index holds for it ('' none:
-- seed --dedup-from, looked up before the call, in other slots)
-- claim: returns, a triple, the entry of a response archived with that
--   digest before, by this crawl or (noted now in this crawl's index, so
--   that its commit carries it on) by an earlier one; or false, having
--   noted the triple's response as that response, if the index has room
--   (a digest twice in one call: the first notes it, the second finds it).
-- unclaim: deletes each triple's entry if it is that triple's response's.
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply(FR_GONE) end
local out, room = {}, nil
for i = 3, #ARGV, 3 do
  local d, mine, earlier = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local v = redis.call('HGET', KEYS[1], d)
  if ARGV[1] == 'unclaim' then
    if v == mine then redis.call('HDEL', KEYS[1], d) end
    v = false
  elseif not v then
    if room == nil then room = tonumber(ARGV[2]) - redis.call('HLEN', KEYS[1]) end
    if earlier ~= '' then v = earlier end
    if room > 0 then
      redis.call('HSET', KEYS[1], d, v or mine)
      room = room - 1
    end
  end
  out[#out + 1] = v
end
return out
