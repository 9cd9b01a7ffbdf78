#!/usr/bin/env bash
# Measures the pipeline on this machine: starts `checkin dev` against the Postgres and
# broker of with-services.sh, loads the example zones into a project, and runs
# `checkin load` against it.
#
#   scripts/with-services.sh scripts/load.sh [checkin load options…]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${CHECKIN_BINARY:-$("$ROOT/scripts/swift-bin-path.sh")/checkin}"
PORT="${CHECKIN_LOAD_PORT:-18080}"
export CHECKIN_LOG_LEVEL="${CHECKIN_LOG_LEVEL:-warning}"

"$BIN" projects create load >/dev/null
# With --webhooks-per-fix the trip walks through zones generated on its paths; otherwise
# through the example zones.
zones="$ROOT/examples/zones.json"
for arg in "$@"; do
    case "$arg" in
    --webhooks-per-fix | --webhooks-per-fix=*)
        zones="$(mktemp)"
        trap 'rm -f "$zones"' EXIT
        "$BIN" load "$@" --print-zones >"$zones"
        ;;
    esac
done
"$BIN" zones import --project load "$zones"
CHECKIN_HTTP_PORT="$PORT" CHECKIN_INGEST_REQUIRE_API_KEY=false "$BIN" dev &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true; [ "$zones" = "$ROOT/examples/zones.json" ] || rm -f "$zones"' EXIT
# Ready: the consumer groups have their partitions, so that the first fixes do not wait for a join.
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/ready" >/dev/null && break; sleep 0.5; done
sleep "${CHECKIN_LOAD_SETTLE:-0}"
"$BIN" load --url "http://127.0.0.1:$PORT" --project load --metrics "http://127.0.0.1:$PORT/metrics" "$@"
