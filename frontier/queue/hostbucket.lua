-- requires: hostrate
-- hostbucket.lua: a host's tokens taken, by politeness's arithmetic
-- (tokens.lua: tb_take, tb_window) and the host's rate (hostrate.lua), for
-- every script that takes one (the handout's pop and its late URLs,
-- token.lua): how many a host has by the clock's horizon, and each token
-- handed out with its window (hb_grants).

-- hb_grants is an empty list of the tokens a call hands out, in order:
-- per token its slot, and when its window opens and closes (from, until),
-- µs from the clock's now (until -1: no limit, no end); any, whether one
-- was a token (not a URL of a host without a limit).
local function hb_grants() return {slots = {}, froms = {}, untils = {}, any = false} end

-- hb_grant appends to grants G a token of slot s (ms, the clock's) whose
-- window is [from, to); with no s, a URL of a host without a limit.
local function hb_grant(G, tnow, s, from, to)
  local n = #G.slots + 1
  if not s then
    G.slots[n], G.froms[n], G.untils[n] = 0, 0, -1
    return
  end
  G.slots[n] = math.floor((s - tnow) * 1000 + 0.5)
  G.froms[n] = math.ceil(math.max(0, from - tnow) * 1000)
  G.untils[n] = math.floor((to - tnow) * 1000)
  G.any = true
end

-- hb_grant_slots appends to grants G the first n of slots (ms, the
-- clock's), each good from early ms before it until late ms after it:
-- the tokens of a host and its address together (addrs.lua's ip_slots).
local function hb_grant_slots(G, tnow, slots, n, early, late)
  for i = 1, n do hb_grant(G, tnow, slots[i], slots[i] - early, slots[i] + late) end
end

-- hb_granted: host's bucket b gave a grant; a grant halves its count of
-- pauses (pause.lua).
local function hb_granted(H, host, b)
  if b.pauses > 0 then
    redis.call('HSET', H.K.buckets .. host, 'pauses', fr_int(math.floor(b.pauses / 2)))
  end
end

-- hb_tokens is how many URLs host may have (at most q), given the tat
-- its score holds: that many, its bucket, its rate and burst (rate 0: no
-- limit), and its first token's slot; or 0 and the host's tat, raised
-- when a pause holds it past its score. The slots come an interval apart
-- from the tat (or now, when the bucket is full); the host has as many
-- tokens as have windows that open by the horizon (tb_window).
local function hb_tokens(H, host, q, tat)
  local b = HB_NONE
  if H.marks[host] then
    b = hb_bucket(H, host)
    if b.delay == 0 and b.adapt == 0 and H.nowus >= b.paused_until and (b.pauses == 0 or H.rate == 0) then
      redis.call('HDEL', H.K.slowed, host) -- nothing left to read (without a rate no grant halves pauses)
    end
  end
  local r, size = hb_rate(H, b, host)
  if H.nowus < b.paused_until then
    if r == 0 then return 0, math.max(tat, math.ceil(b.paused_until / 1000), H.horizon + 1) end
    return 0, math.max(tat, math.ceil(hb_paused_tat(b, r, size)))
  end
  if r == 0 then return q, b, 0, 1, 0 end -- no limit: nothing to take
  local first, early = math.max(tat, H.tnow), tb_window(r, size, H.least)
  local n = math.floor((H.horizon + early - first) * r / 1000) + 1
  if n < 1 then return 0, tat end
  return math.min(q, n), b, r, size, first
end

-- hb_take gives the n URLs popped from a host of rate r and burst
-- size, whose first token's slot is first, a token each, appended to
-- grants G: its slot, an interval after the last, and its window around
-- it (tb_window). It returns the host's tat after them.
local function hb_take(H, G, n, r, size, first)
  local interval, early, width = 1000 / r, tb_window(r, size, H.least)
  for i = 0, n - 1 do
    local slot = first + i * interval
    hb_grant(G, H.tnow, slot, slot - early, slot - early + width)
  end
  return (tb_take(first, H.tnow, interval, size, n))
end
