#!/usr/bin/env bash
# Measures what each service costs as its own process, the figures the Kubernetes
# manifests' resource requests and limits are sized by (docs/kubernetes.md): runs
# `checkin ingest`, `evaluator` and `notifier` side by side against the Postgres and broker
# of with-services.sh, drives them with `checkin-bench load --receive` (an open loop; the
# load's own endpoint receives the webhooks), and reads from /proc, per service: resident
# memory once ready and idle, its peak over the run (VmHWM), CPU while idle (10 s) and CPU
# time per fix (user + system over the load, start-up excluded). `checkin migrate`'s peak
# resident memory on the empty database comes first.
#
#   scripts/with-services.sh scripts/service-footprint.sh [--fixes N] [--rate R]
#
# CHECKIN_BINARY picks the build to measure (default: this checkout's debug build; sizes
# are for a release build); the checkin-bench beside it sends the load.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${CHECKIN_BINARY:-$("$ROOT/scripts/swift-bin-path.sh")/checkin}"
die() { echo "service-footprint: $*" >&2; exit 1; }
LOAD_BIN="$(dirname "$BIN")/checkin-bench"
[ -x "$LOAD_BIN" ] || die "no $LOAD_BIN: build it (swift build --product checkin-bench)"
# shellcheck source=lib/ports.sh
. "$ROOT/scripts/lib/ports.sh"
[ -n "${CHECKIN_KAFKA_BROKERS:-}" ] || die "run under scripts/with-services.sh"
FIXES=60000
RATE=2000
while [ $# -gt 0 ]; do
    case "$1" in
        --fixes) FIXES="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        *) echo "usage: $0 [--fixes N] [--rate R]" >&2; exit 2 ;;
    esac
done
LOAD=(--project load --fixes "$FIXES" --rate "$RATE" --devices 2000 --webhooks-per-fix 0.17 --receive --timeout 60)

export CHECKIN_LOG_LEVEL="${CHECKIN_LOG_LEVEL:-error}"
# shellcheck source=lib/local-services-env.sh
. "$ROOT/scripts/lib/local-services-env.sh"

zones="$(mktemp)"
declare -A pid port
cleanup() {
    for service in "${!pid[@]}"; do kill -TERM "${pid[$service]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -f "$zones"
}
trap cleanup EXIT

# getrusage's peak of the finished child: migrate exits before /proc could be read.
python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print("migrate: peak RSS %.0f MiB" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))' "$BIN" migrate
"$BIN" projects create load >/dev/null
"$LOAD_BIN" load "${LOAD[@]}" --print-zones >"$zones"
"$BIN" zones import --project load "$zones" 2> >(grep -v '^warning: fence' >&2) >/dev/null

services=(ingest evaluator notifier)
for service in "${services[@]}"; do
    port[$service]="$(free_port)"
    CHECKIN_HTTP_PORT="${port[$service]}" "$BIN" "$service" &
    pid[$service]=$!
done
for service in "${services[@]}"; do
    for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:${port[$service]}/ready" >/dev/null && break; sleep 0.5; done
    curl -sf "http://127.0.0.1:${port[$service]}/ready" >/dev/null || die "$service did not become ready"
done

# Resident kB (field VmRSS or VmHWM of /proc/PID/status) and CPU ticks (utime + stime).
status_kb() { awk -v field="$2:" '$1 == field { print $2 }' "/proc/$1/status"; }
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
declare -A idle idle_ticks ticks
sleep 5
for service in "${services[@]}"; do idle_ticks[$service]="$(cpu_ticks "${pid[$service]}")"; done
sleep 10
for service in "${services[@]}"; do
    idle[$service]="$(status_kb "${pid[$service]}" VmRSS)"
    ticks[$service]="$(cpu_ticks "${pid[$service]}")"
done

started=$SECONDS
"$LOAD_BIN" load --url "http://127.0.0.1:${port[ingest]}" --metrics "http://127.0.0.1:${port[evaluator]}/metrics" \
    "${LOAD[@]}" | sed 's/^/load: /'
elapsed=$((SECONDS - started))

hz="$(getconf CLK_TCK)"
printf '%-10s %13s %13s %16s %16s %15s\n' service "idle RSS MiB" "peak RSS MiB" "idle CPU cores" "CPU µs per fix" "loaded cores"
for service in "${services[@]}"; do
    used=$(($(cpu_ticks "${pid[$service]}") - ticks[$service]))
    awk -v s="$service" -v idle="${idle[$service]}" -v peak="$(status_kb "${pid[$service]}" VmHWM)" \
        -v idle_used=$((ticks[$service] - idle_ticks[$service])) -v used="$used" -v hz="$hz" -v fixes="$FIXES" \
        -v elapsed="$elapsed" 'BEGIN { printf "%-10s %13.0f %13.0f %16.3f %16.1f %15.2f\n", s, idle / 1024, peak / 1024,
            idle_used / hz / 10, used / hz * 1e6 / fixes, used / hz / (elapsed > 0 ? elapsed : 1) }'
done
echo "service-footprint: $FIXES fixes at $RATE fixes/s in ${elapsed} s (the load's own wait for the last webhooks included)"
