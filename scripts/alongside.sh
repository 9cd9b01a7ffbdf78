#!/usr/bin/env bash
# Runs a step beside the others and collects it later: a step that needs neither the build
# nor the services (the Kubernetes manifests' test) then takes no time of the run's own.
#
#   scripts/alongside.sh start NAME CMD [ARGS...]   starts CMD in the background, its output
#                                                   kept in .local/alongside/NAME.log
#   scripts/alongside.sh finish NAME                waits for it, prints its output and exits
#                                                   with its status
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.local/alongside"
usage() { echo "usage: $0 start NAME CMD [ARGS...] | finish NAME" >&2; exit 2; }
[ $# -ge 2 ] || usage
action="$1"
name="$2"
shift 2

case "$action" in
start)
    [ $# -gt 0 ] || usage
    mkdir -p "$DIR"
    rm -f "$DIR/$name.status" "$DIR/$name.log"
    ( "$@" >"$DIR/$name.log" 2>&1 </dev/null; echo $? >"$DIR/$name.status" ) &
    echo $! >"$DIR/$name.pid"
    ;;
finish)
    [ -f "$DIR/$name.pid" ] || { echo "alongside: $name was not started" >&2; exit 2; }
    pid="$(cat "$DIR/$name.pid")"
    # The status is written last; a step that died without writing it (killed) failed.
    while [ ! -f "$DIR/$name.status" ] && kill -0 "$pid" 2>/dev/null; do sleep 1; done
    cat "$DIR/$name.log" 2>/dev/null
    status="$(cat "$DIR/$name.status" 2>/dev/null || echo 1)"
    rm -f "$DIR/$name.pid" "$DIR/$name.status"
    exit "$status"
    ;;
*) usage ;;
esac
