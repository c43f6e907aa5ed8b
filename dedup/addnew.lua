-- requires: bloom
-- addnew.lua: the filter alone: test-and-set (or test) one batch.
-- KEYS and ARGV as bloom_run describes, starting at index 1.
local reply = bloom_run(1, 1)
return reply
