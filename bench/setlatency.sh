#!/usr/bin/env bash
# How long a live change of the settings takes to reach every worker
# process: WORKERS `work -c 8` (3 by default) crawl the test site (2 hosts
# x 3000 pages, 5 ms a response) at 20 requests/s a host; every second a
# `crawler set` toggles the rate between 20 and 2, CHANGES times (10 by
# default). For each change it prints how long the command took, and
# when each worker began to act on the new version (its log line, by the
# clock all the processes share: this machine's), counted from the moment
# the command started; the last line sums them up.
# Usage (from the repository): bench/setlatency.sh
#   WORKERS=5 CHANGES=20 bench/setlatency.sh
# Needs redis-server and python3 (a free port). Everything it starts it
# stops by PID; its files go to a temporary directory it removes.
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${WORKERS:-3}
changes=${CHANGES:-10}
. bench/setup.sh
sport=$(free_port)
"$tmp/crawler" testsite --hosts 2 --pages 3000 --latency 5ms --listen-base 127.0.0.50 --port "$sport" >"$tmp/site.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	redis-cli -p "$rport" ping >/dev/null 2>&1 && curl -sf "http://127.0.0.50:$sport/_truth" >/dev/null && break
	sleep 0.1
done
cr seed --rate 20 --allow-private "http://127.0.0.50:$sport/" "http://127.0.0.51:$sport/" >/dev/null
for i in $(seq "$workers"); do
	crbg --log-format json work -c 8 --id "w$i" --progress-every 0 >"$tmp/w$i.log" 2>&1 &
	pids+=($!)
done
sleep 2
rate=20
: >"$tmp/changes"
for c in $(seq "$changes"); do
	if [ "$rate" = 20 ]; then rate=2; else rate=20; fi
	start=$(date +%s.%N)
	out=$(cr set --rate "$rate" --by bench)
	end=$(date +%s.%N)
	version=$(echo "$out" | sed -n 's/.*settings version \([0-9]*\):.*/\1/p')
	echo "$version $start $end" >>"$tmp/changes"
	sleep 1
done
sleep 1
python3 - "$tmp" "$workers" <<'PY'
import datetime, glob, json, re, sys
tmp, n = sys.argv[1], int(sys.argv[2])
def t(s):  # RFC 3339 with nanoseconds, as log/slog writes it
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$", s)
    tz = m.group(3) if m.group(3) not in ("", "Z") else "+00:00"
    return datetime.datetime.fromisoformat(m.group(1) + tz).timestamp() + float("0." + (m.group(2) or "0"))
acted = {}  # (worker, version) -> time
for f in glob.glob(tmp + "/w*.log"):
    for line in open(f):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("msg", "").startswith("the crawl's settings changed"):
            acted[(e["worker"], e["version"])] = t(e["time"])
lat, cmd = [], []
print("%7s %10s  %s" % ("version", "command", "each worker acting on it, from the command's start"))
for line in open(tmp + "/changes"):
    v, start, end = line.split()
    v, start, end = int(v), float(start), float(end)
    cmd.append(end - start)
    ws = ["w%d" % i for i in range(1, n + 1)]
    got = [acted.get((w, v)) for w in ws]
    cells = ["%s %s" % (w, "missed" if g is None else "%.1f ms" % ((g - start) * 1000)) for w, g in zip(ws, got)]
    lat += [g - start for g in got if g is not None]
    print("%7d %7.1f ms  %s" % (v, (end - start) * 1000, ", ".join(cells)))
missed = len(cmd) * n - len(lat)
lat.sort()
print("changes %d, workers %d: command %.1f-%.1f ms; every worker acting on it %.1f-%.1f ms after the command started (median %.1f), %d missed"
      % (len(cmd), n, min(cmd) * 1000, max(cmd) * 1000, lat[0] * 1000, lat[-1] * 1000, lat[len(lat) // 2] * 1000, missed))
PY
