-- requires: base
-- samples.lua: what a crawl learns of its hosts'
-- need of a browser (seed --render auto), in the first shard. A plain
-- worker offers the pages it fetched of a host as samples; a render
-- worker claims one, renders it, compares the DOM with the plain HTML,
-- and tells what it found; the first sample that found what the plain
-- fetch missed decides 'render', enough samples that found nothing
-- 'plain'. Every page fetched plainly before the verdict is offered (up
-- to a reserve a host), and every one of a host found to need a browser
-- (fetched by a plain worker that had popped it before the host moved):
-- each such page's links are only found by its rendering.
-- learn (hash): host -> "offered told verdict", verdict '?' (learning),
-- 'render' or 'plain': some 40 bytes a host.
-- samples (zset): sample JSON -> when it may be claimed (ms).
-- KEYS[1] the crawl's config (fr_ours)   KEYS[2] learn   KEYS[3] samples
-- ARGV[1] the crawl instance the caller read   ARGV[2] the step:
--   'offer'  ARGV[3] host, ARGV[4] the sample, ARGV[5] the most samples a
--            host while it is learnt, ARGV[6] the most samples waiting:
--            queued unless the host needs no browser, has had its reserve
--            of samples while learning, or too many wait.
--            Returns {1 queued or 0, the host's verdict}.
--   'claim'  ARGV[3] the lease, ms: the oldest sample due is the caller's
--            until then (a render worker killed leaves it to the next).
--            Returns {the sample, its host's verdict}, or false.
--   'tell'   ARGV[3] host, ARGV[4] the sample, ARGV[5] 1 when rendering
--            found what the plain fetch missed, ARGV[6] the most samples
--            a host. Returns the host's verdict ('' while learning).
--   'learn'  ARGV[3] "host prefix" (a path prefix of a host that needs a
--            browser, whose pages a render worker renders and compares
--            itself), ARGV[4] 1 when rendering found something, ARGV[5]
--            the most pages: the same rule as a host's, its verdict
--            returned; nothing to claim or remove.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
local function read(host)
  local o, t, v = string.match(redis.call('HGET', KEYS[2], host) or '', '^(%d+) (%d+) (%S+)$')
  return tonumber(o or '0'), tonumber(t or '0'), v or '?'
end
local function write(host, o, t, v)
  redis.call('HSET', KEYS[2], host, string.format('%d %d %s', o, t, v))
end
local step = ARGV[2]
if step == 'offer' then
  local host = ARGV[3]
  local o, t, v = read(host)
  if v == 'plain' or (v == '?' and o >= tonumber(ARGV[5])) or redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then
    return {0, v}
  end
  if redis.call('ZADD', KEYS[3], 'NX', '0', ARGV[4]) == 1 then write(host, o + 1, t, v) end
  return {1, v}
end
if step == 'claim' then
  local now = fr_now()
  local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', fr_int(now), 'LIMIT', '0', '1')
  if #due == 0 then return false end
  redis.call('ZADD', KEYS[3], 'XX', fr_int(now + tonumber(ARGV[3])), due[1])
  local ok, s = pcall(cjson.decode, due[1])
  local host = ''
  if ok and type(s) == 'table' and type(s.host) == 'string' then host = s.host end
  local _, _, v = read(host)
  return {due[1], v}
end
-- told: one more sample (or page) of key told, found or not, by the
-- rule in the header (most: how many that found nothing decide 'plain');
-- its verdict, '' while learning.
local function told(key, found, most)
  local o, t, v = read(key)
  t = t + 1
  if v == '?' and found then
    v = 'render'
  elseif v == '?' and t >= most then
    v = 'plain'
  end
  write(key, math.max(o, t), t, v)
  if v == '?' then return '' end
  return v
end
if step == 'learn' then return told(ARGV[3], ARGV[4] == '1', tonumber(ARGV[5])) end
-- tell
local host = ARGV[3]
if redis.call('ZREM', KEYS[3], ARGV[4]) == 0 then -- told already (its claim lapsed, and another told it)
  local _, _, v = read(host)
  if v == '?' then return '' end
  return v
end
return told(host, ARGV[5] == '1', tonumber(ARGV[6]))
