#!/usr/bin/env bash
# Runs `checkin demo` against the Postgres and broker that with-services.sh started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$("$ROOT/scripts/swift-bin-path.sh")/checkin"
[ -x "$BIN" ] || { echo "demo: $BIN is not built; run 'make build'" >&2; exit 1; }
exec "$BIN" demo "$@"
