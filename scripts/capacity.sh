#!/usr/bin/env bash
# What a fix and a webhook cost on this machine, and what one evaluator, one notifier and
# one Postgres hold: the figures of docs/scaling.md.
#
#   CHECKIN_BINARY=<release build> scripts/capacity.sh [checkin-bench load options…]
#
# Three steps, each against a fresh broker and Postgres (scripts/with-services.sh, the
# Postgres started with pg_stat_statements loaded):
#   closed  a closed loop through `checkin dev` (scripts/load.sh), by default the dense load
#           --fixes 300000 --devices 3000 --batch 500 --concurrency 8 --webhooks-per-fix 0.17
#           --receive (options given replace these); per fix and per webhook: the CPU of each
#           process tree, Postgres's statements, rows and WAL, the broker's bytes
#   held    the same load with --hold-webhooks: the notifier's drain, deliveries/s
#   bench   `checkin-bench evaluator` (CHECKIN_CAPACITY_BENCH, default --fixes 300000
#           --fences 100000 --devices 2000, Postgres durability off): one evaluator's fixes/s
#
# CHECKIN_CAPACITY_STEPS  the steps to run (default "closed held bench")
# CHECKIN_CAPACITY_OUT    where each step's readings are kept (default a new directory
#                         under .local/capacity); the report is also written there
# CHECKIN_LOAD_FSYNC=on   Postgres durable for the load steps (see scripts/load.sh); the
#                         bench's is CHECKIN_CAPACITY_BENCH_FSYNC (off by default), set by
#                         scripts/postgres-durability.sh
#
# Run under scripts/with-services.sh already (CHECKIN_RUN_DIR set), it runs the one step
# named by CHECKIN_CAPACITY_STEP (default closed) against those services; their Postgres
# then needs CHECKIN_POSTGRES_EXTRA_OPTIONS="-c shared_preload_libraries=pg_stat_statements"
# for the statements (without it they are left out).
#
# The broker's bytes are what went through its TCP connections while the load ran (the
# kernel's bytes_received and bytes_sent of each established socket on its port, `ss -ti`):
# produce and fetch requests in, acknowledgements and fetched records out. The local broker
# (Tansu) keeps its topics in memory; its resident memory's growth is reported beside them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="$ROOT/scripts/capacity.sh"
DEFAULT_LOAD=(--fixes 300000 --devices 3000 --batch 500 --concurrency 8 --webhooks-per-fix 0.17 --receive)
PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on -c pg_stat_statements.max=2000"

admin_url() { echo "${CHECKIN_DATABASE_URL/\/\/checkin@/\/\/postgres@}"; }
admin_psql() { psql "$(admin_url)" -XtAq -v ON_ERROR_STOP=1 "$@"; }

# One reading of Postgres and the broker, into $CHECKIN_CAPACITY_WORK/<name>.*
reading() {
    local name="$1" work="$CHECKIN_CAPACITY_WORK"
    if [ "$name" = before ] && [ -f "$work/statements.on" ]; then
        admin_psql -c "SELECT pg_stat_statements_reset()" >/dev/null
    fi
    admin_psql -c "
        SELECT json_build_object(
            'time', extract(epoch FROM clock_timestamp()),
            'lsn', pg_current_wal_lsn()::text,
            'walBytesFromZero', pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'),
            'wal', (SELECT row_to_json(w) FROM pg_stat_wal w),
            'database', (SELECT json_build_object('commits', xact_commit, 'rollbacks', xact_rollback,
                    'inserted', tup_inserted, 'updated', tup_updated, 'deleted', tup_deleted,
                    'returned', tup_returned, 'fetched', tup_fetched)
                FROM pg_stat_database WHERE datname = current_database()),
            'tables', (SELECT json_object_agg(relname, json_build_object('inserted', n_tup_ins,
                    'updated', n_tup_upd, 'hotUpdated', n_tup_hot_upd, 'deleted', n_tup_del,
                    'bytes', pg_total_relation_size(relid)))
                FROM pg_stat_user_tables))" >"$work/$name.postgres.json"
    if [ -f "$work/statements.on" ] && [ "$name" = after ]; then
        admin_psql -c "
            SELECT coalesce(json_agg(json_build_object('query', s.query, 'calls', s.calls,
                    'rows', s.rows, 'execMs', s.total_exec_time, 'planMs', s.total_plan_time,
                    'walBytes', s.wal_bytes, 'blocks', s.shared_blks_hit + s.shared_blks_read)), '[]')
            FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
            WHERE r.rolname = 'checkin' AND s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())" \
            >"$work/statements.json"
    fi
    local port pid
    port="$(cat "$CHECKIN_RUN_DIR/broker.port")"
    pid="$(cat "$CHECKIN_RUN_DIR/broker.pid")"
    ss -tinH state established "( sport = :$port )" >"$work/$name.broker-sockets.txt"
    grep -E '^(VmRSS|VmHWM)' "/proc/$pid/status" >"$work/$name.broker-memory.txt" || true
}

