-- bloom.lua: the Bloom filter's test-and-set, as a library function that a
-- script embeds (dedup.Compose puts it in front of the script's body).
--
-- bloom_run(kb, ab) reads its keys from KEYS[kb..] and arguments from ARGV[ab..]:
--   KEYS[kb]      the filter's meta hash (fields layers, count, ...)
--   KEYS[kb+1..]  the bitmap segments this batch touches
--   ARGV[ab]      mode: 'add' (test-and-set) or 'test' (read only)
--   ARGV[ab+1]    the number of layers the client knows of (L)
--   ARGV[ab+2]    B, the number of items in the batch
--   ARGV[ab+3]    S, the number of segment keys after KEYS[kb]
--   ARGV[ab+4]    items the layers 0..L-1 hold together when full
--   ARGV[ab+5]    items the next layer (L) holds, in case this batch fills
--                 L-1, or -1 when the client did not send the next layer's
--                 positions (it expects the batch to fit)
--   ARGV[ab+6..]  k and bits per segment of each layer 0..L ('add', or
--                 0..L-1 with ARGV[ab+5] = -1) or 0..L-1 ('test'), two
--                 values a layer
--   then, item by item and layer by layer, two values: the segment's index
--   (counted from KEYS[kb+1]) and the item's k bit offsets in that segment,
--   packed into one string: each offset in decimal, preceded by one
--   character '0'+length (hash.go computes them).
-- Returns reply, next_key, next_arg, B where reply is
--   {1, count, layers, flag_1 .. flag_B}  flag 1 = was absent (now added) /
--                                          present ('test')
--   {0, count, layers}                    the client's layer count is stale;
--                                          nothing was written, retry.
--   {2, count, layers, need}              layers 0..need-1 must be allocated
--                                          first (alloc.lua); nothing was
--                                          written, retry after allocating.
--   {3, count, layers}                    the batch may fill the last layer
--                                          but the next layer's positions
--                                          were not sent; nothing was
--                                          written, retry with them.
-- Every write happens in this one script call: two workers adding the same
-- URL cannot both see it as new.
--
-- This is the hot path of a crawl (every link not known locally passes
-- here), and Lua's own work is most of its cost. Measured on redis-server
-- 7.0: turning a Lua number into a string (string.format, tostring, or as
-- a command argument) costs ~0.3-1 us, string.sub ~0.05 us. So offsets
-- arrive as strings, cut out of one packed argument a layer (one argument,
-- not k: each argument costs Redis too), and go to one BITFIELD call.
local bloom_byte, bloom_sub = string.byte, string.sub

-- bloom_test: are all k bits of key set? GETBIT one by one, stopping at the
-- first 0: an absent item costs about two calls at a layer's usual fill.
local function bloom_test(key, packed, k)
  local p = 1
  for _ = 1, k do
    local len = bloom_byte(packed, p) - 48
    if redis.call('GETBIT', key, bloom_sub(packed, p + 1, p + len)) == 0 then return false end
    p = p + len + 1
  end
  return true
end

-- bloom_set: set all k bits; were they all set before? One BITFIELD call
-- (its SET returns the old bit); miniredis lacks BITFIELD, so the script
-- falls back to SETBIT when a probe fails.
local bloom_bitfield = nil
local bloom_args = {}
local function bloom_set(key, packed, k)
  if bloom_bitfield == nil then
    bloom_bitfield = pcall(redis.call, 'BITFIELD_RO', key, 'GET', 'u1', '0')
  end
  local all, p = true, 1
  if bloom_bitfield then
    local args = bloom_args
    for i = 0, k - 1 do
      local len = bloom_byte(packed, p) - 48
      args[4 * i + 1] = 'SET'
      args[4 * i + 2] = 'u1'
      args[4 * i + 3] = bloom_sub(packed, p + 1, p + len)
      args[4 * i + 4] = '1'
      p = p + len + 1
    end
    local old = redis.call('BITFIELD', key, unpack(args, 1, 4 * k))
    for i = 1, k do
      if old[i] == 0 then all = false end
    end
  else
    for _ = 1, k do
      local len = bloom_byte(packed, p) - 48
      if redis.call('SETBIT', key, bloom_sub(packed, p + 1, p + len), 1) == 0 then all = false end
      p = p + len + 1
    end
  end
  return all
end

local function bloom_run(kb, ab)
  local meta = KEYS[kb]
  local mode = ARGV[ab]
  local known = tonumber(ARGV[ab + 1])
  local state = redis.call('HMGET', meta, 'layers', 'count', 'allocated')
  local layers = tonumber(state[1] or '0')
  local count = tonumber(state[2] or '0')
  local allocated = tonumber(state[3] or '0')
  local nitems = tonumber(ARGV[ab + 2])
  local next_key = kb + 1 + tonumber(ARGV[ab + 3])
  local spare = tonumber(ARGV[ab + 5])
  local nl = known
  if mode == 'add' and spare >= 0 then nl = known + 1 end
  local ks, stride = {}, 2 * nl
  for l = 1, nl do
    ks[l] = tonumber(ARGV[ab + 4 + 2 * l])
  end
  local first = ab + 6 + 2 * nl
  local next_arg = first + stride * nitems
  if layers ~= known then
    return {0, count, layers}, next_key, next_arg, nitems
  end
  local bound = tonumber(ARGV[ab + 4])
  if mode == 'add' then
    -- Bits are only ever written into segments allocated whole: a bitmap
    -- grown bit by bit ends up with up to twice its size in memory.
    local need = layers
    if count + nitems > bound then
      if nl == known then return {3, count, layers}, next_key, next_arg, nitems end
      need = layers + 1
    end
    if allocated < need then
      return {2, count, layers, need}, next_key, next_arg, nitems
    end
  end

  -- has(p, l, fn): are all of the item's bits in layer l set? (bloom_set
  -- also sets them, and answers whether they all were set before.)
  local function has(p, l, fn)
    local q = p + 2 * (l - 1)
    return fn(KEYS[kb + 1 + tonumber(ARGV[q])], ARGV[q + 1], ks[l])
  end

  local reply = {1, 0, 0}
  local active = layers
  for i = 0, nitems - 1 do
    local p = first + i * stride
    if mode == 'test' then
      local present = false
      for l = 1, active do
        if has(p, l, bloom_test) then present = true break end
      end
      reply[#reply + 1] = present and 1 or 0
    else
      if count >= bound then
        -- The last layer is full: new items go to the next one, whose
        -- positions the client sent along.
        if active >= nl then
          return redis.error_reply('ERR bloom: batch overflows the next layer; send smaller batches')
        end
        active = active + 1
        bound = bound + spare
      end
      local present = false
      for l = 1, active - 1 do
        if has(p, l, bloom_test) then present = true break end
      end
      -- Test-and-set in the last layer: new unless all k bits were set.
      if not present and not has(p, active, bloom_set) then
        count = count + 1
        reply[#reply + 1] = 1
      else
        reply[#reply + 1] = 0
      end
    end
  end
  if mode == 'add' and nitems > 0 then
    redis.call('HSET', meta, 'count', tostring(count), 'layers', tostring(active))
  end
  reply[2] = count
  reply[3] = active
  return reply, next_key, next_arg, nitems
end
