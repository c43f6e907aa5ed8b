-- gone.lua: the one refusal of a crawl that is gone (its config deleted by
-- a reset, or another instance under its name), written by every frontier
-- script that refuses it, and read in Go as frontier.ErrGone (isGone).
local FR_GONE = 'GONE the crawl is gone from Redis'
