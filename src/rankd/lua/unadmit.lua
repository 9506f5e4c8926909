-- unadmit: take back what admit.lua counted for runs that were then not logged (the log
-- refused the append): their attempts, and an entrant's place it gave. Keys as admit.lua.
--
-- ARGV = (player, run id, "counted" or "entered") triples.

for i = 1, #ARGV, 3 do
  if redis.call('SREM', KEYS[2], ARGV[i] .. '|' .. ARGV[i + 1]) == 1 then
    redis.call('HINCRBY', KEYS[3], ARGV[i], -1)
    if ARGV[i + 2] == 'entered' then redis.call('SREM', KEYS[1], ARGV[i]) end
  end
end
return 1
