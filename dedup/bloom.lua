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
--   ARGV[ab+5]    items the next layer (L) holds, in case this batch fills L-1
--   ARGV[ab+6..]  k and bits per segment of each layer 0..L ('add') or
--                 0..L-1 ('test'), two values a layer
--   then, item by item and layer by layer, three values: the segment's index
--   (counted from KEYS[kb+1]), a and b; the item's k bit offsets in that
--   segment are a + i*b + (i^3-i)/6 mod bits, i = 0..k-1 (see hash.go).
-- Returns reply, next_key, next_arg, B where reply is
--   {1, count, layers, flag_1 .. flag_B}  flag 1 = was absent (now added) /
--                                          present ('test')
--   {0, count, layers}                    the client's layer count is stale;
--                                          nothing was written, retry.
--   {2, count, layers, need}              layers 0..need-1 must be allocated
--                                          first (alloc.lua); nothing was
--                                          written, retry after allocating.
-- Every write happens in this one script call: two workers adding the same
-- URL cannot both see it as new.
-- Offsets go to Redis as decimal strings: Redis converts a Lua number
-- argument far more slowly (measured ~25x for BITFIELD) than a string.
local function bloom_off(a, b, i, m)
  return string.format('%d', (a + i * b + (i * i * i - i) / 6) % m)
end

-- bloom_test: are all k bits set? GETBIT one by one, stopping at the first
-- 0: an absent item costs about two calls at a layer's usual fill.
local function bloom_test(key, a, b, k, m)
  for i = 0, k - 1 do
    if redis.call('GETBIT', key, bloom_off(a, b, i, m)) == 0 then return false end
  end
  return true
end

-- bloom_set: set all k bits; were they all set before? One BITFIELD call
-- (its SET returns the old bit); miniredis lacks BITFIELD, so the script
-- falls back to SETBIT when a probe fails.
local bloom_bitfield = nil
local bloom_args = {}
local function bloom_set(key, a, b, k, m)
  if bloom_bitfield == nil then
    bloom_bitfield = pcall(redis.call, 'BITFIELD_RO', key, 'GET', 'u1', '0')
  end
  local all = true
  if bloom_bitfield then
    local args = bloom_args
    for i = 0, k - 1 do
      args[4 * i + 1] = 'SET'
      args[4 * i + 2] = 'u1'
      args[4 * i + 3] = bloom_off(a, b, i, m)
      args[4 * i + 4] = '1'
    end
    local old = redis.call('BITFIELD', key, unpack(args, 1, 4 * k))
    for i = 1, k do
      if old[i] == 0 then all = false end
    end
  else
    for i = 0, k - 1 do
      if redis.call('SETBIT', key, bloom_off(a, b, i, m), 1) == 0 then all = false end
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
  local nl = known
  if mode == 'add' then nl = known + 1 end
  local ks, ms, stride = {}, {}, 3 * nl
  for l = 1, nl do
    ks[l] = tonumber(ARGV[ab + 4 + 2 * l])
    ms[l] = tonumber(ARGV[ab + 5 + 2 * l])
  end
  local first = ab + 6 + 2 * nl
  local next_arg = first + stride * nitems
  if layers ~= known then
    return {0, count, layers}, next_key, next_arg, nitems
  end
  local bound = tonumber(ARGV[ab + 4])
  local spare = tonumber(ARGV[ab + 5])
  if mode == 'add' then
    -- Bits are only ever written into segments allocated whole: a bitmap
    -- grown bit by bit ends up with up to twice its size in memory.
    local need = layers
    if count + nitems > bound then need = layers + 1 end
    if allocated < need then
      return {2, count, layers, need}, next_key, next_arg, nitems
    end
  end

  -- has(p, l, fn): are all of the item's bits in layer l set? (bloom_set
  -- also sets them, and answers whether they all were set before.)
  local function has(p, l, fn)
    local q = p + 3 * (l - 1)
    return fn(KEYS[kb + 1 + tonumber(ARGV[q])], tonumber(ARGV[q + 1]), tonumber(ARGV[q + 2]), ks[l], ms[l])
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
  if mode == 'add' then
    redis.call('HSET', meta, 'count', count, 'layers', active)
  end
  reply[2] = count
  reply[3] = active
  return reply, next_key, next_arg, nitems
end
