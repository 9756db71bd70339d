-- CreateRecord.
-- KEYS: the record.
-- ARGV: data, ttl ms.
-- Reply: 1 created, 0 the record exists.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', 1, 'd', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
