#!/usr/bin/env python3
"""Checks of the operators' files, used by scripts/observability-test.sh.

  observability_check.py dashboard DEPLOY_GRAFANA_DIR
      the provisioning files and every dashboard have the structure Grafana reads.
  observability_check.py prometheus DEPLOY_DIR PROMETHEUS_URL
      every panel's expression, and every series an alert is built on, returns data
      from that Prometheus; it evaluates every rule without error.
"""
import json
import pathlib
import re
import sys
import time
import urllib.parse
import urllib.request

import yaml

DATASOURCE_UID = "prometheus"


def fail(message):
    print(f"observability_check: {message}", file=sys.stderr)
    sys.exit(1)


def dashboards(grafana):
    paths = sorted((grafana / "dashboards").glob("*.json"))
    if not paths:
        fail(f"no dashboard in {grafana / 'dashboards'}")
    return [(path, json.loads(path.read_text())) for path in paths]


def panels_of(dashboard):
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def check_dashboards(grafana):
    datasources = yaml.safe_load((grafana / "provisioning/datasources/prometheus.yml").read_text())
    uids = {d.get("uid") for d in datasources.get("datasources", []) if d.get("type") == "prometheus"}
    if DATASOURCE_UID not in uids:
        fail(f"no provisioned Prometheus datasource with uid '{DATASOURCE_UID}'")
    providers = yaml.safe_load((grafana / "provisioning/dashboards/checkin.yml").read_text())
    if not any(p.get("type") == "file" and p.get("options", {}).get("path") for p in providers.get("providers", [])):
        fail("the dashboard provider has no file path")
    for path, dashboard in dashboards(grafana):
        for key in ("uid", "title", "panels", "schemaVersion"):
            if key not in dashboard:
                fail(f"{path.name}: no '{key}'")
        ids = set()
        for panel in panels_of(dashboard):
            name = f"{path.name}: panel '{panel.get('title')}'"
            for key in ("id", "type", "title", "gridPos"):
                if key not in panel:
                    fail(f"{name} has no '{key}'")
            if panel["id"] in ids:
                fail(f"{name} repeats id {panel['id']}")
            ids.add(panel["id"])
            grid = panel["gridPos"]
            if not all(isinstance(grid.get(k), int) for k in ("x", "y", "w", "h")) or grid["x"] + grid["w"] > 24:
                fail(f"{name} has a bad gridPos {grid}")
            if panel["type"] == "row":
                continue
            if panel.get("datasource", {}).get("uid") != DATASOURCE_UID:
                fail(f"{name} does not use the datasource '{DATASOURCE_UID}'")
            targets = panel.get("targets", [])
            if not targets or not all(t.get("expr") and t.get("refId") for t in targets):
                fail(f"{name} has a target without expr or refId")


def query(base, expression):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.load(response)
    if answer.get("status") != "success":
        fail(f"Prometheus refused {expression!r}: {answer}")
    return answer["data"]["result"]


def alert_rules(deploy):
    document = yaml.safe_load((deploy / "prometheus/alerts.yml").read_text())
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


def series_selectors(expression):
    """The series selectors (name and label matchers) an expression reads, for checking
    that each selects something: an alert over a series that does not exist never fires."""
    found = re.findall(r"\b((?:checkin_[a-z0-9_]+|up)(?:\{[^}]*\})?)(?=\s*[\[)\s]|$)", expression)
    return sorted(set(found))


def check_prometheus(deploy, base):
    expressions = []
    for path, dashboard in dashboards(deploy / "grafana"):
        for panel in panels_of(dashboard):
            for target in panel.get("targets", []):
                expressions.append((f"panel '{panel['title']}'", target["expr"]))
    rules = alert_rules(deploy)
    for rule in rules:
        selectors = series_selectors(rule["expr"])
        if not selectors:
            fail(f"alert {rule['alert']} reads no series")
        for selector in selectors:
            expressions.append((f"alert {rule['alert']}", f"count({selector})"))

    deadline = time.monotonic() + 45
    while True:
        missing = [(owner, e) for owner, e in expressions if not query(base, e)]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(2)
    if missing:
        fail("no data for:\n" + "\n".join(f"  {owner}: {e}" for owner, e in missing))

    with urllib.request.urlopen(f"{base}/api/v1/rules", timeout=10) as response:
        groups = json.load(response)["data"]["groups"]
    loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
    for rule in rules:
        state = loaded.get(rule["alert"])
        if state is None:
            fail(f"Prometheus did not load alert {rule['alert']}")
        if state.get("health") != "ok":
            fail(f"alert {rule['alert']} does not evaluate: {state.get('lastError')}")
    print(f"observability_check: {len(expressions)} expressions returned data; {len(rules)} alerts evaluate", file=sys.stderr)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "dashboard":
        check_dashboards(pathlib.Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "prometheus":
        check_prometheus(pathlib.Path(sys.argv[2]), sys.argv[3].rstrip("/"))
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()
