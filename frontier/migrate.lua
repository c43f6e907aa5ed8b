-- migrate.lua (lib.lua, then this): moves up to ARGV[1] URLs from the queue
-- of crawls seeded before the compact queues — one sorted set of members
-- "host \0 class seq \0 item-json", ordered by host, then put-back URLs
-- first, then by age — to the backs of their hosts' queues, whole. Run
-- until it returns 0, a crawl started by an older version loses nothing.
-- KEYS[1] the old sorted set   KEYS[2..5] queues, ready, stats, lengths
-- Returns how many URLs it moved.
local old = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #old == 0 then return 0 end
local entries = {}
for i, member in ipairs(old) do
  local a = string.find(member, '\0', 1, true)
  local b = string.find(member, '\0', a + 1, true)
  entries[i] = string.sub(member, 1, a - 1) .. '\n\n' .. string.sub(member, b + 1) -- a whole item: no parent marker
end
redis.call('ZREM', KEYS[1], unpack(old))
fr_push_back(fr_keys(KEYS[2], KEYS[3], KEYS[4], KEYS[5]), entries, fr_now())
return #old
