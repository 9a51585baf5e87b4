-- wrk script: POST the bodies of a file (one JSON document per line) in turn, then print
-- one JSON line with the counts and latency percentiles so bench/run.py can parse it.
-- usage: wrk -t1 -c2 -d5s -s post.lua http://127.0.0.1:PORT -- BODIES_FILE PATH

local bodies = {}
local path = "/"
local next_body = 0

function init(args)
  for line in io.lines(args[1]) do
    bodies[#bodies + 1] = line
  end
  path = args[2]
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  next_body = next_body % #bodies + 1
  return wrk.format("POST", path, nil, bodies[next_body])
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
