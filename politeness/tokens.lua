-- tokens.lua: a token bucket's arithmetic, as functions other scripts start
-- with: bucket.lua (the Limiter's script) and frontier's exchange.lua,
-- which takes a host's token in the same call that pops the host's URL
-- (in the one-number form below, with a window for each token: tb_window).
-- A bucket is a hash:
--   tokens, last          the tokens it held at time last (µs, server clock);
--                         frontier's pop keeps these as one number instead,
--                         the host's tat (below), its score in ready
--   paused_until, pauses  a pause (pause.lua: a 429 or 503) and the count of
--                         pauses not yet halved by granted tokens
--   delay                 the host's own least interval between requests,
--                         ms (robots.txt's Crawl-delay; frontier/hostdelay.lua)
--   first                 the pop whose URL went as the host's first request
--                         when its delay was learnt (hostdelay.lua)
--   adapt                 the host's interval by adaptive politeness, ms: a
--                         factor times its last response's time (exchange.lua)
-- A missing bucket is a full one. The arithmetic mirrors
-- golang.org/x/time/rate step for step, in the same float64 operations, so
-- both decide alike on the same clock; that clock is the server's (TIME),
-- never a worker's.

-- tb_now is the server's time in µs.
local function tb_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- tb_read is the bucket at key, as numbers (absent fields: nil, or 0 for
-- the pause and delay fields). A field that is not a number (a hand's
-- HSET, a bug) reads as absent, and is named in the bucket's bad (a list,
-- nil when none), for the caller to repair and count: no script fails
-- half-way on it.
local TB_FIELDS = {'tokens', 'last', 'paused_until', 'pauses', 'delay', 'adapt'}
local function tb_read(key)
  local s = redis.call('HMGET', key, unpack(TB_FIELDS))
  local v, bad = {}, nil
  for i, f in ipairs(TB_FIELDS) do
    if s[i] then
      v[i] = tonumber(s[i])
      if v[i] == nil then
        bad = bad or {}
        bad[#bad + 1] = f
      end
    end
  end
  return {tokens = v[1], last = v[2], paused_until = v[3] or 0, pauses = v[4] or 0, delay = v[5] or 0,
    adapt = v[6] or 0, bad = bad}
end

-- tb_level is what bucket b holds at now: refilled at rate since its last
-- change (elapsed.Seconds() * rate), capped at burst.
local function tb_level(b, now, rate, burst)
  local tokens, last = burst, now
  if b.tokens then
    tokens, last = b.tokens, b.last
  end
  if now < last then last = now end
  local elapsed = now - last
  local sec = math.floor(elapsed / 1000000)
  local seconds = sec + ((elapsed - sec * 1000000) * 1000) / 1e9
  tokens = tokens + seconds * rate
  if tokens > burst then tokens = burst end
  return tokens
end

-- tb_until is how long, in ns, until a bucket that holds tokens has one
-- (0 when it has).
local function tb_until(tokens, rate)
  if tokens >= 1 then return 0 end
  return math.floor(((1 - tokens) / rate) * 1e9)
end

-- The same bucket kept as one number (GCRA, the "virtual scheduling" form
-- of a token bucket): its tat, the time (ms, server clock) at which it is
-- full again. At now it holds burst tokens when tat <= now, else burst -
-- (tat - now) * rate / 1000; taking n moves tat to max(tat, now) plus n
-- intervals. A missing tat is a full bucket: tat = now. Nothing else need
-- be stored, which is why frontier's pop keeps a host's bucket as the
-- host's score in its ready set: the ZADD that schedules the host takes
-- its tokens. A token taken there is handed out ahead of its use, with a
-- window of time for its request (tb_window): its slot is where the tat
-- stood when it was taken.

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

-- tb_store writes bucket b's tokens at now, after tokens were granted.
-- The key lives until the bucket would be full again; after that a missing
-- key means exactly the same thing, so idle hosts cost no memory. A bucket
-- that was paused keeps its count of pauses longer (pause_keep ms), halved
-- by each grant: pauses grow on repeats and decay on success. One with a
-- host's own delay keeps it delay_keep ms at least, and one with an
-- adaptive interval pause_keep ms.
local function tb_store(key, b, tokens, now, rate, burst, pause_keep, delay_keep)
  redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'last', string.format('%.17g', now))
  local ms = math.ceil((burst - tokens) / rate * 1000) + 1
  if b.pauses > 0 then
    redis.call('HSET', key, 'pauses', string.format('%d', math.floor(b.pauses / 2)))
    ms = math.max(ms, pause_keep)
  end
  if b.delay > 0 then ms = math.max(ms, delay_keep) end
  if b.adapt > 0 then ms = math.max(ms, pause_keep) end
  redis.call('PEXPIRE', key, string.format('%d', ms))
end
