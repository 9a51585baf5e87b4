-- wrk script: POST the bodies of a file (one JSON document per line) in turn, then print
-- one JSON line with the counts and latency percentiles so bench/run.py can parse it.
-- usage: wrk -t1 -c2 -d5s -s post.lua http://127.0.0.1:PORT -- BODIES_FILE PATH [unique RUN_TAG] [pipeline=N]

-- Requests are formatted once in init, so the load generator spends its CPU on sockets only.
-- With "unique", each request is formatted on the fly with #SEQ# in its body replaced by a
-- run tag and a request counter, so no two requests are the same (no server memo can answer);
-- the body is split around #SEQ# once, so a request costs two concatenations, not a scan.
-- With "pipeline=N", each write carries N requests (HTTP/1.1 pipelining; wrk counts every
-- answer): the client's CPU per request drops about N times, for when it shares the server's
-- cores (bench/run.py --pipeline).
local requests = {}
local suffixes = {}
local next_request = 0
local unique = false
local path = nil
local seq = 0
local tag = ""
local depth = 1

function init(args)
  wrk.headers["Content-Type"] = "application/json"
  path = args[2]
  for i = 3, #args do
    if args[i] == "unique" then
      unique = true
      tag = args[i + 1] or ""
    end
    local n = string.match(args[i], "^pipeline=(%d+)$")
    if n then depth = tonumber(n) end
  end
  for line in io.lines(args[1]) do
    local n = #requests + 1
    if unique then
      local at = string.find(line, "#SEQ#", 1, true)
      requests[n] = at and string.sub(line, 1, at - 1) or line
      suffixes[n] = at and string.sub(line, at + 5) or false
    else
      requests[n] = wrk.format("POST", path, nil, line)
    end
  end
end

local function one()
  next_request = next_request % #requests + 1
  if unique then
    seq = seq + 1
    local body, suffix = requests[next_request], suffixes[next_request]
    if suffix then
      body = body .. tag .. "-" .. seq .. suffix
    end
    return wrk.format("POST", path, nil, body)
  end
  return requests[next_request]
end

function request()
  if depth == 1 then
    return one()
  end
  local batch = {}
  for i = 1, depth do
    batch[i] = one()
  end
  return table.concat(batch)
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests": %d, "duration_us": %d, "non_2xx": %d, "socket_errors": %d, ' ..
    '"p50_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, errors.status,
    errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
