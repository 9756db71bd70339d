-- Begin (with lib_touch and lib_record): Get plus a claim.
-- KEYS: rec, subs, streams, the claim.
-- ARGV: ttl ms, slid ttl ms, token, claim ttl ms, cached version.
-- Reply: nil if there is no record; else Get's reply (the record or {'='})
-- preceded by '1' if the claim was made, '0' if the request id was already
-- in flight. The session is slid either way.
--
-- A claim holds '#', the generation of the session that made it, '#' and
-- the token. One of an earlier session with this id (deleted or expired
-- while the request ran: its key outlives the session) is no claim: it
-- is replaced. A claim without the '#' head was made by an older version
-- (whose Create and Delete delete it, listed in the rq set): always live.
if not slide(ARGV[1], ARGV[2]) then return false end
local rec, gen = record(ARGV[5])
local claim = '#' .. gen .. '#' .. ARGV[3]
if not redis.call('SET', KEYS[4], claim, 'NX', 'PX', ARGV[4]) then
  local v = redis.call('GET', KEYS[4])
  local j = string.byte(v, 1) == 35 and string.find(v, '#', 2, true)
  if not j or string.sub(v, 2, j - 1) == gen then
    table.insert(rec, 1, '0')
    return rec
  end
  redis.call('SET', KEYS[4], claim, 'PX', ARGV[4])
end
table.insert(rec, 1, '1')
return rec
