-- requires: addrkeys
-- addrstore.lua: store DNS answers for the
-- pops of politeness per address (addrs.lua), each kept as long as its
-- TTL says; an address newly a host's counts the host among its own. Each
-- call also prunes a few fields, from where the last call stopped
-- (HSCAN): answers expired a day ago (an expired answer is asked for
-- again, and is kept a day only so that a host re-resolved to its old
-- address is not counted twice among its hosts) and buckets full again
-- (absent means the same), so that what a long crawl stores stays about
-- the hosts and servers it crawls now.
-- KEYS[1] the shard's config (fr_ours)   KEYS[2] queues (the prefix)
-- ARGV[1] the crawl instance the caller read, then per answer: host,
-- address, TTL (ms)
-- Returns how many hosts have an address new to them, or the GONE error.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
local P = ip_keys(KEYS[2])
local now, new = fr_now(), 0
for i = 2, #ARGV - 2, 3 do
  local host, addr, ttl = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]) or 0
  local old = string.match(redis.call('HGET', P.dns, host) or '', '^(%S+) ')
  redis.call('HSET', P.dns, host, addr .. ' ' .. fr_int(now + math.max(ttl, 1000)))
  if old ~= addr then
    new = new + 1
    local n, names = string.match(redis.call('HGET', P.hosts, addr) or '0', '^(%d+) ?(.*)$')
    n = tonumber(n) or 0
    local list = {}
    for h in string.gmatch(names or '', '%S+') do list[#list + 1] = h end
    if #list < IP_HOSTS_NAMED then list[#list + 1] = host end
    redis.call('HSET', P.hosts, addr, fr_int(n + 1) .. ' ' .. table.concat(list, ' '))
  end
end
local function prune(key, dead)
  local cursorKey = key .. ' cursor'
  local r = redis.call('HSCAN', key, redis.call('GET', cursorKey) or '0', 'COUNT', '64')
  local del = {}
  for j = 1, #r[2], 2 do
    if dead(r[2][j + 1]) then del[#del + 1] = r[2][j] end
  end
  if #del > 0 then redis.call('HDEL', key, unpack(del)) end
  redis.call('SET', cursorKey, r[1])
end
prune(P.dns, function(v)
  local exp = tonumber(string.match(v, ' (%d+)$') or '')
  return not exp or exp < now - 86400000
end)
prune(P.addr, function(v) return (tonumber(v) or 0) < now - 1000 end)
return new
