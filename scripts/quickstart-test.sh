#!/usr/bin/env bash
# Runs the README's quickstart (the shell block between `<!-- quickstart:begin -->` and
# `<!-- quickstart:end -->`) as it is written, against the Postgres and broker of
# with-services.sh, and checks that it shows what the README says it shows: every command
# succeeds; the partner receives a zone.checkin and then a zone.checkout, signatures
# verified, with the zone's custom data, each body as openapi.yaml's `webhooks:` describe
# it; the device's decisions list the check-in.
#
#   scripts/with-services.sh scripts/quickstart-test.sh
#
# The only changes to the commands: the API's port 8080 and the receiver's port 9000 become
# free ones, so that the test runs beside anything else.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.local/api-test-venv"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "quickstart-test: $*" >&2; exit 1; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
api_port="$(free_port)"
receiver_port="$(free_port)"

# The block, without its fences.
sed -n '/^<!-- quickstart:begin -->$/,/^<!-- quickstart:end -->$/p' "$ROOT/README.md" |
    sed -e '/^<!--/d' -e '/^```/d' >"$WORK/quickstart.sh"
[ -s "$WORK/quickstart.sh" ] || fail "the README has no quickstart block"
grep -q '8080' "$WORK/quickstart.sh" && grep -q '9000' "$WORK/quickstart.sh" ||
    fail "the quickstart no longer uses ports 8080 and 9000, which this test moves"
sed -i -e "s/8080/$api_port/g" -e "s/9000/$receiver_port/g" "$WORK/quickstart.sh"

echo "quickstart-test: running the README's $(grep -cv '^\s*\(#.*\)\?$' "$WORK/quickstart.sh") command lines"
(cd "$ROOT" && CHECKIN_HTTP_PORT="$api_port" bash -euo pipefail "$WORK/quickstart.sh") >"$WORK/output.txt" 2>"$WORK/errors.txt" || {
    cat "$WORK/output.txt" "$WORK/errors.txt" >&2
    fail "a command of the quickstart failed (above)"
}

# What the quickstart printed: the zones answer, the two webhooks (one JSON line each, from
# the receiver), the decisions and the deliveries.
# Run by the API test's virtualenv, which has PyYAML and jsonschema.
"$VENV/bin/python3" - "$WORK/output.txt" "$ROOT/openapi.yaml" <<'PYTHON' || { cat "$WORK/output.txt" >&2; exit 1; }
import json, pathlib, sys, yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

lines = [line for line in open(sys.argv[1]).read().splitlines() if line.startswith("{")]
documents = [json.loads(line) for line in lines]
webhooks = [d for d in documents if d.get("type", "").startswith("zone.")]
types = [w["type"] for w in webhooks]
assert types == ["zone.checkin", "zone.checkout"], f"the partner received {types}, not a check-in and then a check-out"
for webhook in webhooks:
    data = webhook["data"]
    assert data["zone"]["id"] == "coffee" and data["zone"]["customData"] == {"store": "042"}, data["zone"]
    assert data["deviceId"] == "phone-1", data["deviceId"]
assert webhooks[1]["data"]["reason"] == "exit", webhooks[1]["data"].get("reason")

decisions = [d for d in documents if "decisions" in d]
assert decisions, "the decisions command printed no decision records"
text = json.dumps(decisions)
assert "checked-in" in text and "checked-out" in text, "the decisions do not show the check-in and the check-out"
deliveries = [d for d in documents if "deliveries" in d]
assert deliveries and len(deliveries[0]["deliveries"]) == 2, "the deliveries command did not list the two webhooks"

# Each body as the OpenAPI document's webhooks describe it, with the JSON Schemas it refers to.
path = pathlib.Path(sys.argv[2])
base = "https://checkin.invalid/"
resources = [(base + "openapi.yaml", Resource(contents=yaml.safe_load(path.read_text()), specification=DRAFT202012))]
for schema in (path.parent / "schemas").glob("*.schema.json"):
    contents = json.loads(schema.read_text())
    resources += [(base + "schemas/" + schema.name, Resource.from_contents(contents)),
                  (contents["$id"], Resource.from_contents(contents))]
registry = Registry().with_resources(resources)
for webhook in webhooks:
    pointer = f"#/webhooks/{webhook['type']}/post/requestBody/content/application~1json/schema"
    validator = Draft202012Validator({"$ref": base + "openapi.yaml" + pointer}, registry=registry)
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(webhook)]
    assert not problems, f"{webhook['type']} does not match openapi.yaml: {problems[:3]}"
print(f"quickstart-test: the partner received {', '.join(types)}, verified and as openapi.yaml describes them;"
      f" the decisions and the deliveries are listed")
PYTHON
