#!/usr/bin/env bash
# What packaging a crawl into a WACZ costs: MB megabytes of WARC files (300
# by default) over three workers' folders (bench/warcgen: random bodies,
# as the crawl's writer writes them), packaged by 'crawler wacz' with its
# default index memory, then verified ('crawler wacz --verify'). Prints the
# WARC bytes, the time and the packaging process's peak RSS (VmHWM, polled
# while it runs), and what the verification says.
# Usage (from the repository): bench/wacz.sh;  MB=1000 bench/wacz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${MB:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/crawler" ./cmd/crawler
(cd bench && go run ./warcgen -dir "$tmp/warcs" -mb "$mb" -workers 3)
bytes=$(du -sb "$tmp/warcs" | cut -f1)
start=$(date +%s.%N)
"$tmp/crawler" wacz --out "$tmp/crawl.wacz" --temp-dir "$tmp" "$tmp"/warcs/w* &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
	h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
	[ -n "$h" ] && [ "$h" -gt "$peak" ] && peak=$h
	sleep 0.05
done
wait "$pid"
end=$(date +%s.%N)
echo "WARC: $((bytes >> 20)) MiB in $(find "$tmp/warcs" -name '*.warc.gz' | wc -l) files"
echo "packaged in $(python3 -c "print(round($end - $start, 1))") s, peak RSS $((peak >> 10)) MiB; WACZ $(($(stat -c %s "$tmp/crawl.wacz") >> 20)) MiB"
"$tmp/crawler" wacz --verify "$tmp/crawl.wacz"
