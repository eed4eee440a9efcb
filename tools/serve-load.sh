#!/usr/bin/env bash
# tools/serve-load.sh [SECONDS] [CLIENTS] [BUILD_DIR]
#
# Load on loopback: starts mstar-serve on the TTS demo (a free port on
# 127.0.0.1), samples /metrics, runs CLIENTS streaming clients (default 64)
# for SECONDS (default 60) with mstar-serve-load -- 10% hang up after their
# first chunk, 10% send garbage -- then samples /metrics again once every
# stream has closed, and stops the server with SIGTERM (it must exit 0).
# Prints the load report, the slots in use and the resident memory before
# and after. Every step is bounded in time; nothing leaves loopback.
set -euo pipefail

seconds=${1:-60}
clients=${2:-64}
build=${3:-build/release}
serve="$build/apps/mstar-serve"
load="$build/apps/mstar-serve-load"
for b in "$serve" "$load"; do
  [ -x "$b" ] || { echo "serve-load: $b is not built (cmake --build $build)" >&2; exit 2; }
done

work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$serve" configs/tts-demo.yaml --port 0 2>"$work/stderr" &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's|^mstar-serve: listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$work/stderr")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "serve-load: the server did not start:" >&2; cat "$work/stderr" >&2; exit 1; }

metric() {  # metric FILE SERIES: the sample's value
  awk -v s="$2" 'index($0, s " ") == 1 { print $2 }' "$1"
}
scrape() {  # bash's /dev/tcp: no HTTP client needed; HTTP/1.0, so the server closes after the body
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
  timeout 5 cat <&3 | tr -d '\r' | sed '1,/^$/d' >"$1"
  exec 3<&-
}

scrape "$work/before"
echo "mstar-serve on port $port; $clients clients for $seconds s"
rc=0
timeout $((${seconds%.*} + 60)) "$load" load --port "$port" --clients "$clients" --seconds "$seconds" \
  --hangup 0.1 --garbage 0.1 || rc=$?

# Every stream ends (hung-up ones are cancelled) before the second sample.
for _ in $(seq 100); do
  scrape "$work/after"
  [ "$(metric "$work/after" mstar_streams_open)" = 0 ] && break
  sleep 0.1
done
slots='mstar_resource_in_use{resource="voice_kv",type="bounded_kv",unit="slots"}'
rss=mstar_resident_memory_bytes
echo "slots in use: before $(metric "$work/before" "$slots"), after $(metric "$work/after" "$slots")"
echo "resident memory: before $(( $(metric "$work/before" $rss) / 1048576 )) MiB, after $(( $(metric "$work/after" $rss) / 1048576 )) MiB"
echo "server counts after:"
grep -E '^mstar_(requests_total|requests_refused_busy_total|produced_total|http_responses_total)' "$work/after" | sed 's/^/  /'
kill -TERM "$pid"
server_rc=0
wait "$pid" || server_rc=$?
pid=
tail -n 2 "$work/stderr"
[ "$server_rc" = 0 ] || { echo "serve-load: mstar-serve exited $server_rc after SIGTERM" >&2; exit 1; }
[ "$(metric "$work/after" "$slots")" = 0 ] || { echo "serve-load: slots still in use after the load" >&2; exit 1; }
exit "$rc"
