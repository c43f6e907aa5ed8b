#!/usr/bin/env bash
# What rendering costs, on one machine: the test site crawled by one
# plain fetch loop, then the same site by render workers of 1 and 2 tabs
# (seed --render always), then a site of application shells (every page
# built by a script from a JSON endpoint) by 1 and 2 tabs: PAGES pages a
# host (100 by default) on 2 hosts, 5 ms a response, no rate limit. Then
# the site crawled plainly and rendered, and the shells rendered, at one
# pace (1 request a second a host, 15 pages a host), so that what the
# processes do by the second (heartbeats, sweeps, idle polls) is alike
# and the difference in Redis commands a page is the rendering's and the
# render worker's own (its heartbeats and idle polls: a worker of its own
# beside the plain one). For each it prints pages/s (from the records' fetch times: the
# crawl's own pace, not the process's start and end), pages/s per loop or
# tab, Redis commands a page (INFO's total_commands_processed over the
# crawl; and the calls rendering made, counted by the render worker),
# requests a page, subresources and cache hits, the worker
# process's peak RSS (VmHWM) and its browser's peak (its processes'
# proportional shares, Pss, together).
# Usage (from the repository): bench/render.sh;  PAGES=300 bench/render.sh
# Needs redis-server, chromium and python3. Everything it starts it stops
# by PID; its files go to a temporary directory it removes.
set -euo pipefail
cd "$(dirname "$0")/.."
pages=${PAGES:-100}
. bench/setup.sh
run() { # run NAME SITE-FLAGS -- SEED-FLAGS -- WORK-FLAGS: one crawl, one line
	local name=$1 sport n=$pages
	shift
	local site=() seed=() work=()
	while [ "$1" != -- ]; do
		case $1 in --pages=*) n=${1#--pages=} ;; *) site+=("$1") ;; esac
		shift
	done
	shift
	while [ "$1" != -- ]; do seed+=("$1"); shift; done
	shift
	work=("$@")
	sport=$(free_port)
	"$tmp/crawler" testsite --hosts 2 --pages "$n" --latency 5ms --listen-base 127.0.0.70 --port "$sport" "${site[@]}" >"$tmp/site.log" 2>&1 &
	local site_pid=$!
	pids+=("$site_pid")
	for _ in $(seq 100); do curl -sf "http://127.0.0.70:$sport/_truth" >/dev/null && break; sleep 0.1; done
	cr --crawl "$name" seed --allow-private --rate inf "${seed[@]}" "http://127.0.0.70:$sport/" "http://127.0.0.71:$sport/" >/dev/null
	local before
	before=$(redis-cli -p "$rport" info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p')
	crbg --crawl "$name" --log-format json work --exit-when-done --progress-every 0 --id bench "${work[@]}" >"$tmp/$name.log" 2>&1 &
	local wpid=$! hwm=0
	while kill -0 "$wpid" 2>/dev/null; do
		h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$wpid/status" 2>/dev/null || true)
		[ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
		sleep 0.2
	done
	wait "$wpid" || { echo "$name: the worker failed"; tail -5 "$tmp/$name.log"; exit 1; }
	local after
	after=$(redis-cli -p "$rport" info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p')
	cr --crawl "$name" export >"$tmp/$name.jsonl"
	curl -sf "http://127.0.0.70:$sport/_stats" >"$tmp/$name.stats"
	kill "$site_pid"
	wait "$site_pid" 2>/dev/null || true
	python3 - "$tmp" "$name" "$((after - before))" "$hwm" "${work[*]}" <<'PY'
import datetime, json, re, sys
tmp, name, cmds, hwm, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def t(s):
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$", s)
    return datetime.datetime.fromisoformat(m.group(1) + "+00:00").timestamp() + float("0." + (m.group(2) or "0"))
recs = [json.loads(l) for l in open(f"{tmp}/{name}.jsonl")]
fetched = [r for r in recs if r.get("status")]
times = sorted(t(r["fetched_at"]) for r in fetched)
span = times[-1] - times[0]
rate = (len(times) - 1) / span if span > 0 else 0
rendered = [r for r in fetched if r.get("render")]
loops = int(re.search(r"--render (\d+)", work).group(1)) if "--render" in work else int(re.search(r"-c (\d+)", work).group(1))
stats = json.load(open(f"{tmp}/{name}.stats"))
requests = sum(h["requests"] for h in stats["hosts"].values())
line = {}
for l in open(f"{tmp}/{name}.log"):
    try:
        e = json.loads(l)
    except ValueError:
        continue
    if e.get("msg") == "render worker exits":
        line = e
ms = sorted(r["render"]["ms"] for r in rendered)
med = f"  render {ms[len(ms) // 2]} ms a page (median), {line.get('render_redis_calls', 0) / len(rendered):.2f} rendering's Redis calls a page" if ms else ""
subs = sum(r["render"]["subresources"] for r in rendered)
hits = sum(r["render"].get("cached", 0) for r in rendered)
print(f"{name:<22} {len(fetched):5d} pages {rate:7.1f} pages/s {rate / loops:6.1f} a {'tab' if rendered else 'loop'}"
      f"  {cmds / len(fetched):5.1f} Redis cmds/page  {requests / len(fetched):4.2f} requests/page"
      f"  subresources {subs} (cache hits {hits})  worker RSS peak {hwm // 1024} MiB"
      f"  browser peak {line.get('browser_peak_mib', 0)} MiB{med}")
PY
}
echo "2 hosts x $pages pages, 5 ms a response, no rate limit"
run plain-c1 -- -- -c 1
run plain-c2 -- -- -c 2
run rendered-1tab -- --render always -- -c 1 --render 1
run rendered-2tabs -- --render always -- -c 1 --render 2
run shells-1tab --scripted 2 -- --render always -- -c 1 --render 1
run shells-2tabs --scripted 2 -- --render always -- -c 1 --render 2
echo "1 request a second a host, 15 pages a host: the same pace plain and rendered"
run paced-plain --pages=15 -- --rate 1 -- -c 1
run paced-rendered --pages=15 -- --rate 1 --render always -- -c 1 --render 1
run paced-shells --scripted 2 --pages=15 -- --rate 1 --render always -- -c 1 --render 1
