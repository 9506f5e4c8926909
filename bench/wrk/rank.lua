-- One player's rank per request, a random player of the board each time.
-- Arguments after `--`: board, players.
local board, players

function init(args)
  board = args[1] or "wrk"
  players = tonumber(args[2] or "20000")
  math.randomseed(os.time())
end

function request()
  return wrk.format("GET", "/v1/boards/" .. board .. "/players/p" .. math.random(1, players))
end
