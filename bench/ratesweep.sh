#!/usr/bin/env bash
# The rate sweep from the command line, as issue 32 measured it: the test
# site (3 hosts x 400 pages, 5 ms a response) crawled by two `work -c 16`
# on a redis-server of its own, at each rate/burst, RUNS times; prints a
# line a crawl: seconds, URLs put back and late (both workers), URLs
# late whose host gave them a new token (fetched, not put back), pages,
# requests beyond one a URL (a flaky page's one retry allowed: the site's
# Stats.Extra) and truth URLs never requested.
# Usage (from the repository): bench/ratesweep.sh [RATE/BURST ...]
#   RUNS=3 bench/ratesweep.sh inf 100000/1000 2000/10
#   LOGLEVEL=debug LOGDIR=/tmp/logs bench/ratesweep.sh 100000/1000  (each URL
#   given back late says how late, and whether it waited for robots.txt)
# Needs redis-server and python3 (a free port). Everything it starts it
# stops by PID; its files go to a temporary directory it removes.
set -euo pipefail
cd "$(dirname "$0")/.."
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(inf 100000/1000 2000/10 200/1 20/1)
runs=${RUNS:-1}
. bench/setup.sh
# The site starts anew for each crawl: its flaky pages fail their first
# request (a retry every crawl makes), and its counts start at 0.
site() {
	[ -z "${spid:-}" ] || { kill "$spid"; wait "$spid" 2>/dev/null || true; }
	sport=$(free_port)
	"$tmp/crawler" testsite --hosts 3 --pages 400 --latency 5ms --listen-base 127.0.0.30 --port "$sport" >"$tmp/site.log" 2>&1 &
	spid=$!
	pids+=("$spid")
	for _ in $(seq 100); do
		redis-cli -p "$rport" ping >/dev/null 2>&1 && curl -sf "http://127.0.0.30:$sport/_truth" >/dev/null && return
		sleep 0.1
	done
	echo "the test site or redis-server did not start" >&2
	exit 1
}
printf '%-14s %3s %8s %9s %5s %9s %6s %5s %7s\n' rate/burst run seconds put_back late retokened pages extra missing
for rb in "${rates[@]}"; do
	rate=${rb%/*} burst=1
	[ "$rb" != "${rb#*/}" ] && burst=${rb#*/}
	for run in $(seq "$runs"); do
		site
		redis-cli -p "$rport" flushall >/dev/null
		cr seed --rate "$rate" --burst "$burst" --allow-private \
			"http://127.0.0.30:$sport/" "http://127.0.0.31:$sport/" "http://127.0.0.32:$sport/" >/dev/null 2>&1
		start=$(date +%s.%N)
		crbg ${LOGLEVEL:+--log-level $LOGLEVEL} work -c 16 --exit-when-done --id a --progress-every 0 >"$tmp/a.log" 2>&1 &
		a=$!
		crbg ${LOGLEVEL:+--log-level $LOGLEVEL} work -c 16 --exit-when-done --id b --progress-every 0 >"$tmp/b.log" 2>&1 &
		b=$!
		pids+=("$a" "$b")
		wait "$a" "$b"
		end=$(date +%s.%N)
		if [ -n "${LOGDIR:-}" ]; then # LOGDIR=dir LOGLEVEL=debug: the workers' logs kept, a file each
			cp "$tmp/a.log" "$LOGDIR/${rate}-${burst}-${run}-a.log"
			cp "$tmp/b.log" "$LOGDIR/${rate}-${burst}-${run}-b.log"
		fi
		# From each worker's last line (its counters), not debug lines' durations.
		sum() { grep -h 'put_back=' "$tmp/a.log" "$tmp/b.log" | grep -o " $1=[0-9]*" | cut -d= -f2 | paste -sd+ | bc; }
		pages=$(cr status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["pages"])')
		read -r extra missing < <(python3 - "http://127.0.0.30:$sport" <<'PY'
import json, sys, urllib.request
base = sys.argv[1]
st = json.load(urllib.request.urlopen(base + "/_stats"))
truth = json.load(urllib.request.urlopen(base + "/_truth"))
extra = sum(max(n - (2 if "/flaky/" in u else 1), 0) for u, n in (st.get("repeated") or {}).items())
print(extra, len(set(truth) - set(st.get("fetched") or [])))
PY
)
		printf '%-14s %3d %8.2f %9s %5s %9s %6s %5s %7s\n' "$rate/$burst" "$run" "$(echo "$end - $start" | bc)" "$(sum put_back)" "$(sum late)" "$(sum retokened)" "$pages" "$extra" "$missing"
	done
done
