-- robots_store.lua: store a host's robots.txt as fetched, and release the
-- fetching worker's lock, in one call.
-- KEYS[1] the host's robots hash   KEYS[2] its lock
-- ARGV[1] status   ARGV[2] the rules the crawl's agent reads (RobotsTxt.For,
-- as compact text: not the file)   ARGV[3] TTL ms   ARGV[4] the lock's token
-- A success replaces the whole hash: any failure history ends. The lock
-- is released only if it is still this worker's (it may have expired
-- during a slow fetch, and another worker hold it now).
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'rules', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('DEL', KEYS[2]) end
return 1
