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
# The exit code is CMD's; the services are stopped however CMD ends.
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

# Stops processes still configured for this run's broker: services a test started
# and could not stop itself (it crashed, or was killed) must not outlive the run.
# Bash builtins only, so that no helper process of this scan matches itself.
stop_leftovers() {
    [ -n "${CHECKIN_KAFKA_BROKERS:-}" ] || return 0
    local environ pid vars var command
    for environ in /proc/[0-9]*/environ; do
        pid="${environ#/proc/}"
        pid="${pid%/environ}"
        [ "$pid" = "$$" ] && continue
        { mapfile -d '' vars <"$environ"; } 2>/dev/null || continue
        for var in "${vars[@]}"; do
            if [ "$var" = "CHECKIN_KAFKA_BROKERS=$CHECKIN_KAFKA_BROKERS" ]; then
                { mapfile -d '' command <"/proc/$pid/cmdline"; } 2>/dev/null || command=()
                echo "with-services: stopping leftover process $pid: ${command[*]:0:6}" >&2
                kill -KILL "$pid" 2>/dev/null || true
                break
            fi
        done
    done
}

cleanup() {
    stop_leftovers
    "$ROOT/scripts/broker.sh" stop 2>/dev/null || true
    "$ROOT/scripts/postgres.sh" stop 2>/dev/null || true
    # A checkout the postgres user cannot reach keeps its cluster in /var/tmp (see postgres.sh).
    if [ -L "$CHECKIN_POSTGRES_DIR" ]; then rm -rf "$(readlink -f "$CHECKIN_POSTGRES_DIR")"; fi
    rm -rf "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

CHECKIN_KAFKA_BROKERS="$("$ROOT/scripts/broker.sh" start | tail -n1)"
CHECKIN_DATABASE_URL="$("$ROOT/scripts/postgres.sh" start | tail -n1)"
export CHECKIN_KAFKA_BROKERS CHECKIN_DATABASE_URL
echo "with-services: CHECKIN_KAFKA_BROKERS=$CHECKIN_KAFKA_BROKERS CHECKIN_DATABASE_URL=$CHECKIN_DATABASE_URL" >&2

# The command runs in the background so that a TERM (a deadline's, a CI's) reaches this
# shell at once, is passed on to the command and then the services are stopped: a shell
# waiting on a foreground command would run its trap only once the command had ended.
set +e
"$@" <&0 &
command=$!
trap 'kill -TERM "$command" 2>/dev/null; wait "$command"; exit 143' TERM
trap 'kill -INT "$command" 2>/dev/null; wait "$command"; exit 130' INT
wait "$command"
status=$?
set -e
exit $status
