#!/usr/bin/env bash
# Runs a command with a deadline, so a run that stops making progress fails with evidence
# instead of waiting for ever.
#
#   scripts/within.sh SECONDS CMD [ARGS...]
#
# Past the deadline it names the tests that started and did not end (from the command's
# Swift Testing output), writes the thread stacks of the command's processes to
# .local/hang-stacks.txt (with gdb, when the machine has it), stops them and exits 124.
# Otherwise the exit code is CMD's. Either way, no process CMD started outlives it: CMD runs
# with CHECKIN_TEST_STEP set, and whatever still holds it once CMD has ended is stopped
# (scripts/with-services.sh also stops its services, the tests' clusters and firewall rules).
set -uo pipefail
[ $# -gt 1 ] || { echo "usage: $0 SECONDS CMD [ARGS...]" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
limit="$1"
shift
mkdir -p "$ROOT/.local"
output="$(mktemp "$ROOT/.local/within.XXXXXX")"
trap 'rm -f "$output"' EXIT

. "$ROOT/scripts/lib/marked-processes.sh"

# A process group of its own, so that everything the command started can be found and stopped.
# The mark is the command's alone (set by env), not its output's `tee`, which must see it end.
set -m
env CHECKIN_TEST_STEP="$output" "$@" > >(tee -a "$output") 2>&1 &
child=$!
set +m
# The given processes but the `tee` of the command's output: a clean-up (scripts/with-services.sh
# stops its broker and Postgres) would die writing to a closed pipe.
all_but_tee() {
    local pid
    for pid in "$@"; do
        [ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" = "tee -a $output " ] || echo "$pid"
    done
}

# A TERM or INT is passed on, and the loop below waits for the command: a `wait` inside a trap
# was seen never to return when the command had already ended.
terminated=""
trap 'kill -TERM $(all_but_tee $(pgrep -g "$child")) 2>/dev/null; terminated=143' TERM INT

# Every process below `$1`, children first found: a process may start a group of its own
# (swift test runs the test binary so), which a signal to our group would miss.
descendants() {
    local pid
    for pid in $(pgrep -P "$1"); do
        echo "$pid"
        descendants "$pid"
    done
}

started=$SECONDS
waited=0
while kill -0 "$child" 2>/dev/null; do
    if [ "$waited" -ge "$limit" ]; then
        echo "within: '$*' still running after $limit s" >&2
        echo "within: tests started and not ended:" >&2
        sed -n 's/^.* Test \(.*\) started\.$/\1/p' "$output" | sort -u > "$output.started"
        sed -n 's/^.* Test \(.*\) \(passed\|failed\) after .*$/\1/p' "$output" | sort -u > "$output.ended"
        comm -23 "$output.started" "$output.ended" | sed 's/^/  /' >&2
        rm -f "$output.started" "$output.ended"
        if command -v gdb >/dev/null; then
            stacks="$ROOT/.local/hang-stacks.txt"
            : > "$stacks"
            for pid in $(descendants "$child"); do
                echo "--- process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)" >> "$stacks"
                gdb -p "$pid" -batch -ex "thread apply all bt 20" 2>/dev/null | grep -E '^(Thread|#)' | cut -c1-220 >> "$stacks"
            done
            echo "within: thread stacks in $stacks" >&2
        fi
        # Everything the command started first (a test binary may block SIGTERM, or run in a
        # group of its own), then the command itself, whose clean-up gets time to run.
        tree="$(all_but_tee $(descendants "$child"))"
        kill -KILL $tree 2>/dev/null
        kill -TERM "$child" 2>/dev/null
        for _ in $(seq 1 30); do
            kill -0 "$child" 2>/dev/null || break
            sleep 1
        done
        kill -KILL -- -"$child" $tree 2>/dev/null
        wait "$child" 2>/dev/null
        # Whatever left the command's tree (a process in a session of its own, one whose
        # parent died) and outlived its clean-up.
        stop_marked_processes CHECKIN_TEST_STEP "$output" within
        exit 124
    fi
    sleep 1
    waited=$((waited + 1))
done
wait "$child"
status=$?
stop_marked_processes CHECKIN_TEST_STEP "$output" within
[ -z "$terminated" ] || exit "$terminated"
# Each step's time, so that a run's log shows where its minutes went.
echo "within: '$(echo "$*" | cut -c1-100)' ended ($status) after $((SECONDS - started)) s" >&2
exit $status
