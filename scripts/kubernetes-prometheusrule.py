#!/usr/bin/env python3
"""Writes deploy/kubernetes/base/prometheusrule.yaml, the alert rules of
deploy/prometheus/alerts.yml as a Prometheus Operator PrometheusRule, so that the rules stay
in one file: alerts.yml is the one to edit (promtool tests it, docker-compose's Prometheus
loads it), and this script carries it over, expressions and all, unchanged.

    python3 scripts/kubernetes-prometheusrule.py           # writes the file
    python3 scripts/kubernetes-prometheusrule.py --check   # exits 1 if the file differs

scripts/kubernetes-test.sh runs the check.
"""
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "deploy/prometheus/alerts.yml"
TARGET = ROOT / "deploy/kubernetes/base/prometheusrule.yaml"
HEADER = """\
# Generated from deploy/prometheus/alerts.yml by scripts/kubernetes-prometheusrule.py:
# edit that file, then run the script (scripts/kubernetes-test.sh fails while they differ).
"""


class Dumper(yaml.SafeDumper):
    """Multi-line strings (the longer expressions) as literal blocks, as alerts.yml has them."""


Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None),
)


def render() -> str:
    alerts = yaml.safe_load(SOURCE.read_text())
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "checkin", "labels": {"app.kubernetes.io/name": "checkin"}},
        "spec": {"groups": alerts["groups"]},
    }
    text = HEADER + yaml.dump(rule, Dumper=Dumper, sort_keys=False, width=200, allow_unicode=True)
    if yaml.safe_load(text)["spec"]["groups"] != alerts["groups"]:
        sys.exit("kubernetes-prometheusrule: the rules did not survive the conversion unchanged")
    return text


def main() -> None:
    text = render()
    if sys.argv[1:] == ["--check"]:
        if not TARGET.exists() or TARGET.read_text() != text:
            sys.exit(
                f"kubernetes-prometheusrule: {TARGET.relative_to(ROOT)} is not what {SOURCE.relative_to(ROOT)} "
                "gives: run python3 scripts/kubernetes-prometheusrule.py"
            )
        print(f"kubernetes-prometheusrule: {TARGET.relative_to(ROOT)} matches {SOURCE.relative_to(ROOT)}")
    elif not sys.argv[1:]:
        TARGET.write_text(text)
        print(f"kubernetes-prometheusrule: wrote {TARGET.relative_to(ROOT)}")
    else:
        sys.exit("usage: kubernetes-prometheusrule.py [--check]")


if __name__ == "__main__":
    main()
