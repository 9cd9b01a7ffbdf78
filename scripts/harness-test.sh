#!/usr/bin/env bash
# The test harness's own test: a run that scripts/within.sh stops at its deadline leaves
# nothing behind. The run (scripts/with-services.sh) starts what tests start and escape the
# run's process tree with: a process in a session of its own (as the broker is started), a
# private Postgres cluster (as Tests/IntegrationTests' PrivatePostgres makes one), a process
# in a group of its own pointed at another broker (as a test's `checkin dev` may be), whose
# parent is gone, and, as root with iptables, a firewall rule; then it waits for ever.
#
#   scripts/harness-test.sh
#
# Checks: the exit status is 124; none of those processes is alive, nor the cluster's
# server; neither the cluster's directory nor the run's is left; no rule of the run is.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Long enough for both clusters' initdb on two busy cores; the run waits for ever after.
DEADLINE="${HARNESS_TEST_DEADLINE:-20}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "harness-test: FAILED: $*" >&2; failures=$((failures + 1)); }

# Each process the run starts is written to $WORK/processes as "PID WHAT".
cat >"$WORK/run.sh" <<'RUN'
#!/usr/bin/env bash
set -euo pipefail
ROOT="$1"
WORK="$2"
# The same directory as CHECKIN_TEST_RUN, which a harness without the mark does not set: this
# test then still runs, and fails.
run="$CHECKIN_RUN_DIR"
echo "$run" >"$WORK/run-dir"
echo "$(cat "$CHECKIN_RUN_DIR/broker.pid") the broker" >>"$WORK/processes"
echo "$(head -n1 "$(readlink -f "$CHECKIN_POSTGRES_DIR")/postmaster.pid") the run's Postgres" >>"$WORK/processes"
echo "$$ the command" >>"$WORK/processes"

setsid -f bash -c 'echo "$$ a process in a session of its own" >>"$1/processes"; exec sleep 1001' - "$WORK"
# The group of its own a test's Process gets, its parent (this subshell) gone at once.
(
    set -m
    CHECKIN_KAFKA_BROKERS=127.0.0.1:9 bash -c \
        'echo "$$ a process pointed at another broker" >>"$1/processes"; exec sleep 1002' - "$WORK" &
)

cluster="$run/clusters/harness-test"
mkdir -p "$cluster"
chmod 755 "$cluster"
CHECKIN_POSTGRES_DIR="$cluster/cluster" CHECKIN_RUN_DIR="$cluster" CHECKIN_POSTGRES_PORT=0 \
    "$ROOT/scripts/postgres.sh" start </dev/null >/dev/null 2>&1
data="$(readlink -f "$cluster/cluster")"
echo "$data" >"$WORK/data"
echo "$(head -n1 "$data/postmaster.pid") the private cluster's server" >>"$WORK/processes"

if [ "$(id -u)" -eq 0 ] && command -v iptables >/dev/null; then
    # Appended, for loopback's discard port alone: no one else's rule is overtaken.
    iptables -A OUTPUT -o lo -p tcp --dport 9 -m comment --comment "checkin-test-run $run" \
        -j REJECT --reject-with tcp-reset
    echo "checkin-test-run $run" >"$WORK/rule"
fi
echo started >"$WORK/started"
sleep 1003
RUN
chmod +x "$WORK/run.sh"

status=0
"$ROOT/scripts/within.sh" "$DEADLINE" "$ROOT/scripts/with-services.sh" "$WORK/run.sh" "$ROOT" "$WORK" \
    >"$WORK/output" 2>&1 || status=$?

[ "$status" -eq 124 ] || fail "within.sh exited $status, not 124"
[ -f "$WORK/started" ] ||
    fail "the run was stopped before it had started everything: give it more time (HARNESS_TEST_DEADLINE, now $DEADLINE s)"

# A killed process is gone once reaped; a zombie waiting for that counts as gone.
alive() {
    local state
    state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)"
    [ -n "$state" ] && [ "$state" != Z ]
}

left=()
while read -r pid what; do
    if alive "$pid"; then
        fail "$what (pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-120)) outlived the run"
        left+=("$pid")
    fi
done < <(cat "$WORK/processes" 2>/dev/null)
run_dir="$(cat "$WORK/run-dir" 2>/dev/null || true)"
if [ -n "$run_dir" ]; then
    ! pgrep -f -- "$run_dir" >/dev/null || fail "a process naming $run_dir outlived the run: $(pgrep -af -- "$run_dir")"
    [ ! -e "$run_dir" ] || fail "the run's directory $run_dir was left behind"
fi
data="$(cat "$WORK/data" 2>/dev/null || true)"
if [ -n "$data" ]; then
    ! pgrep -f -- "-D $data" >/dev/null || fail "a server of $data outlived the run"
    [ ! -e "$data" ] || fail "the private cluster's directory $data was left behind"
fi
rule="$(cat "$WORK/rule" 2>/dev/null || true)"
if [ -n "$rule" ] && iptables -S | grep -qF "\"$rule\""; then
    fail "the run's iptables rule was left behind: $(iptables -S | grep -F "\"$rule\"")"
fi

if [ "$failures" -gt 0 ]; then
    echo "harness-test: the run's output:" >&2
    sed 's/^/  /' "$WORK/output" >&2
    # What the run left is not left on the machine by this test too.
    [ ${#left[@]} -eq 0 ] || kill -KILL "${left[@]}" 2>/dev/null || true
    [ -z "$data" ] || rm -rf "$data"
    [ -z "$run_dir" ] || rm -rf "$run_dir"
    while [ -n "$rule" ] && iptables -D OUTPUT -o lo -p tcp --dport 9 -m comment --comment "$rule" \
        -j REJECT --reject-with tcp-reset 2>/dev/null; do :; done
    exit 1
fi
# What the clean-up found, counted, as evidence that it did the work (its own lines stay in
# the run's output, shown on a failure: a passing run prints no line about leftovers).
stopped="$(grep -cE '^(with-services|within): stopping' "$WORK/output" || true)"
deleted="$(grep -cE '^(with-services|within): deleting' "$WORK/output" || true)"
echo "harness-test: a run stopped at its deadline (exit 124) left no process, cluster, directory or firewall rule behind (its clean-up stopped $stopped processes and deleted $deleted rules)"
