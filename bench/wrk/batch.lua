-- One runs:batch request of N runs per request: unique run ids, random players of the board
-- with random scores. Arguments after `--`: board, players, server key, run id prefix, N.
-- Run ids are prefix-thread-request-index, so no two runs of the load share one.
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_no", threads)
end

local counter = 0
local path, players, prefix, per_request

function init(args)
  path = "/v1/boards/" .. (args[1] or "wrk") .. "/runs:batch"
  players = tonumber(args[2] or "1000000")
  wrk.headers["Authorization"] = "Bearer " .. (args[3] or "bench-server")
  wrk.headers["Content-Type"] = "application/json"
  prefix = (args[4] or tostring(os.time())) .. "-" .. tostring(thread_no or 0)
  per_request = tonumber(args[5] or "500")
  math.randomseed(os.time() + (thread_no or 0) * 7919)
end

function request()
  counter = counter + 1
  local runs = {}
  for i = 1, per_request do
    runs[i] = string.format(
      '{"run_id":"%s-%d-%d","player_id":"p%d","score":%d}',
      prefix, counter, i, math.random(1, players), math.random(0, 999999999)
    )
  end
  return wrk.format("POST", path, nil, '{"runs":[' .. table.concat(runs, ",") .. ']}')
end
