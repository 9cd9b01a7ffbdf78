#!/usr/bin/env bash
# Runs a local Kafka-compatible broker (Tansu, installed by scripts/setup.sh)
# in the background on 127.0.0.1.
#
#   scripts/broker.sh start    start (or find running); last line: 127.0.0.1:PORT
#   scripts/broker.sh stop     stop and wait until it has exited
#   scripts/broker.sh status   print the address and exit 0 when running, exit 1 otherwise
#
# CHECKIN_BROKER_PORT  port to listen on (default 9092; when the default is
#                      busy a free port is picked; 0 = always pick a free one)
# CHECKIN_RUN_DIR      where pid, port and log files go (default .local/run)
#
# Tansu keeps everything in memory: a restart loses all topics and offsets.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_DIR="${CHECKIN_RUN_DIR:-$ROOT/.local/run}"
PID_FILE="$RUN_DIR/broker.pid"
PORT_FILE="$RUN_DIR/broker.port"
LOG_FILE="$RUN_DIR/broker.log"

die() { echo "broker: error: $*" >&2; exit 1; }

. "$ROOT/scripts/lib/ports.sh"

running_pid() {
    local pid
    [ -f "$PID_FILE" ] || return 1
    pid="$(cat "$PID_FILE")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

tansu_binary() {
    local bin
    for bin in "$ROOT/.local/bin/tansu" "$(command -v tansu 2>/dev/null || true)"; do
        [ -n "$bin" ] && [ -x "$bin" ] && { echo "$bin"; return 0; }
    done
    die "no tansu binary: run scripts/setup.sh first"
}

start() {
    if running_pid >/dev/null; then
        echo "127.0.0.1:$(cat "$PORT_FILE")"
        return 0
    fi
    local port="${CHECKIN_BROKER_PORT:-}"
    if [ -z "$port" ]; then
        port=9092
        port_busy "$port" && port="$(free_port)"
    elif [ "$port" = 0 ]; then
        port="$(free_port)"
    elif port_busy "$port"; then
        die "port $port (CHECKIN_BROKER_PORT) is already in use"
    fi
    local bin
    bin="$(tansu_binary)"
    mkdir -p "$RUN_DIR"
    # setsid: the broker outlives this script and is not hit by the terminal's Ctrl-C.
    setsid "$bin" broker \
        --listener-url "tcp://127.0.0.1:$port" \
        --advertised-listener-url "tcp://127.0.0.1:$port" \
        --storage-engine "memory://tansu/" \
        </dev/null >"$LOG_FILE" 2>&1 &
    local pid=$!
    echo "$pid" >"$PID_FILE"
    echo "$port" >"$PORT_FILE"
    local deadline=$((SECONDS + 15))
    until port_busy "$port"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$LOG_FILE" >&2
            rm -f "$PID_FILE" "$PORT_FILE"
            die "the broker exited at start-up (log: $LOG_FILE)"
        fi
        if [ $SECONDS -ge $deadline ]; then
            stop >/dev/null
            die "the broker did not accept connections on 127.0.0.1:$port within 15 s"
        fi
        sleep 0.05
    done
    echo "broker: started (pid $pid, log $LOG_FILE)" >&2
    echo "127.0.0.1:$port"
}

stop() {
    local pid
    if pid="$(running_pid)"; then
        kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 10))
        while kill -0 "$pid" 2>/dev/null; do
            if [ $SECONDS -ge $deadline ]; then
                kill -KILL "$pid" 2>/dev/null || true
            fi
            sleep 0.05
        done
        echo "broker: stopped" >&2
    fi
    rm -f "$PID_FILE" "$PORT_FILE"
}

status() {
    if running_pid >/dev/null; then
        echo "127.0.0.1:$(cat "$PORT_FILE")"
    else
        echo "broker: not running" >&2
        return 1
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
