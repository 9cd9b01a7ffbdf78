#!/usr/bin/env bash
# The Kubernetes manifests (deploy/kubernetes, docs/kubernetes.md), offline: the
# PrometheusRule is still deploy/prometheus/alerts.yml's; `kubectl kustomize` renders the
# base and the example overlay (with throwaway Secrets, written to a copy of the tree);
# scripts/lib/kubernetes_check.py validates every object of both and checks what schemas
# cannot; checkov scans the overlay's output with no network to reach.
#
#   scripts/kubernetes-test.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.local/kubernetes-test-venv"
die() { echo "kubernetes-test: $*" >&2; exit 1; }
[ -x "$VENV/bin/checkov" ] || die "$VENV is missing; run scripts/setup.sh"
# Debian's kubectl (1.20) is too old for these kustomizations; this kind of machine comes with 1.32.
kubectl kustomize --help >/dev/null 2>&1 || die "kubectl with kustomize is missing (docs/kubernetes.md, \"Testing\")"
started=$SECONDS
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$VENV/bin/python3" "$ROOT/scripts/kubernetes-prometheusrule.py" --check

# The overlay's secretGenerator reads files that the operator writes and git never holds;
# throwaway ones stand in, in a copy, so that nothing is written to (or read from) the checkout's.
cp -r "$ROOT/deploy/kubernetes" "$WORK/kubernetes"
secrets="$WORK/kubernetes/overlays/example/secrets"
rm -f "$secrets"/*.env
key() { head -c 32 /dev/urandom | base64; }
echo "CHECKIN_DATABASE_URL=postgres://checkin:$(key | tr -d '/+=')@postgres.postgres.svc:5432/checkin?sslmode=require" >"$secrets/database.env"
printf 'CHECKIN_SECRET_KEY=%s\nCHECKIN_OPERATOR_KEY=%s\n' "$(key)" "$(key)" >"$secrets/keys.env"

kubectl kustomize "$WORK/kubernetes/base" >"$WORK/base.yaml"
kubectl kustomize "$WORK/kubernetes/overlays/example" >"$WORK/overlay.yaml"
"$VENV/bin/python3" "$ROOT/scripts/lib/kubernetes_check.py" base "$WORK/base.yaml"
"$VENV/bin/python3" "$ROOT/scripts/lib/kubernetes_check.py" overlay "$WORK/overlay.yaml" --with-secrets

# checkov on what is deployed: the overlay's output holds every object of the base, given
# the namespace, image and Secrets that the base alone leaves to an overlay. Its skips are
# in deploy/kubernetes/.checkov.yaml, each with its reason. It runs in a network namespace
# of its own, which has no interface up: it passes without reaching anything.
isolated=()
if unshare --map-root-user --net true 2>/dev/null; then
    isolated=(unshare --map-root-user --net)
else
    echo "kubernetes-test: no network namespace can be made here; checkov runs with --skip-download alone" >&2
fi
if ! (cd "$WORK" && "${isolated[@]}" "$VENV/bin/checkov" --config-file "$ROOT/deploy/kubernetes/.checkov.yaml" \
    --file overlay.yaml >checkov.out 2>&1); then
    cat "$WORK/checkov.out" >&2
    die "checkov failed the overlay's manifests"
fi
summary="$(grep -m1 '^Passed checks:' "$WORK/checkov.out")" || { cat "$WORK/checkov.out" >&2; die "checkov printed no summary"; }
echo "kubernetes-test: checkov (kubernetes${isolated:+, no network}): overlay: $summary"
echo "kubernetes-test: ok ($((SECONDS - started)) s)"
