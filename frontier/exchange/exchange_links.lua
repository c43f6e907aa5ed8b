-- requires: exchange_guard pushback
-- exchange_links.lua: an exchange's links (exchange.lua): those the Bloom
-- filter found new queued (within a host's cap), each finished page's
-- count of them left for its record (finish.lua), and the outbox entries
-- whose offers went through acked.

-- ex_entry_host is the host of a back-of-queue entry ("host[ level]\n…").
local function ex_entry_host(e)
  local h = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
  local sp = string.find(h, ' ', 1, true)
  return sp and string.sub(h, 1, sp - 1) or h
end

-- ex_room is, per host of the entries, how many more it may have queued
-- under a cap of host_max pages a host: twice the cap (a queued URL may
-- fail, or redirect), less its pages and what it has queued.
local function ex_room(C, entries)
  local hosts, room = {}, {}
  for _, e in ipairs(entries) do
    local h = ex_entry_host(e)
    if not room[h] then room[h], hosts[#hosts + 1] = 0, h end
  end
  for at = 1, #hosts, 1000 do -- HMGET in parts: unpack's stack is bounded
    local part = {unpack(hosts, at, math.min(at + 999, #hosts))}
    local pages, lens = redis.call('HMGET', C.K.hostpages, unpack(part)), redis.call('HMGET', C.K.lengths, unpack(part))
    for i, h in ipairs(part) do room[h] = 2 * C.A.host_max - (tonumber(pages[i]) or 0) - (tonumber(lens[i]) or 0) end
  end
  return room
end

-- ex_cap_links keeps of the new links what a host's page cap leaves room
-- for: its queue stays under twice the cap (a sitemap index of millions of
-- URLs fills nothing past it). The rest are counted, as the pop counts a
-- capped host's (skipped_links:max_pages_per_host). (The crawl's budget
-- bounds nothing here: a raised budget reopens an ended crawl, with the
-- URLs it left queued.)
local function ex_cap_links(C, fresh, stats)
  if #fresh == 0 or (C.A.host_max or 0) <= 0 then return fresh end
  local room, kept, dropped = ex_room(C, fresh), {}, 0
  for _, e in ipairs(fresh) do
    local h = ex_entry_host(e)
    if room[h] <= 0 then
      dropped = dropped + 1
    else
      kept[#kept + 1] = e
      room[h] = room[h] - 1
    end
  end
  if dropped > 0 then ex_add(stats, 'skipped_links:max_pages_per_host', dropped) end
  return kept
end

-- ex_queue_links: the links the Bloom filter found new are queued, as
-- far as a host's page cap leaves room; counted in stats.
local function ex_queue_links(C, stats)
  local fresh = {}
  for i = 1, C.links do
    if C.reply[3 + i] == 1 then fresh[#fresh + 1] = ARGV[C.link0 + i - 1] end
  end
  local queued = fr_push_back(C.Q, ex_cap_links(C, fresh, stats), C.now)
  if queued > 0 then ex_add(stats, 'enqueued', queued) end
  if C.links > 0 then ex_add(stats, 'offered', C.links) end
end

-- ex_fresh_write: of each finished page's links (A.fresh: its lease id, a
-- text, and how many of the call's links are its, following the previous
-- page's), how many the Bloom filter found new, set in the process's
-- fresh hash (one HSET), where finish.lua reads it for the page's record.
-- Only counts above 0 are set: this exchange sent again (its reply lost)
-- finds its links seen, sets nothing, and leaves the count its first run
-- found.
local function ex_fresh_write(C)
  local pages, link, set = C.A.fresh or {}, 0, {}
  for _, p in ipairs(pages) do
    local new = 0
    for i = link + 1, link + p[2] do
      if C.reply[3 + i] == 1 then new = new + 1 end
    end
    link = link + p[2]
    if new > 0 then
      set[#set + 1] = ex_text(C, p[1])
      set[#set + 1] = fr_int(new)
    end
  end
  if #set == 0 then return end
  redis.call('HSET', C.K.fresh, unpack(set))
  redis.call('PEXPIRE', C.K.fresh, '86400000') -- a day, as the exchange counter
end

-- ex_acks: the outbox entries (finish.lua's ex_park) whose offers went
-- through (A.acks) have their records added to the results stream, their
-- new_links counting the offers' too, and are deleted; one gone already
-- (acked by the scheduler) is skipped. It returns how many were acked.
local function ex_acks(C, stats)
  local A, K, acked = C.A, C.K, 0
  for _, ack in ipairs(A.acks or {}) do
    local entry = redis.call('HGET', K.outbox, ack.id)
    if entry then
      acked = acked + 1
      local pages = cjson.decode(string.match(entry, '^%d+\n([^\n]*)'))
      local extra = ack.extra or {}
      for _, p in ipairs(pages) do
        redis.call('XADD', K.results, 'MAXLEN', '~', fr_int(A.results_cap or 0), '*', 'rec', p.r,
          'new_links', string.format('%d', p.n + (extra[p.d] or 0)))
      end
      ex_add(stats, 'records', #pages)
      redis.call('HDEL', K.outbox, ack.id)
    end
  end
  return acked
end
