#!/usr/bin/env bash
# Runs a project-local Postgres cluster on 127.0.0.1 (TCP only, trust auth),
# with a database `checkin` owned by a role `checkin`.
#
#   scripts/postgres.sh start    init once, start (or find running); last line: the URL
#   scripts/postgres.sh stop     stop (fast shutdown) and wait
#   scripts/postgres.sh status   print the URL and exit 0 when running, exit 1 otherwise
#   scripts/postgres.sh url      print postgres://checkin@127.0.0.1:PORT/checkin (running only)
#
# CHECKIN_POSTGRES_PORT  port (default 5433; when the default is busy a free
#                        port is picked; 0 = always pick a free one)
# CHECKIN_POSTGRES_DIR   the cluster's directory (default .local/postgres)
# CHECKIN_RUN_DIR        where the port file goes (default .local/run)
#
# The server refuses to run as root: as root it runs as the `postgres` user
# (runuser), which then owns the cluster; as anyone else it runs as that user.
# The cluster is for development and tests: fsync is off.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_DIR="${CHECKIN_RUN_DIR:-$ROOT/.local/run}"
BASE_DIR="${CHECKIN_POSTGRES_DIR:-$ROOT/.local/postgres}"
PORT_FILE="$RUN_DIR/postgres.port"

die() { echo "postgres: error: $*" >&2; exit 1; }

. "$ROOT/scripts/lib/ports.sh"

BIN_DIR="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
[ -n "$BIN_DIR" ] && [ -x "$BIN_DIR/pg_ctl" ] || die "no Postgres server installed: run scripts/setup.sh first"

# Runs a server-side command as the cluster's owner.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# The data directory. As root it must be reachable by the `postgres` user; a
# checkout under a private home is not, so the cluster then lives in /var/tmp
# and .local/postgres points there.
data_dir() {
    if [ -L "$BASE_DIR" ]; then
        readlink -f "$BASE_DIR"
    else
        echo "$BASE_DIR"
    fi
}

init_cluster() {
    local data
    data="$(data_dir)"
    [ -f "$data/PG_VERSION" ] && return 0
    mkdir -p "$(dirname "$BASE_DIR")"
    if [ "$(id -u)" -eq 0 ]; then
        mkdir -p "$BASE_DIR"
        chown postgres: "$BASE_DIR"
        if ! runuser -u postgres -- test -w "$BASE_DIR"; then
            rmdir "$BASE_DIR"
            data="/var/tmp/checkin-postgres/$(echo "$BASE_DIR" | cksum | cut -d' ' -f1)"
            mkdir -p "$data"
            chmod 755 /var/tmp/checkin-postgres
            chown postgres: "$data"
            ln -sfn "$data" "$BASE_DIR"
        fi
    fi
    local out
    out="$(as_owner "$BIN_DIR/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync 2>&1)" ||
        { echo "$out" >&2; die "initdb failed"; }
    # TCP on loopback only (no unix socket: its path could be too long or unwritable).
    as_owner tee -a "$data/postgresql.conf" >/dev/null <<'EOF'

# Written by scripts/postgres.sh: a local development and test cluster.
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    as_owner tee "$data/pg_hba.conf" >/dev/null <<'EOF'
# Written by scripts/postgres.sh: trust on loopback TCP only.
host all all 127.0.0.1/32 trust
EOF
}

running_port() {
    local data
    data="$(data_dir)"
    [ -f "$data/postmaster.pid" ] || return 1
    as_owner "$BIN_DIR/pg_ctl" -D "$data" status >/dev/null 2>&1 || return 1
    # Line 4 of postmaster.pid is the port the server listens on.
    sed -n 4p "$data/postmaster.pid"
}

url() { echo "postgres://checkin@127.0.0.1:$1/checkin"; }

psql_admin() {
    "$BIN_DIR/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d postgres -tA -c "$2"
}

ensure_database() {
    local port="$1"
    if [ "$(psql_admin "$port" "select 1 from pg_roles where rolname = 'checkin'")" != 1 ]; then
        psql_admin "$port" "create role checkin login createdb"
    fi
    if [ "$(psql_admin "$port" "select 1 from pg_database where datname = 'checkin'")" != 1 ]; then
        psql_admin "$port" "create database checkin owner checkin"
    fi
}

start() {
    local port
    if port="$(running_port)"; then
        mkdir -p "$RUN_DIR" && echo "$port" >"$PORT_FILE"
        url "$port"
        return 0
    fi
    port="${CHECKIN_POSTGRES_PORT:-}"
    local picked=false
    if [ -z "$port" ]; then
        port=5433
        port_busy "$port" && port="$(free_port)" && picked=true
    elif [ "$port" = 0 ]; then
        port="$(free_port)"
        picked=true
    elif port_busy "$port"; then
        die "port $port (CHECKIN_POSTGRES_PORT) is already in use"
    fi
    init_cluster
    local data log attempt=1
    data="$(data_dir)"
    log="$data/server.log"
    # A picked port can still be taken before the server binds it: then another is picked.
    until as_owner "$BIN_DIR/pg_ctl" -D "$data" -l "$log" -o "-p $port ${CHECKIN_POSTGRES_EXTRA_OPTIONS:-}" -w -t 30 start >/dev/null; do
        if $picked && [ $attempt -lt 3 ] && as_owner grep -q "could not bind" "$log"; then
            port="$(free_port)"
            attempt=$((attempt + 1))
            continue
        fi
        as_owner tail -n 20 "$log" >&2 || true
        die "the server did not start (log: $log)"
    done
    mkdir -p "$RUN_DIR"
    echo "$port" >"$PORT_FILE"
    ensure_database "$port"
    echo "postgres: started (data $data)" >&2
    url "$port"
}

stop() {
    local data
    data="$(data_dir)"
    if running_port >/dev/null; then
        as_owner "$BIN_DIR/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null
        echo "postgres: stopped" >&2
    fi
    rm -f "$PORT_FILE"
}

status() {
    local port
    if port="$(running_port)"; then
        url "$port"
    else
        echo "postgres: not running" >&2
        return 1
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    url) status ;;
    *) echo "usage: $0 start|stop|status|url" >&2; exit 2 ;;
esac
