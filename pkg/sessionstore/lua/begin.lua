-- Begin (with lib_touch and lib_record): Get plus a claim.
-- KEYS: rec, subs, streams, rq, the claim.
-- ARGV: ttl ms, now (unix ms), token, claim ttl ms, claim member, cached
-- version, claim slack ms.
-- Reply: nil if there is no record; else Get's reply (the record or {'='})
-- preceded by '1' if the claim was made, '0' if the request id was already
-- in flight. The session is touched either way.
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
local rec = record(ARGV[6])
if not redis.call('SET', KEYS[5], ARGV[3], 'NX', 'PX', ARGV[4]) then
  table.insert(rec, 1, '0')
  return rec
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[4])
local slack = tonumber(ARGV[7])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - slack)
redis.call('ZADD', KEYS[4], now + ttl, ARGV[5])
if redis.call('PTTL', KEYS[4]) < ttl + slack then
  redis.call('PEXPIRE', KEYS[4], ttl + slack)
end
table.insert(rec, 1, '1')
return rec
