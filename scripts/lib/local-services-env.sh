# Sourced by the scripts that run the services as processes of their own against the local
# broker and Postgres (scripts/rolling-restart.sh, scripts/service-footprint.sh).
#
# Services refuse to start without a key to seal webhook secrets with; any key will do here
# (the load tool seals its endpoint's secret with the same).
export CHECKIN_SECRET_KEY="${CHECKIN_SECRET_KEY:-$(head -c 32 /dev/urandom | base64)}"
# The local broker's consumer groups need short timeouts and fetch waits, as `checkin dev`
# sets them (docs/configuration.md); the load tool's endpoint is on this machine, over http.
export CHECKIN_KAFKA_SESSION_TIMEOUT_MS=6000 CHECKIN_KAFKA_HEARTBEAT_INTERVAL_MS=1000
export CHECKIN_KAFKA_MAX_POLL_INTERVAL_MS=10000 CHECKIN_KAFKA_PROPERTY_fetch_wait_max_ms=40
export CHECKIN_KAFKA_COMMIT_INTERVAL_MS=1000 CHECKIN_INGEST_LINGER_MS=50
export CHECKIN_WEBHOOK_ALLOW_PRIVATE=true CHECKIN_WEBHOOK_ALLOW_HTTP=true CHECKIN_INGEST_REQUIRE_API_KEY=false
