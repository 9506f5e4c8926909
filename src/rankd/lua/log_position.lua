-- log_position: record how far the run log has been applied to this Redis node, but only
-- if this node is a process the boards were verified on (services/rebuild/restart.py).
--
-- KEYS[1] = the node's position hash (seq, run_id, at_ms); its hash tag's slot lies on
--           the node (on a cluster, one tag per primary)
-- ARGV[1] = the log sequence applied through (the shared consumer's ack floor)
-- ARGV[2] = the verified identity: the marker's value, one run id or on a cluster every
--           primary's, comma-separated
-- ARGV[3] = now, unix ms
--
-- Reply: 1 written (the same sequence again refreshes at_ms: services/rebuild/restart.py asks
-- PostgreSQL what changed since then); 0 behind the recorded sequence (nothing written); -1 refused: this
-- node's run id is not in the verified identity (it restarted or was promoted since), so
-- it may lack runs up to ARGV[1], and claiming them would hide the loss from the next
-- restart. The run id is read here, in the same call as the write, so no restart can fall
-- between the check and the write.
local info = redis.call('INFO', 'server')
local run_id = string.match(info, 'run_id:(%x+)')
if not run_id or not string.find(ARGV[2], run_id, 1, true) then
    return -1
end
local recorded = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0') or 0
if tonumber(ARGV[1]) < recorded then
    return 0
end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'run_id', run_id, 'at_ms', ARGV[3])
return 1
