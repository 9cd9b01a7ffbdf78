#!/usr/bin/env bash
# Tests the load tool's measurement of the notifier against `checkin dev`: with
# --hold-webhooks no webhook arrives before every one due is queued, and then each of them
# arrives once, signed, naming the fix that decided it (by an event id the engine gave it
# offline too), and the drain is timed from the endpoints' enabling; the CPU of the run is
# counted for each process tree.
#
#   scripts/with-services.sh scripts/load-test.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "load-test: $*" >&2; exit 1; }
# shellcheck source=lib/ports.sh
. "$ROOT/scripts/lib/ports.sh"
[ -n "${CHECKIN_KAFKA_BROKERS:-}" ] || die "run under scripts/with-services.sh"

started=$SECONDS
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
# One request at a time: with 60 devices a device's fixes are in neighbouring requests, and
# requests in flight together could reach the broker out of order (a fix after its
# successor is late, and decides nothing), while the webhooks due are counted in order.
CHECKIN_LOAD_PORT="$(free_port)" "$ROOT/scripts/load.sh" --fixes 3000 --devices 60 --batch 100 --concurrency 1 \
    --webhooks-per-fix 0.17 --receive --endpoints 2 --hold-webhooks --timeout 120 --json >"$out"
python3 - "$out" <<'CHECK' || { cat "$out" >&2; die "the held run's figures are not what they must be"; }
import json, sys

lines = open(sys.argv[1]).read().splitlines()
summary = json.loads("\n".join(lines[lines.index("{"):]))
due, webhooks, drain = summary["expectedWebhooks"], summary["webhooks"], summary["drain"]
problems = []
if due < 100:
    problems.append(f"only {due} webhooks due: the trip is not dense")
if drain["deliveries"] != due:
    problems.append(f"{drain['deliveries']} deliveries queued when released, {due} due")
if drain["receivedBeforeRelease"] != 0:
    problems.append(f"{drain['receivedBeforeRelease']} webhooks came while the endpoints were held")
if webhooks["received"] != due or webhooks["duplicates"] != 0 or webhooks["badSignatures"] != 0:
    problems.append(f"received {webhooks['received']} of {due}, {webhooks['duplicates']} twice, {webhooks['badSignatures']} unsigned")
if webhooks["unmatched"] != 0:
    problems.append(f"{webhooks['unmatched']} webhooks named no fix of the run")
if webhooks["namedByBody"] != 0:
    problems.append(f"{webhooks['namedByBody']} webhooks had ids the trip's own run of the engine did not decide")
if not (summary.get("drainSeconds", 0) > 0 and drain["releasedSeconds"] >= drain["queuedSeconds"]):
    problems.append(f"times out of order: {drain}, drained in {summary.get('drainSeconds')} s")
# CPU by process tree: each of the pipeline, Postgres and the broker worked, and the named
# trees together spent no more than the machine did.
cpu = summary["cpu"]
for tree in ("checkin", "postgres", "broker", "load"):
    if not cpu["seconds"].get(tree, 0) > 0:
        problems.append(f"no CPU counted for {tree}: {cpu['seconds']}")
named = sum(seconds for tree, seconds in cpu["seconds"].items() if tree != "other")
if named > cpu["machineSeconds"] * 1.05 + 0.5:
    problems.append(f"the trees spent {named:.1f} s, more than the machine's {cpu['machineSeconds']:.1f} s")
for problem in problems:
    print("load-test:", problem, file=sys.stderr)
sys.exit(1 if problems else 0)
CHECK
echo "load-test: every webhook held until all were queued, then each delivered once: ok ($((SECONDS - started)) s)" >&2
