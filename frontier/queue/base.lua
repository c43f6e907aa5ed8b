-- requires: gone
-- base.lua: what nearly every frontier script uses: numbers as commands'
-- arguments, the server's clock, the lines of an entry ("id\nhost\nitem-
-- json"), and the guards a script asks before its first write (the crawl
-- is the caller's; its counters are sound; its user may run the commands).

-- FR_BLOCKED is a blocked host's rule in hostrules (crawler host --block),
-- and FR_BLOCKED_WHY the error of the records its queued URLs end with. A
-- host blocked by the crawl itself (its login failed: package session)
-- has its reason after the rule and a newline.
local FR_BLOCKED, FR_BLOCKED_WHY = 'block', 'not fetched: its host was blocked by hand (crawler host --block)'

-- fr_blocked is the error of a blocked host's records, for its hostrules
-- value v; nil when v does not block it.
local function fr_blocked(v)
  if v == FR_BLOCKED then return FR_BLOCKED_WHY end
  if type(v) == 'string' and string.sub(v, 1, 6) == FR_BLOCKED .. '\n' then return 'not fetched: ' .. string.sub(v, 7) end
  return nil
end

-- fr_int is the whole number n as a command's argument. A Lua number handed
-- to redis.call is written out with %.17g, a floating-point conversion
-- that costs Redis more than many commands do; %d costs less, and a time a
-- call writes again (a due time, a lease's expiry) is written once. Only
-- numbers of 2^26 and over are kept (times in ms are): a table keyed by a
-- whole number below that is, in gopher-lua (miniredis), an array grown up
-- to it, a million slots for a cap of a million, at every call.
local fr_format, fr_ints = string.format, {}

local function fr_int(n)
  if n < 67108864 then return fr_format('%d', n) end
  local s = fr_ints[n]
  if not s then
    s = fr_format('%d', n)
    fr_ints[n] = s
  end
  return s
end

-- fr_tat is a host's tat (ms, server clock, with a fraction: at 100 000
-- requests a second an interval is 10 µs) as a score, kept to the µs.
local function fr_tat(t)
  return fr_format('%.3f', math.ceil(t * 1000) / 1000) -- up: no slot comes early
end

local function fr_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function fr_split(entry)
  local i = string.find(entry, '\n', 1, true)
  return string.sub(entry, 1, i - 1), string.sub(entry, i + 1)
end

-- fr_head is an entry's first line ("id" of "id\nhost\nitem-json").
local function fr_head(entry)
  return string.sub(entry, 1, string.find(entry, '\n', 1, true) - 1)
end

-- fr_second is an entry's second line ("host" of "id\nhost\nitem-json"),
-- cut out alone: splitting would copy the item's JSON too.
local function fr_second(entry)
  local i = string.find(entry, '\n', 1, true)
  return string.sub(entry, i + 1, string.find(entry, '\n', i + 1, true) - 1)
end

-- fr_ours: the crawl exists and is the instance the caller read (its id,
-- "" for a crawl seeded before ids existed). The first shard's config is
-- the settings hash (field 'instance'); another shard's is a string that
-- holds the id ("1" before ids). A crawl made anew under the same name
-- since (a reset and a new seed, another Redis) is not the caller's: its
-- scripts refuse, as a gone crawl's do, and write nothing.
local function fr_ours(config, instance)
  local t = redis.call('TYPE', config)
  if type(t) == 'table' then t = t.ok end
  local have
  if t == 'hash' then
    have = redis.call('HGET', config, 'instance') or ''
  elseif t == 'string' then
    have = redis.call('GET', config)
    if have == '1' then have = '' end
  else
    return false
  end
  return have == (instance or '')
end

-- fr_unsound_stats is why the numbers of stats the crawl's end and budget
-- rest on (queued, pages, allow) cannot be read (nil: they can): a field
-- that is not a whole number (set by hand, or by a bug) is repaired by
-- hand, not guessed. A script asks before its first write: Redis keeps
-- the writes of a script that fails half-way.
local function fr_unsound_stats(stats)
  local fields = {'queued', 'pages', 'allow'}
  local v = redis.call('HMGET', stats, unpack(fields))
  for i, f in ipairs(fields) do
    if v[i] and not string.find(v[i], '^%-?%d+$') then
      return 'CORRUPT ' .. stats .. ' field ' .. f .. ' holds ' .. string.format('%q', string.sub(v[i], 1, 64)) .. ', not a whole number'
    end
  end
end

-- fr_denied names the first of cmds (each {command, key, args…}) the
-- user may not run, as a NOPERM refusal (nil: all allowed, or Redis
-- cannot say: before 7.0, and miniredis). A script asks before its first
-- write: Redis keeps the writes of a script that fails half-way.
local function fr_denied(cmds)
  if not redis.acl_check_cmd then return nil end
  for _, c in ipairs(cmds) do
    if not redis.acl_check_cmd(unpack(c)) then
      return 'NOPERM this user may not run ' .. c[1] .. ' on ' .. c[2] .. ", which the crawl needs (README: the crawler's ACL)"
    end
  end
end

-- FR_SLOT_ROUNDING is how far (ms) a token's slot as it comes back may be
-- from the one taken: slots travel as whole µs (tb_refund's eps).
local FR_SLOT_ROUNDING = 0.002
