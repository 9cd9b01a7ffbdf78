#!/usr/bin/env bash
# Tests what operators run beside the pipeline, against the real thing:
#
# 1. promtool: the alert rules and the compose Prometheus configuration are valid,
#    and deploy/prometheus/alerts_test.yml (series that fire each alert and series
#    that must not) passes;
# 2. the Grafana dashboard and its provisioning files have the structure Grafana reads;
# 3. a real Prometheus scrapes `checkin dev` under `checkin-bench load`, and every panel's
#    expression and every series an alert is built on returns data, and Prometheus
#    evaluates every rule without error.
#
#   scripts/with-services.sh scripts/observability-test.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${CHECKIN_BINARY:-$("$ROOT/scripts/swift-bin-path.sh")/checkin}"
die() { echo "observability-test: $*" >&2; exit 1; }
LOAD_BIN="$(dirname "$BIN")/checkin-bench"
[ -x "$LOAD_BIN" ] || die "no $LOAD_BIN: build it (swift build --product checkin-bench)"
say() { echo "observability-test: $*" >&2; }
# shellcheck source=lib/ports.sh
. "$ROOT/scripts/lib/ports.sh"

command -v promtool >/dev/null || die "promtool is missing (Debian package prometheus; scripts/setup.sh installs it)"
[ -x "$BIN" ] || die "$BIN is not built"
[ -n "${CHECKIN_KAFKA_BROKERS:-}" ] || die "run under scripts/with-services.sh"

started=$SECONDS
promtool check rules "$ROOT/deploy/prometheus/alerts.yml" >/dev/null
promtool check config "$ROOT/deploy/prometheus/prometheus.yml" >/dev/null
promtool test rules "$ROOT/deploy/prometheus/alerts_test.yml" >/dev/null ||
    { promtool test rules "$ROOT/deploy/prometheus/alerts_test.yml" >&2 || true; die "alert unit tests failed"; }
python3 "$ROOT/scripts/lib/observability_check.py" dashboard "$ROOT/deploy/grafana"
say "rules, alert unit tests and dashboard structure: ok"

WORK="$(mktemp -d "${CHECKIN_RUN_DIR:-/tmp}/observability.XXXXXX")"
PORT="$(free_port)"
PROM_PORT="$(free_port)"
DEAD_PORT="$(free_port)"
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

export CHECKIN_LOG_LEVEL=warning
# The partners are local http servers, and the webhook secrets are sealed under one key
# for the CLI and the service alike.
export CHECKIN_WEBHOOK_ALLOW_PRIVATE=true CHECKIN_WEBHOOK_ALLOW_HTTP=true
CHECKIN_SECRET_KEY="$(head -c 32 /dev/urandom | base64)"
export CHECKIN_SECRET_KEY
"$BIN" projects create observability >/dev/null
"$BIN" zones import --project observability "$ROOT/examples/zones.json" >/dev/null
# A partner that never answers: deliveries queue and retry, so the backlog has series.
"$BIN" webhooks add --project observability --url "http://127.0.0.1:$DEAD_PORT/hooks" >/dev/null

CHECKIN_HTTP_PORT="$PORT" CHECKIN_INGEST_REQUIRE_API_KEY=false CHECKIN_WEBHOOK_RETRY_DELAY=1 \
    "$BIN" dev >"$WORK/dev.log" 2>&1 &
pids+=($!)

cat >"$WORK/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/deploy/prometheus/alerts.yml
scrape_configs:
  - job_name: checkin-dev
    static_configs:
      - targets: ["127.0.0.1:$PORT"]
CONFIG
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
pids+=($!)

for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { tail -n 30 "$WORK/dev.log" >&2; die "checkin dev did not start"; }
"$LOAD_BIN" load --url "http://127.0.0.1:$PORT" --project observability --fixes 4000 --devices 40 \
    --metrics "http://127.0.0.1:$PORT/metrics" --timeout 60 >&2
python3 "$ROOT/scripts/lib/observability_check.py" prometheus "$ROOT/deploy" "http://127.0.0.1:$PROM_PORT" ||
    { tail -n 20 "$WORK/prometheus.log" >&2; die "Prometheus did not return data for every panel and alert"; }
say "every panel and alert has data in a real Prometheus scraping checkin dev: ok ($((SECONDS - started)) s)"
