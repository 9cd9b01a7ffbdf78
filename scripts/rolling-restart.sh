#!/usr/bin/env bash
# Rolling restarts under load: runs the pipeline as separate processes (2 ingests,
# 2 evaluators, 2 notifiers, each on its own port) against the Postgres and broker of
# with-services.sh, drives it with `checkin-bench load` (an open loop of dense events; the load's own
# endpoint receives the webhooks), and meanwhile, round after round, replaces each process in
# turn as a rolling update does: SIGTERM, wait for it to exit (its stop time), start its
# replacement on the same port, wait for the replacement's /ready, go on to the next. Then it
# checks what a rolling update must keep:
#
#   - no fix lost: every fix sent has a decision record of an evaluator;
#   - every webhook the trip decides arrives exactly once at the partner (by webhook-id), signed,
#     and decided by the fix the trip's own run of the engine names;
#   - each device's webhooks in order (no lower `sequence` after a higher one);
#   - no gap between two webhooks longer than --max-gap seconds (5);
#   - each process exits within CHECKIN_SHUTDOWN_GRACE of its SIGTERM, the grace
#     deploy/kubernetes/base/config.env sets (the pods' terminationGracePeriodSeconds, read
#     from the manifests too, is when this script, as the kubelet would, kills it).
#
# The load tool sends each request to the ingests in turn and a request one of them does not
# take (an ingest stopping refuses connections) to the other: it is retried, not lost; and
# with --in-order a request waits for the answers to its devices' previous fixes, so that a
# retry cannot put a device's fixes out of order.
#
#   scripts/with-services.sh scripts/rolling-restart.sh [--rounds N] [--rate R] [--seconds S]
#       [--devices D] [--max-gap S]
#
# Defaults: 3 rounds at 2,000 fixes/s, 2,000 devices, 0.17 webhooks per fix, fixes enough for
# --seconds (default: 30 s a replacement and 30 s more). The load must still be sending when
# the last replacement is ready, or the run fails (asking for more --seconds).
#
# CHECKIN_BINARY      the build that runs the pipeline (default this checkout's debug build)
# CHECKIN_LOAD_BINARY the checkin-bench whose `load` sends the fixes (default the one beside
#                     CHECKIN_BINARY)
# Logs of every process: .local/rolling-restart/ (replaced on each run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${CHECKIN_BINARY:-$("$ROOT/scripts/swift-bin-path.sh")/checkin}"
LOAD_BIN="${CHECKIN_LOAD_BINARY:-$(dirname "$BIN")/checkin-bench}"
die() { echo "rolling-restart: $*" >&2; exit 1; }
[ -x "$LOAD_BIN" ] || die "no $LOAD_BIN: build it (swift build --product checkin-bench)"
say() { echo "rolling-restart: $*" >&2; }
# shellcheck source=lib/ports.sh
. "$ROOT/scripts/lib/ports.sh"
[ -n "${CHECKIN_KAFKA_BROKERS:-}" ] || die "run under scripts/with-services.sh"

ROUNDS=3
RATE=2000
DEVICES=2000
SECONDS_OF_LOAD=
MAX_GAP=5
WARM_UP=10
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --seconds) SECONDS_OF_LOAD="$2"; shift 2 ;;
        --devices) DEVICES="$2"; shift 2 ;;
        --max-gap) MAX_GAP="$2"; shift 2 ;;
        --warm-up) WARM_UP="$2"; shift 2 ;;
        *) echo "usage: $0 [--rounds N] [--rate R] [--seconds S] [--devices D] [--max-gap S] [--warm-up S]" >&2; exit 2 ;;
    esac
done
SLOTS=(ingest-1 ingest-2 evaluator-1 evaluator-2 notifier-1 notifier-2)
SECONDS_OF_LOAD="${SECONDS_OF_LOAD:-$((WARM_UP + ROUNDS * ${#SLOTS[@]} * 30 + 30))}"
FIXES=$((RATE * SECONDS_OF_LOAD))

# The grace the manifests give: CHECKIN_SHUTDOWN_GRACE for the work in flight, and the pods'
# terminationGracePeriodSeconds, after which the kubelet kills.
GRACE="$(sed -n 's/^CHECKIN_SHUTDOWN_GRACE=//p' "$ROOT/deploy/kubernetes/base/config.env")"
KILL_AFTER="$(sed -n 's/^ *terminationGracePeriodSeconds: *//p' "$ROOT/deploy/kubernetes/base/"{ingest,evaluator,notifier}.yaml | sort -n | head -1)"
[ -n "$GRACE" ] && [ -n "$KILL_AFTER" ] || die "no CHECKIN_SHUTDOWN_GRACE or terminationGracePeriodSeconds in deploy/kubernetes/base"
export CHECKIN_SHUTDOWN_GRACE="$GRACE"

