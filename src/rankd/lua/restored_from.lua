-- restored_from: note where a restore of this Redis began, for the node it replaced
-- (services/rebuild/restart.py catch_up).
--
-- KEYS[1] = the restored-from hash (one field per replaced node)
-- ARGV[1] = the replaced node's run id (the verified marker's value when the restore began)
-- ARGV[2] = the first log sequence the restore could not count on finding here
-- ARGV[3] = when the position it started from was recorded, unix ms
-- ARGV[4] = the hash's expiry, seconds
--
-- Reply: 1 written, 0 kept: an earlier start is already noted for that node (two instances
-- restoring at once, or a later restore of this node), and the earliest is the one that
-- covers every instance that wrote to the replaced node.
local noted = redis.call('HGET', KEYS[1], ARGV[1])
local written = 0
if not noted or tonumber(string.match(noted, '^(%d+)')) > tonumber(ARGV[2]) then
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ARGV[3])
    written = 1
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return written
