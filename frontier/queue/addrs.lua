-- requires: addrkeys
-- addrs.lua: the pop's side of politeness per server address
-- (addrkeys.lua says how an address's bucket is kept): an address's
-- tokens taken with its hosts' in the pop (exchange_pop.lua) and for a
-- subresource (token.lua).

-- The pop's address state, I (ip_begin): the keys (k), the shards' count
-- (S) and this one's place (shard), the address's interval (T, ms) and
-- window (early, width: tb_window), now (ms, as answers' expiries count),
-- and what the call learns and takes: addrOf (host -> its address, or
-- false while none is known), atat (address -> its bucket's tat, ms),
-- dirty (address -> tokens taken), resolve (hosts to resolve, for the
-- worker), used (host -> the address whose tokens it took: its refund
-- goes back there).

-- ip_begin is the pop's address state, with the call's clock H (hb_clock)
-- and arguments A, or false when the crawl is not polite per address, or
-- has no rate (then there are no tokens to share) and no cap of requests
-- in flight (hostslots.lua: an address has slots too). tokens: there are
-- tokens to share.
local function ip_begin(H, A, queues, now)
  local tokens = H.rate > 0
  if not (A.ip == true and (tokens or (A.host_conc or 0) > 0)) then return false end
  local I = {k = ip_keys(queues), S = math.max(A.ip_shards or 1, 1), shard = A.ip_shard or 0, tokens = tokens,
    now = now, addrOf = {}, atat = {}, dirty = {}, resolve = {}, used = {}}
  if tokens then
    I.T = 1000 / H.rate
    I.early, I.width = tb_window(H.rate, H.burst, H.least)
  end
  return I
end

-- ip_next is the first slot (ms) of the address's schedule at or after t
-- that this shard may take: t itself on one shard, else the grid's.
local function ip_next(I, t)
  if I.S <= 1 then return t end
  local k = math.ceil(t / I.T - 1e-6)
  k = k + (I.shard - k % I.S) % I.S
  return k * I.T
end

-- ip_addresses learns the addresses of hosts (I.addrOf: host -> address,
-- or false while it has none known: I.resolve lists it, for the worker to
-- resolve) and their buckets' tats (I.atat), one HMGET each a round.
local function ip_addresses(I, hosts)
  local names = {}
  for _, h in ipairs(hosts) do
    if I.addrOf[h] == nil then
      local lit = ip_literal(h)
      if lit then I.addrOf[h] = lit else names[#names + 1] = h end
    end
  end
  if #names > 0 then
    local v = redis.call('HMGET', I.k.dns, unpack(names))
    for i, h in ipairs(names) do
      I.addrOf[h] = ip_answer(v[i], I.now) or false
      if not I.addrOf[h] then I.resolve[#I.resolve + 1] = h end
    end
  end
  local addrs = {}
  for _, h in ipairs(hosts) do
    local a = I.addrOf[h]
    if a and I.atat[a] == nil then
      I.atat[a] = 0
      addrs[#addrs + 1] = a
    end
  end
  if #addrs > 0 then
    local v = redis.call('HMGET', I.k.addr, unpack(addrs))
    for i, a in ipairs(addrs) do I.atat[a] = tonumber(v[i] or '0') or 0 end
  end
end

-- ip_slots are the slots of up to k tokens of host (rate r, burst size,
-- its bucket's tat tat) that its address's bucket allows too, each the
-- later of the two buckets' next, by the clock H's horizon; with the
-- window both buckets' windows hold (the narrower on each side). Also the
-- address's next slot, for a host that gets none. On the grid of several
-- shards a slot just past is still taken while half its late part is
-- left: a pop comes a little after the slot it waited for.
local function ip_slots(I, H, host, k, r, size, tat)
  local a = I.addrOf[host]
  local hT = 1000 / r
  local hEarly, hWidth = tb_window(r, size, H.least)
  local early, late = math.min(hEarly, I.early), math.min(hWidth - hEarly, I.width - I.early)
  local from = H.tnow
  if I.S > 1 then from = H.tnow - late / 2 end
  local th, ta = math.max(tat, from), ip_next(I, math.max(I.atat[a], from))
  local slots = {}
  for _ = 1, k do
    local s = ip_next(I, math.max(th, ta))
    if s - early > H.horizon then break end
    slots[#slots + 1] = s
    th, ta = s + hT, ip_next(I, s + I.T)
  end
  return slots, early, late, ta
end

-- ip_take moves the address's bucket of host past the first n of the
-- slots ip_slots found, the tokens of the n URLs popped from it (the
-- caller hands them out: hb_grant_slots); it returns the host's tat after
-- them.
local function ip_take(I, host, slots, n, r)
  local a = I.addrOf[host]
  I.used[host] = a
  I.atat[a] = slots[n] + I.T
  I.dirty[a] = (I.dirty[a] or 0) + n
  return slots[n] + 1000 / r
end

-- ip_write stores the tats of the addresses whose tokens were taken, and
-- counts them.
local function ip_write(I)
  local tats = {}
  for a, n in pairs(I.dirty) do
    tats[#tats + 1] = a
    tats[#tats + 1] = fr_tat(I.atat[a])
    redis.call('ZINCRBY', I.k.busy, fr_int(n), a)
  end
  if #tats > 0 then redis.call('HSET', I.k.addr, unpack(tats)) end
end
