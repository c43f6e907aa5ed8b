-- requires: base tokens
-- addrkeys.lua: politeness per server address (seed --politeness ip): its
-- keys, the answers workers store, and an address's tokens given back,
-- what the pop (addrs.lua), the exchange's refunds (exchange_back.lua) and
-- the answers' store (addrstore.lua) share. Hosts that resolve to one
-- address share one more token bucket, the address's, of the crawl's rate
-- and burst: a pop takes a token of each, for each URL, in the same
-- atomic call.
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

-- ip_refund gives the tokens of URLs that made no request back to their
-- addresses' buckets (address -> their slots, µs), kept under the shard's
-- queues prefix, by the hosts' rule (ex_refund): only an address's last
-- token, latest first, while its interval (aT ms) reaches the tat. On
-- the grid the slot given back is the shard's own, and the next pop takes
-- it again.
local function ip_refund(queues, grants, aT)
  local k = ip_keys(queues)
  local addrs = {}
  for a in pairs(grants) do addrs[#addrs + 1] = a end
  local v = redis.call('HMGET', k.addr, unpack(addrs))
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
  if #out > 0 then redis.call('HSET', k.addr, unpack(out)) end
end
