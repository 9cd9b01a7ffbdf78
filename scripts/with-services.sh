#!/usr/bin/env bash
# Runs a command against a fresh broker and a fresh Postgres, then stops both.
#
#   scripts/with-services.sh CMD [ARGS...]
#
# Both listen on free ports and keep their files in a private directory under
# .local/run, so a developer's running `broker.sh`/`postgres.sh` services are
# left alone. CMD sees:
#   CHECKIN_KAFKA_BROKERS   127.0.0.1:PORT
#   CHECKIN_DATABASE_URL    postgres://checkin@127.0.0.1:PORT/checkin
#   CHECKIN_TEST_RUN        this run's directory, which marks what the run started
# The exit code is CMD's; the services are stopped however CMD ends.
#
# However CMD ends, nothing it started outlives the run: every process whose environment
# still holds CHECKIN_TEST_RUN (whatever else it changed, whatever group or session it put
# itself in) is stopped; the Postgres clusters a test makes of its own, kept in
# $CHECKIN_TEST_RUN/clusters/NAME (NAME/cluster being their CHECKIN_POSTGRES_DIR), are
# stopped and removed; iptables rules whose comment is "checkin-test-run $CHECKIN_TEST_RUN"
# are deleted.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }

mkdir -p "$ROOT/.local/run"
RUN_DIR="$(mktemp -d "$ROOT/.local/run/services.XXXXXX")"
# The postgres user (when run as root) must be able to reach the cluster inside.
chmod 755 "$RUN_DIR"
export CHECKIN_RUN_DIR="$RUN_DIR"
export CHECKIN_POSTGRES_DIR="$RUN_DIR/postgres"
export CHECKIN_BROKER_PORT=0
export CHECKIN_POSTGRES_PORT=0

. "$ROOT/scripts/lib/marked-processes.sh"

# Stops a Postgres cluster postgres.sh started in DIR (its CHECKIN_POSTGRES_DIR) and removes
# its files, and those in /var/tmp that a checkout the postgres user cannot reach uses instead.
remove_cluster() {
    local dir="$1" run_dir="$2"
    CHECKIN_POSTGRES_DIR="$dir" CHECKIN_RUN_DIR="$run_dir" "$ROOT/scripts/postgres.sh" stop 2>/dev/null || true
    if [ -L "$dir" ]; then rm -rf "$(readlink -f "$dir")"; fi
}

# Deletes the iptables rules this run's tests added and did not delete themselves.
remove_firewall_rules() {
    local tag="checkin-test-run $RUN_DIR" chain number
    [ "$(id -u)" -eq 0 ] && command -v iptables >/dev/null || return 0
    for chain in $(iptables -S 2>/dev/null | sed -n 's/^-[NP] \([^ ]*\).*/\1/p'); do
        # From the last, so that the numbers of the rules still to delete do not change.
        for number in $(iptables -L "$chain" -n --line-numbers 2>/dev/null | grep -F "/* $tag */" | cut -d' ' -f1 | sort -rn); do
            echo "with-services: deleting leftover iptables rule $chain $number ($tag)" >&2 || true
            iptables -D "$chain" "$number" || true
        done
    done
}

cleanup() {
    # A deadline's TERM, which may come as the command ends, must not cut the clean-up short,
    # nor a reader of its output that has gone.
    trap '' TERM INT PIPE
    # What the command left running first, sparing the servers of the tests' own clusters:
    # they are stopped properly next, so that none leaves shared memory behind.
    stop_marked_processes CHECKIN_TEST_RUN "$RUN_DIR" with-services postgres
    # One after the other: a `wait` for jobs in this trap was seen never to return.
    local cluster
    for cluster in "$RUN_DIR"/clusters/*/; do
        [ -d "$cluster" ] && remove_cluster "${cluster}cluster" "${cluster%/}"
    done
    # And any that did not stop.
    stop_marked_processes CHECKIN_TEST_RUN "$RUN_DIR" with-services
    remove_firewall_rules
    "$ROOT/scripts/broker.sh" stop 2>/dev/null || true
    remove_cluster "$CHECKIN_POSTGRES_DIR" "$RUN_DIR"
    rm -rf "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

CHECKIN_KAFKA_BROKERS="$("$ROOT/scripts/broker.sh" start | tail -n1)"
CHECKIN_DATABASE_URL="$("$ROOT/scripts/postgres.sh" start | tail -n1)"
export CHECKIN_KAFKA_BROKERS CHECKIN_DATABASE_URL
# Exported after the services started, so that the broker and Postgres are stopped by their
# scripts rather than found among the leftovers.
export CHECKIN_TEST_RUN="$RUN_DIR"
echo "with-services: CHECKIN_KAFKA_BROKERS=$CHECKIN_KAFKA_BROKERS CHECKIN_DATABASE_URL=$CHECKIN_DATABASE_URL" >&2

# The command runs in the background so that a TERM (a deadline's, a CI's) reaches this
# shell at once, is passed on to the command and then the services are stopped: a shell
# waiting on a foreground command would run its trap only once the command had ended.
# The traps only pass the signal on: a `wait` inside a trap was seen never to return when the
# command had ended as the signal came, and then the services were never stopped.
set +e
"$@" <&0 &
command=$!
signalled=""
trap 'kill -TERM "$command" 2>/dev/null; signalled=143' TERM
trap 'kill -INT "$command" 2>/dev/null; signalled=130' INT
while :; do
    wait "$command"
    status=$?
    # A signal ends `wait` early; the command may still be stopping.
    kill -0 "$command" 2>/dev/null || break
done
set -e
exit "${signalled:-$status}"
