-- push.lua — wrk script for tests/bench/push_bench.sh.
--
-- Every request POSTs one NDJSON body of ZX_BENCH_EVENTS events (default
-- 1000) of about 200 bytes each, built once at start-up (ids need not vary),
-- with the stream's key.  It must never change the body per request (the
-- bench measures the daemon, not Lua).
--
-- Environment: ZX_BENCH_KEY (the stream's key), ZX_BENCH_EVENTS.

local key = os.getenv("ZX_BENCH_KEY") or "bench-key"
local n = tonumber(os.getenv("ZX_BENCH_EVENTS") or "1000")

local pad = string.rep("x", 64)
local lines = {}
for i = 1, n do
  lines[i] = string.format(
    '{"id":%d,"user":"user-%05d","event":"page_view","url":"/products/%04d",' ..
    '"ts":"2026-11-29T18:09:25.123456Z","amount":%d.25,"ok":true,"note":"%s"}',
    i, i % 10000, i % 1000, i % 500, pad)
end

wrk.method = "POST"
wrk.body = table.concat(lines, "\n") .. "\n"
wrk.headers["Content-Type"] = "application/x-ndjson"
wrk.headers["Authorization"] = "Bearer " .. key

