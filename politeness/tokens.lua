-- tokens.lua: a token bucket's arithmetic, as functions other scripts start
-- with: bucket.lua (the Limiter's script) and frontier's exchange.lua,
-- which takes a host's token in the same call that pops the host's URL.
-- Both keep a bucket as one number, GCRA's tat ("theoretical arrival
-- time"): the time at which the bucket is full again. At now it holds
-- burst tokens when tat <= now, else burst - (tat - now) / interval; taking
-- n tokens moves tat to max(tat, now) plus n intervals, and they may be
-- used once the new tat less burst intervals has come (tb_take). That is
-- golang.org/x/time/rate's token bucket counted in time rather than in
-- tokens: the Limiter's oracle test checks its decisions against it. The
-- Limiter keeps its tat in the bucket's hash (field tat, µs); the pop keeps
-- a host's as the host's score in its ready set (ms), so that the ZADD that
-- schedules the host takes its tokens. The clock is the server's (TIME),
-- never a worker's.
-- A bucket's hash may also hold a pause (pause.lua): paused_until (µs)
-- and pauses, the count of pauses not yet halved by granted tokens; and
-- fields its user keeps beside, read with the bucket (tb_read's extra:
-- frontier's are in frontier/doc.go). A missing bucket is a full one.

-- tb_now is the server's time in µs.
local function tb_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- tb_read is the bucket at key, as numbers: tat (nil: full), paused_until
-- and pauses (0 when absent), and the caller's own fields, extra (names,
-- 0 when absent). A field that is not a number (a hand's HSET, a bug)
-- reads as absent, and is named in the bucket's bad (a list, nil when
-- none), for the caller to repair and count: no script fails half-way on
-- it.
local function tb_read(key, extra)
  local fields = {'tat', 'paused_until', 'pauses'}
  for _, f in ipairs(extra or {}) do fields[#fields + 1] = f end
  local s = redis.call('HMGET', key, unpack(fields))
  local b = {paused_until = 0, pauses = 0}
  for i, f in ipairs(fields) do
    local v = s[i] and tonumber(s[i])
    if s[i] and v == nil then
      b.bad = b.bad or {}
      b.bad[#b.bad + 1] = f
    end
    if v or f ~= 'tat' then b[f] = v or 0 end
  end
  return b
end

-- tb_take is the bucket's one step: a bucket whose tat is tat gives n
-- tokens at now, an interval apart from its next slot (tat, or now when
-- the bucket is full), and is full again n intervals after that. It
-- returns the new tat, and how long after now the last of the n tokens
-- may be used (0 or less: at once): the new tat less burst intervals, a
-- full bucket letting burst go at once. Times in the caller's unit (µs for
-- the Limiter, ms for the pop), interval too; the arithmetic is done
-- relative to now, where a float64 keeps fractions of the unit that an
-- absolute time (1.8e15 µs since 1970) would round away.
local function tb_take(tat, now, interval, burst, n)
  local after = math.max(tat - now, 0) + n * interval -- the new tat, from now
  return now + after, after - burst * interval
end

-- tb_refund is a bucket's tat after the tokens taken for slots go back
-- (a request that never went): only the bucket's last tokens can, an
-- interval each, latest first, while a token's interval reaches the tat
-- (within eps: a slot may have travelled rounded). Once a later token was
-- taken the tat is that one's, and moving it back would give the next
-- request the later token's time too. A refund never takes the tat below
-- floor (a pause's end; nil: none). slots is sorted in place. Times in
-- the caller's unit, as tb_take's.
local function tb_refund(tat, slots, interval, eps, floor)
  local was = tat
  table.sort(slots, function(x, y) return x > y end)
  for _, s in ipairs(slots) do
    if tat > s + interval + eps then break end
    tat = tat - interval
  end
  if tat < was and floor then tat = math.max(tat, floor) end
  return tat
end

-- tb_window is a token's window, for a host of rate requests a second and
-- a bucket of burst, when tokens are handed out ahead of their use (a
-- pop): a token's slot is its place in the bucket's schedule (slots come
-- an interval apart, 1000/rate ms), and the token is good from early ms
-- before its slot until width ms after that. Requests that each keep to
-- their token's window hold the bucket's own bound, rounded to the
-- nearest whole request: in any span of W ms, at most ceil((W + width) *
-- rate / 1000) of them. The width is (burst - 1/2) intervals, or least ms
-- where that is longer (a time that machines and their clocks can keep);
-- the token may go late by half an interval, or least ms where that is
-- longer, and early by the rest. politeness.TokenWindow is the same
-- arithmetic in Go.
local function tb_window(rate, burst, least)
  local interval = 1000 / rate
  local width = math.max((burst - 0.5) * interval, least)
  local late = math.max(least, interval / 2)
  return math.max(0, width - late), width
end

-- tb_opens is when the window of a bucket's next token opens, its tat
-- being tat (the token's slot, when tokens are handed out ahead of their
-- use: a pop) and its window tb_window's.
local function tb_opens(tat, rate, burst, least)
  return tat - tb_window(rate, burst, least)
end

-- tb_store writes bucket b's new tat (µs) at now, after tokens were
-- granted. The key lives until the bucket is full again; after that a
-- missing key means exactly the same thing, so idle hosts cost no memory.
-- A bucket that was paused keeps its count of pauses longer (pause_keep
-- ms), halved by each grant: pauses grow on repeats and decay on success.
local function tb_store(key, b, tat, now, pause_keep)
  redis.call('HSET', key, 'tat', string.format('%.17g', tat))
  local ms = math.ceil((tat - now) / 1000) + 1
  if b.pauses > 0 then
    redis.call('HSET', key, 'pauses', string.format('%d', math.floor(b.pauses / 2)))
    ms = math.max(ms, pause_keep)
  end
  redis.call('PEXPIRE', key, string.format('%d', ms))
end
