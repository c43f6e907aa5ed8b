-- index.lua: a host's near-duplicate index (neardup.Index): is a page
-- of MinHash signature ARGV[1] (Hashes values of two bytes) a near
-- duplicate of a page indexed before, and if not, index it.
-- KEYS[1] bands: hash, a band's field (its number, a byte from 'A', and
--   its Rows values' 8 bytes) -> the id of the newest page with it
-- KEYS[2] pages: hash, id -> the page's signature and URL; '#' the last id
-- KEYS[3] order: list of ids, oldest first
-- KEYS[4] (with ARGV[6] '1') a key that must exist (a crawl's config):
--   when it is missing, nothing is read or written, and the reply is an
--   error GONE
-- KEYS[4] or KEYS[5] after it (with ARGV[7] > 0) the pages indexed by
--   every index that shares it (a crawl's shard's hosts): at ARGV[7] a
--   page is looked up but not indexed; an evicted page counts off
-- ARGV[1] signature   ARGV[2] URL   ARGV[3] values that must agree
-- ARGV[4] the most pages kept (the oldest goes)   ARGV[5] bands (the
--   signature's bytes split evenly among them: neardup.Bands)
-- ARGV[6] '1': KEYS[4] is the guard   ARGV[7] the shared cap (0: none)
-- Returns {URL, values agreeing} of the nearest earlier page that shares
-- a band and agrees on enough values, or {'', n}: indexed now (unless
-- the shared cap is reached).
if ARGV[6] == '1' and redis.call('EXISTS', KEYS[4]) == 0 then return redis.error_reply('GONE the index\'s owner is gone') end
local sharedCap, shared = tonumber(ARGV[7]), nil
if sharedCap > 0 then shared = KEYS[ARGV[6] == '1' and 5 or 4] end
local sig, need, most = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local BANDS, SIG_BYTES = tonumber(ARGV[5]), #sig
local ROW_BYTES = SIG_BYTES / BANDS

-- nd_fields are a signature's band fields.
local function nd_fields(s)
  local f = {}
  for b = 0, BANDS - 1 do f[b + 1] = string.char(65 + b) .. string.sub(s, b * ROW_BYTES + 1, (b + 1) * ROW_BYTES) end
  return f
end

-- nd_same is how many of the two signatures' values agree.
local function nd_same(a, b)
  local n = 0
  for j = 1, SIG_BYTES, 2 do
    if string.byte(a, j) == string.byte(b, j) and string.byte(a, j + 1) == string.byte(b, j + 1) then n = n + 1 end
  end
  return n
end

local fields = nd_fields(sig)
local ids, cand, seen = redis.call('HMGET', KEYS[1], unpack(fields)), {}, {}
for _, id in ipairs(ids) do
  if id and not seen[id] then
    seen[id] = true
    cand[#cand + 1] = id
  end
end
local best, bestURL = 0, ''
if #cand > 0 then
  for _, p in ipairs(redis.call('HMGET', KEYS[2], unpack(cand))) do
    if p then -- nil: evicted since; its band fields went with it
      local same = nd_same(sig, p)
      if same > best then best, bestURL = same, string.sub(p, SIG_BYTES + 1) end
    end
  end
  if best >= need then return {bestURL, best} end
end
if shared then
  if tonumber(redis.call('GET', shared) or '0') >= sharedCap then return {'', best} end
  redis.call('INCR', shared)
end
local id = tostring(redis.call('HINCRBY', KEYS[2], '#', 1))
redis.call('HSET', KEYS[2], id, sig .. ARGV[2])
local args = {}
for _, f in ipairs(fields) do
  args[#args + 1] = f
  args[#args + 1] = id
end
redis.call('HSET', KEYS[1], unpack(args))
if redis.call('RPUSH', KEYS[3], id) > most then
  local old = redis.call('LPOP', KEYS[3])
  local p = redis.call('HGET', KEYS[2], old)
  if p then
    for _, f in ipairs(nd_fields(p)) do
      if redis.call('HGET', KEYS[1], f) == old then redis.call('HDEL', KEYS[1], f) end
    end
    redis.call('HDEL', KEYS[2], old)
    if shared then redis.call('DECR', shared) end
  end
end
return {'', best}
