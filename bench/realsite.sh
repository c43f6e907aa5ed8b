#!/usr/bin/env bash
# The real site of issues 32 and 54: Debian's PostgreSQL, Python and Apache
# manuals (postgresql-doc-15, python3.11-doc, apache2-doc: HTML with their
# real link graphs, large pages and small), each on a loopback host of its
# own behind nginx, and a fourth host whose one page links the three;
# crawled by two `work -c 16` on a redis-server of its own, at each
# rate/burst, RUNS times. (BenchmarkRealSite, in bench/realsite_test.go,
# serves the same site and crawls it with colly too, for CPU.) The first
# rate given is the reference (inf by default): every later crawl must
# fetch the same URLs. Prints a line a crawl: seconds, pages, URLs put
# back, late and retokened (both workers), GETs beyond one a URL by
# nginx's access log (robots.txt aside), and the reference's URLs this
# crawl never requested.
# Usage (from the repository): bench/realsite.sh [RATE/BURST ...]
#   RUNS=3 bench/realsite.sh inf 100000/1000
# Needs nginx, the three manuals, redis-server and python3 (apt-get install
# nginx postgresql-doc-15 python3.11-doc apache2-doc redis-server).
# Everything it starts it stops by PID; its files go to a temporary
# directory it removes.
set -euo pipefail
cd "$(dirname "$0")/.."
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(inf 100000/1000)
runs=${RUNS:-1}
manuals=(/usr/share/doc/postgresql-doc-15/html /usr/share/doc/python3.11/html /usr/share/doc/apache2-doc/manual)
for d in "${manuals[@]}"; do
	[ -e "$d/index.html" ] || { echo "no $d: apt-get install postgresql-doc-15 python3.11-doc apache2-doc" >&2; exit 1; }
done
command -v nginx >/dev/null || { echo "no nginx: apt-get install nginx" >&2; exit 1; }
. bench/setup.sh
chmod 755 "$tmp" # nginx's workers, not root, read the front page
sport=$(free_port)
hosts=(127.0.0.41 127.0.0.42 127.0.0.43 127.0.0.44)
roots=("${manuals[@]}" "$tmp/front")
mkdir -p "$tmp/nginx/logs" "$tmp/front"
{
	echo "<!DOCTYPE html><title>Three manuals</title><ul>"
	for i in 0 1 2; do echo "<li><a href=\"http://${hosts[$i]}:$sport/index.html\">${manuals[$i]}</a>"; done
	echo "</ul>"
} >"$tmp/front/index.html"
{
	echo "worker_processes 1; error_log $tmp/nginx/logs/error.log; pid $tmp/nginx/nginx.pid;"
	echo "events { worker_connections 1024; }"
	echo "http { include /etc/nginx/mime.types; access_log off;"
	echo "  client_body_temp_path $tmp/nginx/body; proxy_temp_path $tmp/nginx/proxy;"
	echo "  fastcgi_temp_path $tmp/nginx/fcgi; uwsgi_temp_path $tmp/nginx/uwsgi; scgi_temp_path $tmp/nginx/scgi;"
	echo "  log_format hit '\$server_addr \$request_uri';"
	for i in 0 1 2 3; do
		echo "  server { listen ${hosts[$i]}:$sport; root ${roots[$i]}; access_log $tmp/nginx/logs/access.log hit; }"
	done
	echo "}"
} >"$tmp/nginx/nginx.conf"
nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -g 'daemon off;' >"$tmp/nginx/out.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	redis-cli -p "$rport" ping >/dev/null 2>&1 && curl -sf "http://${hosts[0]}:$sport/index.html" >/dev/null && break
	sleep 0.1
done
curl -sf "http://${hosts[0]}:$sport/index.html" >/dev/null || { echo "nginx did not start: $(cat "$tmp/nginx/out.log" "$tmp/nginx/logs/error.log")" >&2; exit 1; }
seeds=()
for h in "${hosts[@]}"; do seeds+=("http://$h:$sport/index.html"); done
printf '%-14s %3s %8s %6s %9s %5s %9s %6s %7s\n' rate/burst run seconds pages put_back late retokened extra missing
ref=""
for rb in "${rates[@]}"; do
	rate=${rb%/*} burst=1
	[ "$rb" != "${rb#*/}" ] && burst=${rb#*/}
	for run in $(seq "$runs"); do
		: >"$tmp/nginx/logs/access.log"
		redis-cli -p "$rport" flushall >/dev/null
		cr seed --rate "$rate" --burst "$burst" --allow-private "${seeds[@]}" >/dev/null 2>&1
		start=$(date +%s.%N)
		crbg work -c 16 --exit-when-done --id a --progress-every 0 >"$tmp/a.log" 2>&1 &
		a=$!
		crbg work -c 16 --exit-when-done --id b --progress-every 0 >"$tmp/b.log" 2>&1 &
		b=$!
		pids+=("$a" "$b")
		wait "$a" "$b"
		end=$(date +%s.%N)
		sum() { grep -h 'put_back=' "$tmp/a.log" "$tmp/b.log" | grep -o " $1=[0-9]*" | cut -d= -f2 | paste -sd+ | bc; }
		pages=$(cr status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["pages"])')
		grep -v ' /robots.txt$' "$tmp/nginx/logs/access.log" | sort >"$tmp/got"
		extra=$(uniq -d -c "$tmp/got" | awk '{n += $1 - 1} END {print n + 0}')
		sort -u "$tmp/got" >"$tmp/urls"
		if [ -z "$ref" ]; then
			ref="$rb"
			cp "$tmp/urls" "$tmp/ref"
		fi
		missing=$(comm -23 "$tmp/ref" "$tmp/urls" | wc -l)
		printf '%-14s %3d %8.2f %6s %9s %5s %9s %6s %7s\n' "$rate/$burst" "$run" "$(echo "$end - $start" | bc)" "$pages" "$(sum put_back)" "$(sum late)" "$(sum retokened)" "$extra" "$missing"
	done
done
