-- bloom.lua: the Bloom filter's test-and-set, as a library function that a
-- script requires ("-- requires: bloom": internal/script joins it in front).
--
-- bloom_run(kb, ab, guard) reads its keys from KEYS[kb..] and arguments from ARGV[ab..]:
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
--   then, item by item, one value a layer: the item's place in the layer,
--   packed into one binary string (hash.go, Filter.prepare):
--     2 bytes   the segment's index, counted from KEYS[kb+1] (big-endian)
--     1 byte    length of the next field, then the block's first byte
--               offset in the segment, in decimal
--     1 byte    length of the next field, then its last byte offset
--     k times   2 bytes: a byte of the block (0..63) and the mask of the
--               item's bit in it
-- Returns reply, next_key, next_arg, B where reply is one of (the status
-- codes are named below, and in filter.go):
--   {BLOOM_OK, count, layers, flag_1 .. flag_B}  flag 1 = was absent (now
--                                 added) / present ('test')
--   {BLOOM_STALE, count, layers}  the client's layer count is stale;
--                                 nothing was written, retry.
--   {BLOOM_ALLOCATE, count, layers, need}  layers 0..need-1 must be
--                                 allocated first (alloc.lua); nothing was
--                                 written, retry after allocating.
--   {BLOOM_NEXT_LAYER, count, layers}  the batch may fill the last layer
--                                 but the next layer's places were not
--                                 sent; nothing was written, retry with them.
--   {BLOOM_REFUSED, count, layers, refusal}  the caller's guard refused
--                                 the call; nothing was written.
-- guard, when given, is called as guard(next_key, next_arg, B) before
-- anything is written (and before the retry statuses): it returns nil to
-- go on, or a value, the refusal, to stop the call. It must not write,
-- since a call answered with a retry status is sent again.
-- Every write happens in this one script call: two workers adding the same
-- URL cannot both see it as new.
--
-- This is the hot path of a crawl (every link a worker does not know
-- passes here), and inside Redis every string a script makes — a number
-- turned into text, a substring, a command argument — costs far more than
-- the work itself (bench/README.md). So an
-- item costs one GETRANGE of its 64-byte block, its bits tested with
-- arithmetic on bytes, and for a new item one SETRANGE of the updated
-- block: a handful of strings instead of the ~50 that k offsets through
-- BITFIELD made.
local bloom_byte, bloom_sub, bloom_char = string.byte, string.sub, string.char
local BLOOM_STALE, BLOOM_OK, BLOOM_ALLOCATE, BLOOM_NEXT_LAYER, BLOOM_REFUSED = 0, 1, 2, 3, 4

-- bloom_place unpacks an item's place in a layer: segment index, first
-- and last byte of its block (as text, ready for GETRANGE and SETRANGE),
-- and where its (byte, mask) pairs start.
local function bloom_place(packed)
  local hi, lo, l1 = bloom_byte(packed, 1, 3)
  local l2 = bloom_byte(packed, 4 + l1)
  return hi * 256 + lo, bloom_sub(packed, 4, 3 + l1), bloom_sub(packed, 5 + l1, 4 + l1 + l2), 5 + l1 + l2
end

-- bloom_all: are all k of the item's bits set in block?
local function bloom_all(block, packed, q, k)
  for i = q, q + 2 * k - 2, 2 do
    local at, mask = bloom_byte(packed, i, i + 1)
    if (bloom_byte(block, at + 1) or 0) % (mask + mask) < mask then return false end
  end
  return true
end

-- bloom_test: are all the item's bits set in the layer?
local function bloom_test(key, packed, k)
  local _, first, last, q = bloom_place(packed)
  return bloom_all(redis.call('GETRANGE', key, first, last), packed, q, k)
end

-- bloom_set: set all the item's bits in the layer; were they all set
-- before? A present item writes nothing.
local function bloom_set(key, packed, k)
  local _, first, last, q = bloom_place(packed)
  local block = redis.call('GETRANGE', key, first, last)
  if bloom_all(block, packed, q, k) then return true end
  local b = {bloom_byte(block, 1, 64)}
  for i = #b + 1, 64 do b[i] = 0 end -- (segments are allocated whole: never short)
  for i = q, q + 2 * k - 2, 2 do
    local at, mask = bloom_byte(packed, i, i + 1)
    local v = b[at + 1]
    if v % (mask + mask) < mask then b[at + 1] = v + mask end
  end
  redis.call('SETRANGE', key, first, bloom_char(unpack(b)))
  return false
