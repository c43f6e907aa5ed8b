-- requires: base tokens
-- addrs.lua: politeness per server address (seed --politeness ip), the
-- functions the pop (exchange_pop.lua) and the answers' store
-- (addrstore.lua) share. Hosts that resolve to one address share one more
-- token bucket, the address's, of the crawl's rate and burst: a pop takes
-- a token of each, for each URL, in the same atomic call.
--
-- Keys, built from the shard's queues prefix (as its lanes are), in the
-- shard's slot:
--   queues .. ' dns'        hash host -> "addr expires-ms": the DNS answers
--                           workers stored (Frontier.SetAddresses), kept
--                           as long as their TTLs say
--   queues .. ' addr'       hash addr -> the address's bucket's tat (ms)
--   queues .. ' addr busy'  zset addr -> the tokens it gave (status)
--   queues .. ' addr hosts' hash addr -> "n host host …": how many hosts
--                           resolved to it, the first few of them
--
-- On a Redis Cluster an address's hosts may sit in several shards, each
-- in its own slot, and no script can take a token in two slots. Each
-- shard then keeps a bucket of its own for the address, on a schedule cut
-- out of the address's: the address's slots come an interval apart on a
-- grid of absolute time (slot k at k intervals since 1970, Redis's
-- clock), and shard s of S takes only the slots k with k mod S = s. No
-- two shards can take one slot, so the address's requests keep the
-- bound of one bucket (with the masters' clocks as close as NTP keeps
-- them); a shard's hosts get at most 1/S of the address's rate.

local IP_HOSTS_NAMED = 8 -- hosts of an address named in its 'addr hosts'

-- ip_keys are the address keys of the shard whose queues prefix is q.
local function ip_keys(q)
  return {dns = q .. ' dns', addr = q .. ' addr', busy = q .. ' addr busy', hosts = q .. ' addr hosts'}
end

-- ip_literal is the address of a host that is one (an IPv4 address, or an
-- IPv6 one in brackets), without its port; nil for a name.
local function ip_literal(host)
  local v4 = string.match(host, '^(%d+%.%d+%.%d+%.%d+):?%d*$')
  if v4 then return v4 end
  return string.match(host, '^%[([%x:%.]+)%]')
end

-- ip_answer reads a 'dns' value: the address, if it has not expired by
-- now (ms).
local function ip_answer(v, now)
  local a, exp = string.match(v or '', '^(%S+) (%d+)$')
  if a and tonumber(exp) > now then return a end
  return nil
end

-- ip_next is the first slot (ms) of the address's schedule at or after t
-- that this shard may take: t itself on one shard, else the grid's.
local function ip_next(X, t)
  if X.ipS <= 1 then return t end
  local k = math.ceil(t / X.aT - 1e-6)
  k = k + (X.ipShard - k % X.ipS) % X.ipS
  return k * X.aT
end

