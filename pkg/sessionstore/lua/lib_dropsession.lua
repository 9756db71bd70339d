-- dropsession() (Create and Delete) deletes what a session has besides its
-- record: KEYS[2] subs, KEYS[3] streams, KEYS[4] rq and the keys those
-- list, every one of which the caller declares:
-- KEYS: rec, subs, streams, rq, then the log and the once set of each of
--       the n streams named in ARGV (in that order: log, once set, ...),
--       then the claim key of each of the m rq members named in ARGV.
-- ARGV: n, m, the n stream names, the m members, then the script's own.
--
-- It returns nil once it has deleted them. If streams has a stream field
-- or rq a member that is not among those named (the caller read them in an
-- earlier round trip; they changed since, or it named none yet), it
-- deletes nothing and returns {streams, members}: those missing, for the
-- caller to run the script again with them declared too. So every key it
-- deletes is in KEYS, and the deletion is still one atomic step. The
-- keys of streams already gone or of members already dropped may be
-- declared: deleting a missing key is a no-op.
local function dropsession()
  local n, m = tonumber(ARGV[1]), tonumber(ARGV[2])
  local named, members = {}, {}
  for i = 3, 2 + n do named[ARGV[i]] = true end
  for i = 3 + n, 2 + n + m do members[ARGV[i]] = true end
  local missStreams, missMembers = {}, {}
  for _, f in ipairs(redis.call('HKEYS', KEYS[3])) do
    -- '<stream>#seq' fields (AppendEventSeq's) have no key of their own.
    if not named[f] and not string.find(f, '#', 1, true) then
      missStreams[#missStreams + 1] = f
    end
  end
  for _, c in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    if not members[c] then missMembers[#missMembers + 1] = c end
  end
  if #missStreams > 0 or #missMembers > 0 then
    return {missStreams, missMembers}
  end
  -- In chunks: unpack is bounded by the Lua stack.
  for i = 2, #KEYS, 1000 do
    redis.call('DEL', unpack(KEYS, i, math.min(i + 999, #KEYS)))
  end
  return nil
end