# One step against the services of with-services.sh.
step() {
    local step="${CHECKIN_CAPACITY_STEP:-closed}"
    local work="${CHECKIN_CAPACITY_WORK:-$(mktemp -d)}"
    export CHECKIN_CAPACITY_WORK="$work"
    mkdir -p "$work"
    echo "$step" >"$work/step"
    if admin_psql -c "SHOW shared_preload_libraries" | grep -q pg_stat_statements; then
        admin_psql -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
        touch "$work/statements.on"
    else
        echo "capacity: pg_stat_statements is not loaded: statements are left out" >&2
    fi
    case "$step" in
    closed | held)
        local args=("$@")
        [ ${#args[@]} -gt 0 ] || args=("${DEFAULT_LOAD[@]}")
        [ "$step" = held ] && args+=(--hold-webhooks)
        echo "capacity: $step: load ${args[*]}" >&2
        CHECKIN_LOAD_HOOK="$SELF --reading" "$ROOT/scripts/load.sh" "${args[@]}" --json >"$work/load.out"
        # load.sh prints the zones' import before the load's JSON.
        sed -n '/^{/,$p' "$work/load.out" >"$work/load.json"
        admin_psql -c "SELECT name || '=' || setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections') ORDER BY name" >"$work/settings.txt"
        ;;
    bench)
        local bench
        read -r -a bench <<<"${CHECKIN_CAPACITY_BENCH:---fixes 300000 --fences 100000 --devices 2000}"
        # The checkin-bench beside the build measured: its evaluators are that build's.
        local bin
        bin="$(dirname "${CHECKIN_BINARY:-$("$ROOT/scripts/swift-bin-path.sh")/checkin}")/checkin-bench"
        "$ROOT/scripts/postgres-durability.sh" "${CHECKIN_CAPACITY_BENCH_FSYNC:-off}"
        echo "capacity: bench: $bin evaluator ${bench[*]}" >&2
        "$bin" evaluator "${bench[@]}" --json >"$work/bench.out"
        sed -n '/^{/,$p' "$work/bench.out" >"$work/bench.json"
        ;;
    *) echo "capacity: unknown step $step" >&2; exit 2 ;;
    esac
}

case "${1:-}" in
--reading) reading "$2"; exit 0 ;;
esac

if [ -n "${CHECKIN_RUN_DIR:-}" ] && [ -n "${CHECKIN_DATABASE_URL:-}" ]; then
    step "$@"
    python3 "$ROOT/scripts/lib/capacity_report.py" "$CHECKIN_CAPACITY_WORK"
    exit 0
fi

OUT="${CHECKIN_CAPACITY_OUT:-$ROOT/.local/capacity/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
for step in ${CHECKIN_CAPACITY_STEPS:-closed held bench}; do
    CHECKIN_CAPACITY_STEP="$step" CHECKIN_CAPACITY_WORK="$OUT/$step" \
        CHECKIN_POSTGRES_EXTRA_OPTIONS="${CHECKIN_POSTGRES_EXTRA_OPTIONS:-} $PG_OPTIONS" \
        "$ROOT/scripts/with-services.sh" "$SELF" "$@" >/dev/null
done
python3 "$ROOT/scripts/lib/capacity_report.py" "$OUT"/* | tee "$OUT/report.txt"
echo "capacity: readings in $OUT" >&2
