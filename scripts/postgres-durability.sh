#!/usr/bin/env bash
# Sets the durability of the Postgres of CHECKIN_DATABASE_URL for a measurement: on (fsync,
# synchronous_commit and full_page_writes on, Postgres's durable defaults) or off (all three
# off, the local development cluster's settings). A tool of this repository's measurements,
# run against the project's own throwaway clusters: the checkin binary never changes a
# server's settings. Prints the settings in force afterwards.
#
#   scripts/postgres-durability.sh on|off
#
# Server settings take a superuser: the cluster's postgres user (CHECKIN_DATABASE_URL with
# the user replaced), or CHECKIN_ADMIN_DATABASE_URL.
set -euo pipefail
case "${1:-}" in
on | off) value="$1" ;;
*) echo "usage: $0 on|off" >&2; exit 2 ;;
esac
[ -n "${CHECKIN_DATABASE_URL:-}" ] || { echo "postgres-durability: CHECKIN_DATABASE_URL is not set" >&2; exit 2; }
admin_url="${CHECKIN_ADMIN_DATABASE_URL:-${CHECKIN_DATABASE_URL/\/\/checkin@/\/\/postgres@}}"
for setting in fsync synchronous_commit full_page_writes; do
    psql "$admin_url" -Xq -c "ALTER SYSTEM SET $setting = $value"
done
psql "$admin_url" -Xq -c "SELECT pg_reload_conf()" >/dev/null
# The reload reaches the other sessions a moment later.
sleep 0.5
psql "$admin_url" -XtAq -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')" >&2
