#!/usr/bin/env python3
"""Checks rendered Kubernetes manifests (`kubectl kustomize` output), for
scripts/kubernetes-test.sh.

  kubernetes_check.py NAME RENDERED.yaml [--with-secrets]

Every object is validated against its schema: the built-in kinds with kubernetes-validate
(strict: no field the API does not know) for each Kubernetes version in VERSIONS, KEDA's
ScaledObject and the Prometheus Operator's PrometheusRule against the schemas in
scripts/lib/crd-schemas; the ServiceMonitor is skipped by kind (see the README there), and
any other kind fails. Then what no schema says: the pods' hardening and references, each
service's probes, ports, Service, autoscaler and disruption budget, the consumers' replicas
capped by the partitions, the alert rules equal to deploy/prometheus/alerts.yml, the
ServiceMonitor's ports, and that the first `kubectl apply -l …` of docs/kubernetes.md takes
the migration Job with all it needs and no service. --with-secrets: the Secrets the pods
name must be in the output (an overlay's; the base has none by design).
"""
import json
import pathlib
import re
import sys

import jsonschema
import kubernetes_validate
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The oldest Kubernetes the manifests are for (PodDisruptionBudget's
# unhealthyPodEvictionPolicy is on by default from 1.27, GA in 1.31) and the newest
# kubernetes-validate knows.
VERSIONS = ["1.31.0", "1.37.0"]
CRD_SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "scaledobject_v1alpha1.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule_v1.json",
}
SKIPPED_KINDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "no vendored schema (scripts/lib/crd-schemas/README.md); "
    "its selector and ports are checked below",
}
SERVICES = {"ingest", "evaluator", "notifier"}
# What each consumer reads (Sources/Evaluator/Evaluator.swift, Sources/Notifier/Notifier.swift):
# the settings that name its group and topics.
CONSUMES = {
    "evaluator": ("CHECKIN_EVALUATOR_GROUP", {"CHECKIN_TOPIC_FIXES"}),
    "notifier": ("CHECKIN_NOTIFIER_GROUP", {"CHECKIN_TOPIC_CHECKINS", "CHECKIN_TOPIC_CHECKOUTS"}),
}


class Checks:
    def __init__(self, name):
        self.name, self.passed, self.failures = name, 0, []

    def expect(self, condition, message):
        if condition:
            self.passed += 1
        else:
            self.failures.append(message)
        return condition


def selects(selector, labels):
    """Whether a label selector (matchLabels and matchExpressions) selects these labels."""
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def dockerfile_uid():
    match = re.search(r"--uid (\d+)", (ROOT / "Dockerfile").read_text())
    return int(match.group(1)) if match else None


def validate_schemas(objects, checks):
    counts = {"kubernetes": 0, "crd": 0, "skipped": 0}
    for obj in objects:
        key, label = (obj.get("apiVersion"), obj.get("kind")), f"{obj.get('kind')}/{obj['metadata']['name']}"
        if key in SKIPPED_KINDS:
            print(f"kubernetes-check: {checks.name}: {label} skipped: {SKIPPED_KINDS[key]}")
            counts["skipped"] += 1
        elif key in CRD_SCHEMAS:
            schema = json.loads((ROOT / "scripts/lib/crd-schemas" / CRD_SCHEMAS[key]).read_text())
            errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
            checks.expect(not errors, f"{label} against {CRD_SCHEMAS[key]}: {'; '.join(errors)}")
            counts["crd"] += 1
        else:
            for version in VERSIONS:
                try:
                    kubernetes_validate.validate(obj, version, strict=True)
                    checks.expect(True, "")
                except kubernetes_validate.ValidationError as error:
                    where = "/".join(map(str, error.path))
                    checks.expect(False, f"{label} against Kubernetes {version}: {where}: {error.message}")
                except kubernetes_validate.SchemaNotFoundError as error:
                    checks.expect(False, f"{label} against Kubernetes {version}: {error}")
            counts["kubernetes"] += 1
    return counts


