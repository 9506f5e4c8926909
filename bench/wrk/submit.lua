-- One single-run submit per request: a unique run id and a random player of the board with a
-- random score. Arguments after `--`: board, players, server key, run id prefix.
-- Run ids are prefix-thread-counter: wrk threads share nothing, so each counts on its own
-- under a thread number handed out in setup(); the prefix differs per wrk invocation.
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_no", threads)
end

local counter = 0
local path, players, prefix

function init(args)
  path = "/v1/boards/" .. (args[1] or "wrk") .. "/runs"
  players = tonumber(args[2] or "20000")
  wrk.headers["Authorization"] = "Bearer " .. (args[3] or "bench-server")
  wrk.headers["Content-Type"] = "application/json"
  prefix = (args[4] or tostring(os.time())) .. "-" .. tostring(thread_no or 0)
  math.randomseed(os.time() + (thread_no or 0) * 7919)
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"run_id":"%s-%d","player_id":"p%d","score":%d}',
    prefix, counter, math.random(1, players), math.random(0, 999999999)
  )
  return wrk.format("POST", path, nil, body)
end
