#!/usr/bin/env bash
# Measures one evaluator process alone: fills checkin.fixes through the ingest service
# while no evaluator runs, then starts one `checkin evaluator` on that backlog and
# reports the rate at which its committed offsets (in Postgres, written with the
# states) grow between 10 % and 90 % of the backlog, so that start-up and the group
# join are not counted.
#
#   scripts/with-services.sh scripts/evaluator-backlog.sh [--fixes N] [--devices N]
#
# CHECKIN_BINARY picks the build to measure (default: this checkout's debug build);
# CHECKIN_LOAD_BINARY the checkin-bench whose `load` fills the topic (default the one beside
# CHECKIN_BINARY), so that two evaluators can be compared on the same backlog.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${CHECKIN_BINARY:-$("$ROOT/scripts/swift-bin-path.sh")/checkin}"
LOAD_BIN="${CHECKIN_LOAD_BINARY:-$(dirname "$BIN")/checkin-bench}"
[ -x "$LOAD_BIN" ] || { echo "evaluator-backlog: no $LOAD_BIN: build it (swift build --product checkin-bench)" >&2; exit 1; }
PORT="${CHECKIN_LOAD_PORT:-18081}"
FIXES=100000
DEVICES=2000
while [ $# -gt 0 ]; do
    case "$1" in
        --fixes) FIXES="$2"; shift 2 ;;
        --devices) DEVICES="$2"; shift 2 ;;
        *) echo "usage: $0 [--fixes N] [--devices N]" >&2; exit 2 ;;
    esac
done
export CHECKIN_LOG_LEVEL="${CHECKIN_LOG_LEVEL:-warning}"
# Services refuse to start without a key to seal webhook secrets with; any key will do here.
export CHECKIN_SECRET_KEY="${CHECKIN_SECRET_KEY:-$(head -c 32 /dev/urandom | base64)}"
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

committed() {
    psql "$CHECKIN_DATABASE_URL" -Atq -c \
        "SELECT COALESCE(sum(next_offset), 0) FROM consumer_offsets WHERE topic = 'checkin.fixes'"
}

"$BIN" migrate >/dev/null
"$BIN" projects create load >/dev/null
"$BIN" zones import --project load "$ROOT/examples/zones.json" >/dev/null

CHECKIN_HTTP_PORT="$PORT" CHECKIN_INGEST_REQUIRE_API_KEY=false "$BIN" ingest &
pids+=($!)
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.5; done
"$LOAD_BIN" load --url "http://127.0.0.1:$PORT" --project load --fixes "$FIXES" --devices "$DEVICES" >/dev/null
kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
pids=()

CHECKIN_HTTP_PORT=$((PORT + 1)) "$BIN" evaluator &
pids+=($!)
low=$((FIXES / 10))
high=$((FIXES * 9 / 10))
start="" end=""
deadline=$((SECONDS + 900))
while [ -z "$end" ] && [ $SECONDS -lt $deadline ]; do
    done_so_far="$(committed)"
    now="$(date +%s.%N)"
    if [ -z "$start" ] && [ "$done_so_far" -ge "$low" ]; then start="$now"; start_count="$done_so_far"; fi
    if [ -n "$start" ] && [ "$done_so_far" -ge "$high" ]; then end="$now"; end_count="$done_so_far"; fi
    sleep 0.1
done
[ -n "$end" ] || { echo "the evaluator did not reach $high of $FIXES fixes in 900 s (at $(committed))" >&2; exit 1; }
awk -v a="$start" -v b="$end" -v n0="$start_count" -v n1="$end_count" -v total="$FIXES" -v devices="$DEVICES" \
    'BEGIN { printf "evaluator: %d fixes of %d devices; %d evaluated in %.2f s = %.0f fixes/s\n", total, devices, n1 - n0, b - a, (n1 - n0) / (b - a) }'
# The events the evaluator decided meanwhile: a figure without events does not measure their cost.
curl -sf "http://127.0.0.1:$((PORT + 1))/metrics" | awk '/^checkin_evaluator_events_total/ { n += $2 } END { printf "evaluator: %d events decided\n", n }'