def check_pods(objects, by_kind, checks, with_secrets):
    config_maps = {o["metadata"]["name"]: o.get("data", {}) for o in by_kind.get("ConfigMap", [])}
    secrets = {o["metadata"]["name"]: set((o.get("data") or {}) | (o.get("stringData") or {})) for o in by_kind.get("Secret", [])}
    accounts = {o["metadata"]["name"]: o for o in by_kind.get("ServiceAccount", [])}
    deny = [p for p in by_kind.get("NetworkPolicy", []) if set(p["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}
            and not p["spec"].get("ingress") and not p["spec"].get("egress")]
    uid = dockerfile_uid()
    checks.expect(uid is not None, "the Dockerfile gives its user no fixed --uid")
    for workload in by_kind.get("Deployment", []) + by_kind.get("Job", []):
        name, pod = workload["metadata"]["name"], workload["spec"]["template"]
        spec, labels = pod["spec"], pod["metadata"].get("labels", {})
        context = spec.get("securityContext", {})
        checks.expect(context.get("runAsNonRoot") is True, f"{name}: runAsNonRoot is not true")
        checks.expect(context.get("runAsUser") == uid, f"{name}: runAsUser {context.get('runAsUser')} is not the Dockerfile's {uid}")
        checks.expect(isinstance(context.get("runAsGroup"), int), f"{name}: no numeric runAsGroup")
        checks.expect(context.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{name}: seccomp is not RuntimeDefault")
        checks.expect(spec.get("automountServiceAccountToken") is False, f"{name}: mounts a service account token")
        account = spec.get("serviceAccountName")
        checks.expect(account in accounts and accounts[account].get("automountServiceAccountToken") is False,
                      f"{name}: service account {account} is not one of the output's, without a token")
        checks.expect(any(selects(p["spec"]["podSelector"], labels) for p in deny), f"{name}: no default-deny network policy selects its pods")
        for container in spec["containers"]:
            where = f"{name}/{container['name']}"
            hardening = container.get("securityContext", {})
            checks.expect(hardening.get("readOnlyRootFilesystem") is True, f"{where}: root filesystem is writable")
            checks.expect(hardening.get("allowPrivilegeEscalation") is False, f"{where}: privilege escalation allowed")
            checks.expect(hardening.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: capabilities not all dropped")
            resources = container.get("resources", {})
            for bound in ("requests", "limits"):
                checks.expect(set(resources.get(bound, {})) >= {"cpu", "memory"}, f"{where}: {bound} lack cpu or memory")
            checks.expect(container.get("args", [None])[0] == labels.get("app.kubernetes.io/component"),
                          f"{where}: runs {container.get('args')} under component {labels.get('app.kubernetes.io/component')}")
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef", {}).get("name")
                checks.expect(ref is None or ref in config_maps, f"{where}: ConfigMap {ref} is not in the output")
            for variable in container.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref and (with_secrets or ref["name"] in secrets):
                    checks.expect(ref["name"] in secrets and (ref["key"] in secrets[ref["name"]] or ref.get("optional")),
                                  f"{where}: {variable['name']} names {ref['name']}/{ref['key']}, not in the output")
    return config_maps


def environment(container, config_maps):
    """The container's environment as far as the output says it: its ConfigMaps and values."""
    values = {}
    for source in container.get("envFrom", []):
        values.update(config_maps.get(source.get("configMapRef", {}).get("name"), {}))
    values.update({v["name"]: v["value"] for v in container.get("env", []) if "value" in v})
    return values


def check_services(by_kind, config_maps, checks):
    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    checks.expect({d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") for d in deployments.values()} == SERVICES,
                  f"the Deployments are not one each of {sorted(SERVICES)}")
    scalers = {}
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        scalers[hpa["spec"]["scaleTargetRef"]["name"]] = hpa["spec"]["minReplicas"]
    for scaled in by_kind.get("ScaledObject", []):
        scalers[scaled["spec"]["scaleTargetRef"]["name"]] = scaled["spec"].get("minReplicaCount", 0)
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]
        labels, container = pod["metadata"]["labels"], pod["spec"]["containers"][0]
        env = environment(container, config_maps)
        checks.expect("replicas" not in deployment["spec"], f"{name}: sets replicas, which its autoscaler owns")
        checks.expect(scalers.get(name, 0) >= 2, f"{name}: no autoscaler keeps at least two replicas")
        checks.expect(any(selects(b["spec"]["selector"], labels) for b in by_kind.get("PodDisruptionBudget", [])),
                      f"{name}: no PodDisruptionBudget selects its pods")
        checks.expect(env.get("CHECKIN_HTTP_HOST") == "0.0.0.0", f"{name}: CHECKIN_HTTP_HOST is {env.get('CHECKIN_HTTP_HOST')}, not 0.0.0.0")
        ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
        checks.expect(str(ports.get("http")) == env.get("CHECKIN_HTTP_PORT"),
                      f"{name}: port http {ports.get('http')} is not CHECKIN_HTTP_PORT {env.get('CHECKIN_HTTP_PORT')}")
        for probe, path in (("startupProbe", "/health"), ("livenessProbe", "/health"), ("readinessProbe", "/ready")):
            get = container.get(probe, {}).get("httpGet", {})
            checks.expect(get.get("path") == path and get.get("port") == "http", f"{name}: {probe} is not GET {path} on port http")
        checks.expect(any(selects({"matchLabels": s["spec"].get("selector", {})}, labels)
                          and any(p.get("targetPort") == "http" for p in s["spec"]["ports"]) for s in by_kind.get("Service", [])),
                      f"{name}: no Service sends to its port http")
    check_status_urls(by_kind, deployments, config_maps, checks)
    for scaled in by_kind.get("ScaledObject", []):
        name = scaled["metadata"]["name"]
        deployment = deployments.get(scaled["spec"]["scaleTargetRef"]["name"])
        if not checks.expect(deployment is not None, f"{name}: scales no Deployment of the output"):
            continue
        component = deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
        env = environment(deployment["spec"]["template"]["spec"]["containers"][0], config_maps)
        partitions = int(env.get("CHECKIN_KAFKA_PARTITIONS", "8"))
        checks.expect(scaled["spec"]["maxReplicaCount"] <= partitions,
                      f"{name}: maxReplicaCount {scaled['spec']['maxReplicaCount']} exceeds the {partitions} partitions")
        group, topics = CONSUMES.get(component, (None, set()))
        triggers = scaled["spec"]["triggers"]
        for trigger in triggers:
            meta = trigger["metadata"]
            checks.expect(trigger["type"] == "kafka" and meta.get("allowIdleConsumers") == "false",
                          f"{name}: a trigger is not kafka with allowIdleConsumers \"false\"")
            checks.expect(meta.get("consumerGroupFromEnv") == group and group in env, f"{name}: the trigger's group is not {group}")
            checks.expect(meta.get("bootstrapServersFromEnv") == "CHECKIN_KAFKA_BROKERS", f"{name}: the trigger's brokers are not CHECKIN_KAFKA_BROKERS")
        named = {t["metadata"].get("topicFromEnv") for t in triggers}
        checks.expect(named == topics, f"{name}: the triggers read {sorted(named)}, the {component} consumes {sorted(topics)}")
        checks.expect(topics <= set(env), f"{name}: {sorted(topics - set(env))} not in the {component}'s environment")


def check_status_urls(by_kind, deployments, config_maps, checks):
    """The ingest's GET /v1/status asks each evaluator and notifier Service's /ready on its port."""
    ports = {}
    for service in by_kind.get("Service", []):
        component = service["spec"].get("selector", {}).get("app.kubernetes.io/component")
        for port in service["spec"]["ports"]:
            if port.get("targetPort") == "http":
                ports[component] = f"http://{service['metadata']['name']}:{port['port']}/ready"
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]
        if pod["metadata"]["labels"].get("app.kubernetes.io/component") != "ingest":
            continue
        urls = environment(pod["spec"]["containers"][0], config_maps).get("CHECKIN_STATUS_READY_URLS", "").split(",")
        expected = [ports.get("evaluator"), ports.get("notifier")]
        checks.expect(urls == expected, f"{name}: CHECKIN_STATUS_READY_URLS is {urls}, not the workers' Services {expected}")


def check_monitoring(by_kind, checks):
    alerts = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())
    rules = by_kind.get("PrometheusRule", [])
    checks.expect(len(rules) == 1 and rules[0]["spec"]["groups"] == alerts["groups"],
                  "the PrometheusRule's groups are not deploy/prometheus/alerts.yml's")
    services = by_kind.get("Service", [])
    for monitor in by_kind.get("ServiceMonitor", []):
        chosen = [s for s in services if selects(monitor["spec"]["selector"], s["metadata"].get("labels", {}))]
        components = {s["metadata"]["labels"].get("app.kubernetes.io/component") for s in chosen}
        checks.expect(components == SERVICES, f"ServiceMonitor/{monitor['metadata']['name']} selects {sorted(components)}")
        for endpoint in monitor["spec"]["endpoints"]:
            for service in chosen:
                checks.expect(endpoint.get("port") in {p.get("name") for p in service["spec"]["ports"]},
                              f"ServiceMonitor port {endpoint.get('port')} is not a port of Service/{service['metadata']['name']}")


def check_release_order(objects, by_kind, checks):
    """The first apply of docs/kubernetes.md, "Deploying a release", filters by a selector of
    `key!=value` terms (which also take objects without the key): it must take the Job and
    what its pods name, and leave every object of the services to the second."""
    found = re.search(r"kubectl apply -k \$K -l '([^']+)'", (ROOT / "docs/kubernetes.md").read_text())
    if not checks.expect(found is not None, "docs/kubernetes.md shows no `kubectl apply -k $K -l '…'`"):
        return
    terms = [term.split("!=") for term in found.group(1).split(",")]
    checks.expect(all(len(term) == 2 for term in terms), f"the selector {found.group(1)} is not key!=value terms")
    first = [o for o in objects if all(o["metadata"].get("labels", {}).get(key) != value for key, value in terms)]
    names = {(o["kind"], o["metadata"]["name"]) for o in first}
    present = {(o["kind"], o["metadata"]["name"]) for o in objects}
    checks.expect(not any(o["metadata"].get("labels", {}).get("app.kubernetes.io/component") in SERVICES for o in first),
                  "the first apply takes objects of the services")
    for job in by_kind.get("Job", []):
        spec = job["spec"]["template"]["spec"]
        needs = {("Job", job["metadata"]["name"]), ("ServiceAccount", spec.get("serviceAccountName"))}
        for container in spec["containers"]:
            needs |= {("ConfigMap", s["configMapRef"]["name"]) for s in container.get("envFrom", []) if "configMapRef" in s}
            # The Secrets the output has (an overlay's): the base leaves them to one.
            needs |= {("Secret", v["valueFrom"]["secretKeyRef"]["name"]) for v in container.get("env", [])
                      if "secretKeyRef" in v.get("valueFrom", {})} & present
        checks.expect(needs <= names, f"the first apply misses {sorted(needs - names)}")
        labels = job["spec"]["template"]["metadata"].get("labels", {})
        egress = [p for p in by_kind.get("NetworkPolicy", []) if selects(p["spec"]["podSelector"], labels)]
        checks.expect(all(("NetworkPolicy", p["metadata"]["name"]) in names for p in egress),
                      "the first apply misses network policies of the migration's pods")


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["--with-secrets"]):
        sys.exit(__doc__)
    name, path, with_secrets = sys.argv[1], sys.argv[2], sys.argv[3:] == ["--with-secrets"]
    objects = [o for o in yaml.safe_load_all(pathlib.Path(path).read_text()) if o]
    by_kind = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    checks = Checks(name)
    unknown = sorted({o["kind"] for o in objects if (o["apiVersion"], o["kind"]) not in CRD_SCHEMAS | SKIPPED_KINDS
                      and "." in o["apiVersion"].split("/")[0] and not o["apiVersion"].split("/")[0].endswith(".k8s.io")})
    checks.expect(not unknown, f"kinds with no schema and no reason to skip them: {unknown}")
    counts = validate_schemas(objects, checks)
    config_maps = check_pods(objects, by_kind, checks, with_secrets)
    check_services(by_kind, config_maps, checks)
    check_monitoring(by_kind, checks)
    check_release_order(objects, by_kind, checks)
    for failure in checks.failures:
        print(f"kubernetes-check: {name}: FAILED: {failure}", file=sys.stderr)
    print(f"kubernetes-check: {name}: {len(objects)} objects; {counts['kubernetes']} validated against Kubernetes "
          f"{' and '.join(VERSIONS)}, {counts['crd']} against CRD schemas, {counts['skipped']} skipped by kind; "
          f"{checks.passed} passed, {len(checks.failures)} failed")
    sys.exit(1 if checks.failures else 0)


if __name__ == "__main__":
    main()
