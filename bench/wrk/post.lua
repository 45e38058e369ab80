-- wrk script for bench/load.mjs: POST with a JSON body and headers, an optional unique
-- Idempotency-Key per request, and one JSON line of results printed by done().
--
-- Configured through the environment (set by bench/load.mjs):
--   WRK_BODY         request body (sent as is)
--   WRK_BODY_FILE    or the path of a file holding it (a body over 128 KB: the environment's limit)
--   WRK_HEADERS      extra headers, one `name: value` per line
--   WRK_IDEMPOTENCY  1 = a unique Idempotency-Key on every request (builds each request in Lua;
--                    otherwise the request is built once and wrk sends the same bytes every time)
--   WRK_NONCE        prefix of the keys, unique per load run (the gateway keeps keys it has seen)
--   WRK_STATUS       1 = count every status code in response() (costs wrk some throughput: it then
--                    hands each response's headers and body to Lua); otherwise only wrk's own
--                    count of status > 399 (summary.errors.status) is reported
--
-- Output: a line `WRK_JSON {...}` with requests, duration_us, p50_us, p99_us, non2xx, statuses
-- (only with WRK_STATUS=1), errors {connect, read, write, timeout, status}.

wrk.method = "POST"
local body_file = os.getenv("WRK_BODY_FILE")
if body_file and body_file ~= "" then
  local f = assert(io.open(body_file, "rb"))
  wrk.body = f:read("*a")
  f:close()
else
  wrk.body = os.getenv("WRK_BODY") or ""
end
wrk.headers["Content-Type"] = "application/json"
for line in (os.getenv("WRK_HEADERS") or ""):gmatch("[^\n]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  if name then wrk.headers[name] = value end
end

local idempotency = os.getenv("WRK_IDEMPOTENCY") == "1"
local count_status = os.getenv("WRK_STATUS") == "1"
local nonce = os.getenv("WRK_NONCE") or tostring(os.time())

-- setup/done run in the main Lua state; init/request/response in each thread's own state.
local threads = {}
local next_id = 0
function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

if idempotency then
  local n = 0
  function request()
    n = n + 1
    wrk.headers["Idempotency-Key"] = nonce .. "-" .. id .. "-" .. n
    return wrk.format()
  end
end

statuses = {}
non2xx = 0
if count_status then
  function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
    if status < 200 or status > 299 then non2xx = non2xx + 1 end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local parts = {}
  local bad = 0
  local all = {}
  for _, t in ipairs(threads) do
    bad = bad + (t:get("non2xx") or 0)
    for code, count in pairs(t:get("statuses") or {}) do all[code] = (all[code] or 0) + count end
  end
  for code, count in pairs(all) do table.insert(parts, string.format('"%d":%d', code, count)) end
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"non2xx":%s,"statuses":%s,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    count_status and tostring(bad) or "null", count_status and ("{" .. table.concat(parts, ",") .. "}") or "null",
    e.connect, e.read, e.write, e.timeout, e.status))
end