end

-- bloom_layout reads a call's layout (the arguments above) and the
-- filter's state: a table of both.
local function bloom_layout(kb, ab)
  local state = redis.call('HMGET', KEYS[kb], 'layers', 'count', 'allocated')
  local c = {meta = KEYS[kb], kb = kb, mode = ARGV[ab], known = tonumber(ARGV[ab + 1]),
    layers = tonumber(state[1] or '0'), count = tonumber(state[2] or '0'), allocated = tonumber(state[3] or '0'),
    nitems = tonumber(ARGV[ab + 2]), next_key = kb + 1 + tonumber(ARGV[ab + 3]),
    spare = tonumber(ARGV[ab + 5]), bound = tonumber(ARGV[ab + 4]), ks = {}}
  c.nl = c.known -- the layers whose places each item carries
  if c.mode == 'add' and c.spare >= 0 then c.nl = c.known + 1 end
  for l = 1, c.nl do c.ks[l] = tonumber(ARGV[ab + 4 + 2 * l]) end
  c.first = ab + 6 + 2 * c.nl
  c.next_arg = c.first + c.nl * c.nitems
  return c
end

-- bloom_retry is the retry status that stops a call laid out as c before
-- any write (nil: none): the client's layer count is stale, the batch may
-- fill the last layer without the next one's places, or a layer is not
-- allocated yet.
local function bloom_retry(c)
  if c.layers ~= c.known then return {BLOOM_STALE, c.count, c.layers} end
  if c.mode ~= 'add' then return nil end
  -- Bits are only ever written into segments allocated whole: a bitmap
  -- grown bit by bit ends up with up to twice its size in memory.
  local need = c.layers
  if c.count + c.nitems > c.bound then
    if c.nl == c.known then return {BLOOM_NEXT_LAYER, c.count, c.layers} end
    need = c.layers + 1
  end
  if c.allocated < need then return {BLOOM_ALLOCATE, c.count, c.layers, need} end
  return nil
end

-- bloom_has: are all of the bits of the item whose places start at ARGV[p]
-- set in layer l? (With fn bloom_set it also sets them, and answers
-- whether they all were set before.)
local function bloom_has(c, p, l, fn)
  local packed = ARGV[p + l - 1]
  local hi, lo = bloom_byte(packed, 1, 2)
  return fn(KEYS[c.kb + 1 + hi * 256 + lo], packed, c.ks[l])
end

-- bloom_items tests (or tests and sets) each item of the batch, and
-- returns the reply.
local function bloom_items(c)
  local reply = {BLOOM_OK, 0, 0}
  local active, bound, count = c.layers, c.bound, c.count
  for i = 0, c.nitems - 1 do
    local p = c.first + i * c.nl
    local present = false
    if c.mode == 'test' then
      for l = 1, active do
        if bloom_has(c, p, l, bloom_test) then present = true break end
      end
      reply[#reply + 1] = present and 1 or 0
    else
      if count >= bound then
        -- The last layer is full: new items go to the next one, whose
        -- positions the client sent along.
        if active >= c.nl then
          return redis.error_reply('ERR bloom: batch overflows the next layer; send smaller batches')
        end
        active = active + 1
        bound = bound + c.spare
      end
      for l = 1, active - 1 do
        if bloom_has(c, p, l, bloom_test) then present = true break end
      end
      -- Test-and-set in the last layer: new unless all k bits were set.
      if not present and not bloom_has(c, p, active, bloom_set) then
        count = count + 1
        reply[#reply + 1] = 1
      else
        reply[#reply + 1] = 0
      end
    end
  end
  if c.mode == 'add' and c.nitems > 0 then
    redis.call('HSET', c.meta, 'count', tostring(count), 'layers', tostring(active))
  end
  reply[2] = count
  reply[3] = active
  return reply
end

local function bloom_run(kb, ab, guard)
  local c = bloom_layout(kb, ab)
  if guard then
    local refusal = guard(c.next_key, c.next_arg, c.nitems)
    if refusal ~= nil then return {BLOOM_REFUSED, c.count, c.layers, refusal}, c.next_key, c.next_arg, c.nitems end
  end
  local retry = bloom_retry(c)
  if retry then return retry, c.next_key, c.next_arg, c.nitems end
  return bloom_items(c), c.next_key, c.next_arg, c.nitems
end
