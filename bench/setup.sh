# Sourced by bench/ratesweep.sh and bench/realsite.sh (from the
# repository's root): a temporary directory ($tmp) removed at exit with
# every process listed in pids stopped by PID, free_port, the crawler
# built as $tmp/crawler, a redis-server of its own on $rport, and cr, the
# crawler pointed at it (crbg in the background).
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
go build -o "$tmp/crawler" ./cmd/crawler
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
pids+=($!)
cr() { "$tmp/crawler" --redis "redis://127.0.0.1:$rport" "$@"; }
# crbg is cr for the background (crbg work … &): the subshell a function
# runs in becomes the crawler (exec), so $! is the crawler's PID, which
# the cleanup stops.
crbg() { exec "$tmp/crawler" --redis "redis://127.0.0.1:$rport" "$@"; }
