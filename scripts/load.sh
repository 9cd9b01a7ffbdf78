#!/usr/bin/env bash
# Measures the pipeline on this machine: starts `checkin dev` against the Postgres and
# broker of with-services.sh, loads the example zones into a project, and runs
# `checkin-bench load` against it.
#
#   scripts/with-services.sh scripts/load.sh [checkin-bench load options…]
#
# CHECKIN_BINARY      the build that runs the pipeline (default this checkout's debug build)
# CHECKIN_LOAD_BINARY the checkin-bench whose `load` sends the fixes (default the one
#                     beside CHECKIN_BINARY), to drive another build's pipeline with this
#                     one's load
# CHECKIN_LOAD_SETTLE seconds to wait after /ready before the load (default 0)
# CHECKIN_LOAD_FSYNC  on: Postgres durable for the run (fsync, synchronous_commit and
#                     full_page_writes on); the local cluster's default is off
# CHECKIN_LOAD_HOOK   a command run with `before` just before the load and `after` just
#                     after it, while the pipeline runs (scripts/capacity.sh takes its
#                     Postgres and broker readings so)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${CHECKIN_BINARY:-$("$ROOT/scripts/swift-bin-path.sh")/checkin}"
LOAD_BIN="${CHECKIN_LOAD_BINARY:-$(dirname "$BIN")/checkin-bench}"
[ -x "$LOAD_BIN" ] || { echo "load: no $LOAD_BIN: build it (swift build --product checkin-bench)" >&2; exit 1; }
PORT="${CHECKIN_LOAD_PORT:-18080}"
export CHECKIN_LOG_LEVEL="${CHECKIN_LOG_LEVEL:-warning}"

if [ "${CHECKIN_LOAD_FSYNC:-off}" = on ]; then
    "$ROOT/scripts/postgres-durability.sh" on
fi
"$BIN" projects create load >/dev/null
# With --webhooks-per-fix the trip walks through zones generated on its paths; otherwise
# through the example zones.
zones="$ROOT/examples/zones.json"
for arg in "$@"; do
    case "$arg" in
    --webhooks-per-fix | --webhooks-per-fix=*)
        zones="$(mktemp)"
        trap 'rm -f "$zones"' EXIT
        "$LOAD_BIN" load "$@" --print-zones >"$zones"
        ;;
    esac
done
# (Generated lanes sit closer than restart-mode fixes can tell apart: the lint says so per pair.)
"$BIN" zones import --project load "$zones" 2> >(grep -v '^warning: fence' >&2)
CHECKIN_HTTP_PORT="$PORT" CHECKIN_INGEST_REQUIRE_API_KEY=false "$BIN" dev &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true; [ "$zones" = "$ROOT/examples/zones.json" ] || rm -f "$zones"' EXIT
# Ready: the consumer groups have their partitions, so that the first fixes do not wait for a join.
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/ready" >/dev/null && break; sleep 0.5; done
sleep "${CHECKIN_LOAD_SETTLE:-0}"
# The CPU of each process tree over the run: the pipeline, Postgres (postmaster and backends), the broker.
cpu=(--cpu "checkin=$pid")
postmaster="$(readlink -f "${CHECKIN_POSTGRES_DIR:-/nonexistent}")/postmaster.pid"
[ -r "$postmaster" ] && cpu+=(--cpu "postgres=$(head -1 "$postmaster")")
[ -r "${CHECKIN_RUN_DIR:-/nonexistent}/broker.pid" ] && cpu+=(--cpu "broker=$(cat "$CHECKIN_RUN_DIR/broker.pid")")
[ -z "${CHECKIN_LOAD_HOOK:-}" ] || $CHECKIN_LOAD_HOOK before
"$LOAD_BIN" load --url "http://127.0.0.1:$PORT" --project load --metrics "http://127.0.0.1:$PORT/metrics" "${cpu[@]}" "$@"
[ -z "${CHECKIN_LOAD_HOOK:-}" ] || $CHECKIN_LOAD_HOOK after