export CHECKIN_LOG_LEVEL="${CHECKIN_LOG_LEVEL:-warning}"
# shellcheck source=lib/local-services-env.sh
. "$ROOT/scripts/lib/local-services-env.sh"

LOGS="$ROOT/.local/rolling-restart"
rm -rf "$LOGS"
mkdir -p "$LOGS"
zones="$LOGS/zones.json"
summary="$LOGS/load.json"
declare -A pid port
load_pid=

cleanup() {
    [ -n "$load_pid" ] && kill -TERM "$load_pid" 2>/dev/null
    for slot in "${!pid[@]}"; do kill -TERM "${pid[$slot]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

"$BIN" migrate >/dev/null
"$BIN" projects create load >/dev/null
LOAD=(--project load --fixes "$FIXES" --rate "$RATE" --devices "$DEVICES" --webhooks-per-fix 0.17)
"$LOAD_BIN" load "${LOAD[@]}" --print-zones >"$zones"
"$BIN" zones import --project load "$zones" 2> >(grep -v '^warning: fence' >&2) >/dev/null

start() {
    local slot="$1"
    echo "--- started $(date -u +%H:%M:%S.%N)" >>"$LOGS/$slot.log"
    CHECKIN_HTTP_PORT="${port[$slot]}" "$BIN" "${slot%-*}" >>"$LOGS/$slot.log" 2>&1 &
    pid[$slot]=$!
}

# Waits for the slot's process to answer /ready; prints how long that took.
wait_ready() {
    local slot="$1" began=$EPOCHREALTIME
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:${port[$slot]}/ready" >/dev/null && { elapsed "$began"; return 0; }
        kill -0 "${pid[$slot]}" 2>/dev/null || { tail -20 "$LOGS/$slot.log" >&2; die "$slot exited before it was ready"; }
        sleep 0.2
    done
    tail -20 "$LOGS/$slot.log" >&2
    die "$slot was not ready within 120 s"
}

# True while the process has not exited (an exited child stays a zombie until waited for).
running() {
    local state
    state="$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null)"
    [ -n "$state" ] && [ "$state" != Z ]
}

elapsed() { awk -v from="$1" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.2f", to - from }'; }

for slot in "${SLOTS[@]}"; do
    port[$slot]="$(free_port)"
    start "$slot"
    # One at a time: the first creates the topics, and two joining a group at once rebalance twice.
    wait_ready "$slot" >/dev/null
done
say "6 processes ready (CHECKIN_SHUTDOWN_GRACE=$GRACE, killed after $KILL_AFTER s); load: $FIXES fixes at $RATE fixes/s, $DEVICES devices"

"$LOAD_BIN" load --url "http://127.0.0.1:${port[ingest-1]}" --url "http://127.0.0.1:${port[ingest-2]}" "${LOAD[@]}" \
    --receive --in-order --count-decisions --timeout 180 --json >"$summary" 2>"$LOGS/load.log" &
load_pid=$!
# The load computes the trip's events before its first request: wait for fixes to come in.
accepted() {
    curl -sf "http://127.0.0.1:${port[$1]}/metrics" | awk '$1 ~ /^checkin_ingest_fixes_accepted_total/ { n += $NF } END { print n + 0 }'
}
for _ in $(seq 1 600); do
    [ "$(accepted ingest-1)" != 0 ] || [ "$(accepted ingest-2)" != 0 ] && break
    kill -0 "$load_pid" 2>/dev/null || { cat "$LOGS/load.log" >&2; die "the load ended before its first fix"; }
    sleep 0.2
done
load_started=$EPOCHREALTIME
sleep "$WARM_UP"

# Each replacement: SIGTERM, the stop time (killed past terminationGracePeriodSeconds, as the
# kubelet would), the replacement started on the same port, its time to /ready.
declare -A stops
timeline="$LOGS/timeline.txt"
: >"$timeline"
over_grace=()
for round in $(seq 1 "$ROUNDS"); do
    for slot in "${SLOTS[@]}"; do
        kill -0 "$load_pid" 2>/dev/null || die "the load ended during round $round, before $slot was replaced: give it more --seconds"
        old="${pid[$slot]}"
        at="$(elapsed "$load_started")"
        began=$EPOCHREALTIME
        kill -TERM "$old"
        while running "$old"; do
            if awk -v s="$(elapsed "$began")" -v k="$KILL_AFTER" 'BEGIN { exit !(s > k) }'; then
                kill -KILL "$old"
                break
            fi
            sleep 0.02
        done
        stopped="$(elapsed "$began")"
        status=0
        wait "$old" || status=$?
        start "$slot"
        ready="$(wait_ready "$slot")"
        stops[$slot]="${stops[$slot]:-}${stops[$slot]:+ }$stopped"
        line="$(printf 'round %d at %7.1f s: %-11s stopped in %6.2f s (exit %d), replacement ready in %5.2f s' \
            "$round" "$at" "$slot" "$stopped" "$status" "$ready")"
        echo "$line" | tee -a "$timeline" >&2
        awk -v s="$stopped" -v g="$GRACE" 'BEGIN { exit !(s > g) }' && over_grace+=("$slot in round $round: ${stopped} s")
        [ "$status" = 0 ] || over_grace+=("$slot in round $round exited $status")
    done
done
kill -0 "$load_pid" 2>/dev/null || die "the load ended before the last replacement was ready: give it more --seconds"
say "replacements done at $(elapsed "$load_started") s into the load; waiting for the load to end"
load_status=0
wait "$load_pid" || load_status=$?
load_pid=
[ "$load_status" = 0 ] || { cat "$LOGS/load.log" >&2; die "the load failed (exit $load_status)"; }

echo "stop times (s) after SIGTERM, per process, round by round (CHECKIN_SHUTDOWN_GRACE $GRACE s):"
for slot in "${SLOTS[@]}"; do printf '  %-11s %s\n' "$slot" "${stops[$slot]}"; done
python3 - "$summary" "$MAX_GAP" "$load_started" "$timeline" "${over_grace[@]}" <<'CHECK' || die "the rolling restart lost or broke something (logs in $LOGS)"
import json, sys

summary = json.load(open(sys.argv[1]))
max_gap, load_started, timeline, over_grace = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5:]
webhooks, decisions, requests = summary["webhooks"], summary["decisions"], summary["requests"]
due = summary["expectedWebhooks"]
gap_at = (webhooks.get("longestGapEndedAt") or load_started) - load_started
print(f"fixes: {summary['fixes']} sent in {requests['requests']} requests ({requests['retried']} attempts retried on the other ingest), "
      f"{decisions['decidedFixes']} evaluated, {decisions['lostFixes']} lost ({decisions['records']} decision records)")
print(f"webhooks: {webhooks['received']} of {due} due, {webhooks['duplicates']} duplicates, {webhooks['inversions']} order inversions, "
      f"longest gap {webhooks['longestGapSeconds']:.2f} s (ending {gap_at:.1f} s into the load)")
print(f"latency, fix accepted to webhook received: p50 {webhooks['p50Milliseconds']:.1f} ms, p99 {webhooks['p99Milliseconds']:.1f} ms, "
      f"p99.9 {webhooks['p999Milliseconds']:.1f} ms, max {webhooks['maxMilliseconds']:.1f} ms; "
      f"requests p99 {requests['p99Milliseconds']:.1f} ms, max {requests['maxMilliseconds']:.1f} ms")
problems = []
if decisions["lostFixes"] != 0:
    # Fix load-<device>-<step> is the trip's fix step * devices + device, sent at that over the rate.
    def sent_at(fix_id):
        device, step = (int(part) for part in fix_id.split("-")[1:3])
        return (step * summary["devices"] + device) / summary["openLoopRate"]
    lost = ", ".join(f"{fix_id} ({sent_at(fix_id):.1f} s)" for fix_id in decisions["lostFixIds"])
    problems.append(f"{decisions['lostFixes']} fixes lost (no decision record); the first, sent at about: {lost}")
    problems += [f"  {place}" for place in decisions.get("lostFixPlaces", [])]
if webhooks["received"] != due or webhooks["duplicates"] != 0:
    problems.append(f"webhooks: {webhooks['received']} of {due} received, {webhooks['duplicates']} twice")
if webhooks["badSignatures"] or webhooks["unmatched"] or webhooks["namedByBody"]:
    problems.append(f"webhooks: {webhooks['badSignatures']} badly signed, {webhooks['unmatched']} of no fix of the run, "
                    f"{webhooks['namedByBody']} decided by another fix than the trip's")
if webhooks["inversions"] != 0 or webhooks["unsequenced"] != 0:
    problems.append(f"{webhooks['inversions']} webhooks out of their device's order ({webhooks['unsequenced']} without a sequence)")
if webhooks["longestGapSeconds"] > max_gap:
    problems.append(f"a gap of {webhooks['longestGapSeconds']:.2f} s between two webhooks, ending {gap_at:.1f} s into the load "
                    f"(replacements: {timeline}), more than {max_gap:g} s")
problems += [f"not stopped within its grace: {entry}" for entry in over_grace]
for problem in problems:
    print("rolling-restart:", problem, file=sys.stderr)
sys.exit(1 if problems else 0)
CHECK
say "ok: nothing lost, every webhook once and in order, every process stopped within its grace"