-- ip_addresses learns the addresses of hosts (X.addrOf: host -> address,
-- or false while it has none known: X.resolve lists it, for the worker to
-- resolve) and their buckets' tats (X.atat), one HMGET each a round.
local function ip_addresses(X, hosts)
  local names = {}
  for _, h in ipairs(hosts) do
    if X.addrOf[h] == nil then
      local lit = ip_literal(h)
      if lit then X.addrOf[h] = lit else names[#names + 1] = h end
    end
  end
  if #names > 0 then
    local v = redis.call('HMGET', X.ipk.dns, unpack(names))
    for i, h in ipairs(names) do
      X.addrOf[h] = ip_answer(v[i], X.now) or false
      if not X.addrOf[h] then X.resolve[#X.resolve + 1] = h end
    end
  end
  local addrs = {}
  for _, h in ipairs(hosts) do
    local a = X.addrOf[h]
    if a and X.atat[a] == nil then
      X.atat[a] = 0
      addrs[#addrs + 1] = a
    end
  end
  if #addrs > 0 then
    local v = redis.call('HMGET', X.ipk.addr, unpack(addrs))
    for i, a in ipairs(addrs) do X.atat[a] = tonumber(v[i] or '0') or 0 end
  end
end

-- ip_slots are the slots of up to k tokens of host (rate r, burst size,
-- its bucket's tat tat) that its address's bucket allows too, each the
-- later of the two buckets' next, by the horizon; with the window both
-- buckets' windows hold (the narrower on each side). Also the address's
-- next slot, for a host that gets none. On the grid of several shards a
-- slot just past is still taken while half its late part is left: a pop
-- comes a little after the slot it waited for.
local function ip_slots(X, host, k, r, size, tat)
  local a = X.addrOf[host]
  local hT = 1000 / r
  local hEarly, hWidth = tb_window(r, size, X.least)
  local early, late = math.min(hEarly, X.aEarly), math.min(hWidth - hEarly, X.aWidth - X.aEarly)
  local from = X.tnow
  if X.ipS > 1 then from = X.tnow - late / 2 end
  local th, ta = math.max(tat, from), ip_next(X, math.max(X.atat[a], from))
  local slots = {}
  for _ = 1, k do
    local s = ip_next(X, math.max(th, ta))
    if s - early > X.horizon then break end
    slots[#slots + 1] = s
    th, ta = s + hT, ip_next(X, s + X.aT)
  end
  return slots, early, late, ta
end

-- ip_take gives the n URLs popped from host a token each of the slots
-- ip_slots found, and moves the address's bucket past them; it returns
-- the host's tat after them.
local function ip_take(X, host, slots, n, early, late, r)
  local tnow = X.tnow
  for i = 1, n do
    local s = slots[i]
    X.slots[#X.slots + 1] = math.floor((s - tnow) * 1000 + 0.5)
    X.froms[#X.froms + 1] = math.ceil(math.max(0, s - early - tnow) * 1000)
    X.untils[#X.untils + 1] = math.floor((s + late - tnow) * 1000)
  end
  X.tokened = true
  local a = X.addrOf[host]
  X.addrOut[host] = a
  X.atat[a] = slots[n] + X.aT
  X.adirty[a] = (X.adirty[a] or 0) + n
  return slots[n] + 1000 / r
end

-- ip_write stores the tats of the addresses whose tokens were taken, and
-- counts them.
local function ip_write(X)
  local tats = {}
  for a, n in pairs(X.adirty) do
    tats[#tats + 1] = a
    tats[#tats + 1] = fr_tat(X.atat[a])
    redis.call('ZINCRBY', X.ipk.busy, fr_int(n), a)
  end
  if #tats > 0 then redis.call('HSET', X.ipk.addr, unpack(tats)) end
end

-- ip_refund gives the tokens of URLs that made no request back to their
-- addresses' buckets (address -> their slots, µs), by the hosts' rule
-- (ex_refund): only an address's last token, latest first, while its
-- interval (aT ms) reaches the tat. On the grid the slot given back is
-- the shard's own, and the next pop takes it again.
local function ip_refund(X, grants, aT)
  local P = ip_keys(X.Q.queues)
  local addrs = {}
  for a in pairs(grants) do addrs[#addrs + 1] = a end
  local v = redis.call('HMGET', P.addr, unpack(addrs))
  local out = {}
  for i, a in ipairs(addrs) do
    local tat = tonumber(v[i] or '')
    if tat then
      local was, slots = tat, {}
      for j, g in ipairs(grants[a]) do slots[j] = g / 1000 end
      tat = tb_refund(tat, slots, aT, FR_SLOT_ROUNDING)
      if tat < was then
        out[#out + 1] = a
        out[#out + 1] = fr_tat(tat)
      end
    end
  end
  if #out > 0 then redis.call('HSET', P.addr, unpack(out)) end
end

-- ip_begin sets out the pop's address state: on with an ip politeness
-- and a rate (without one there are no tokens to share).
local function ip_begin(X, A)
  X.ip = A.ip == true and X.rate > 0
  if not X.ip then return end
  X.ipk = ip_keys(X.Q.queues)
  X.ipS, X.ipShard = math.max(A.ip_shards or 1, 1), A.ip_shard or 0
  X.aT = 1000 / X.rate
  X.aEarly, X.aWidth = tb_window(X.rate, X.burst, X.least)
  X.addrOf, X.atat, X.adirty, X.resolve, X.addrOut = {}, {}, {}, {}, {}
end
