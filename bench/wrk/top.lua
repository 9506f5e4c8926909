-- The board's top 10 on every request. Arguments after `--`: board.
-- No request() function: wrk then builds the request once and resends the same bytes.
function init(args)
  wrk.path = "/v1/boards/" .. (args[1] or "wrk") .. "/top?n=10"
end
