# The two commands: `make demo` and `make test`. Both install what is missing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
ENV := . .local/env.sh &&
SWIFT_BUILD_FLAGS ?=
ONCE ?=
# Test cases run side by side, at most this many at once: the pipelines of the integration
# tests share two cores with Postgres and the broker, and unbounded they starve the tests
# that time what they check.
TEST_WIDTH ?= 8

.PHONY: help setup build build-bench demo test test-unit test-harness test-observability test-api test-kubernetes test-rolling compose-check lint bench clean

help:
	@echo "make demo        run the whole pipeline locally and watch check-in/check-out webhooks (ONCE=1 to exit after the trip)"
	@echo "make test        every test, unit and integration, against a local Postgres and broker"
	@echo "make test-unit   the modules' own tests, no Postgres and no broker"
	@echo "make test-harness  a run stopped at its deadline leaves no process, cluster or firewall rule behind"
	@echo "make test-observability  alert rules, their unit tests and the dashboard against a real Prometheus"
	@echo "make test-api    the HTTP API against openapi.yaml (Schemathesis, property-based)"
	@echo "make test-kubernetes  the Kubernetes manifests rendered, validated and scanned (checkov), offline"
	@echo "make test-rolling    every process replaced in turn under load: nothing lost, every webhook once, in order (ROLLING_ARGS)"
	@echo "make build       build the checkin executable (the load and pipeline benchmarks: make build-bench)"
	@echo "make build-bench build checkin-bench: load generator, evaluator and notifier benchmarks"
	@echo "make bench       geofence engine benchmarks (release build)"
	@echo "make lint        swift format lint (style of .swift-format)"

setup:
	@scripts/setup.sh

build: setup
	@$(ENV) swift build $(SWIFT_BUILD_FLAGS) --product checkin

# checkin-bench runs beside checkin: its evaluator benchmark starts that build's evaluators.
build-bench: build
	@$(ENV) swift build $(SWIFT_BUILD_FLAGS) --product checkin-bench

demo: build
	@$(ENV) scripts/with-services.sh scripts/demo.sh $(if $(ONCE),--once,)

# Deadlines (seconds) of the test runs: several times what they take on two busy cores,
# so that a run that stops making progress fails and names the tests it was in.
TEST_DEADLINE ?= 1500
OBSERVABILITY_DEADLINE ?= 600
API_DEADLINE ?= 600
LOAD_DEADLINE ?= 600
KUBERNETES_DEADLINE ?= 300
ROLLING_DEADLINE ?= 600
# make test's rolling restart: one round at a rate the debug build keeps up with;
# docs/rolling-upgrades.md has the full one's command (3 rounds, 2,000 fixes/s, release build).
ROLLING_ARGS ?= --rounds 1 --rate 400 --devices 400 --seconds 70 --warm-up 5

# The Kubernetes manifests' test needs neither the build nor the services: it runs beside the
# build and the suites (scripts/alongside.sh), and its output is printed where it ends.
test: setup compose-check
	@$(ENV) scripts/alongside.sh start kubernetes-test scripts/within.sh $(KUBERNETES_DEADLINE) scripts/kubernetes-test.sh
	@$(ENV) scripts/harness-test.sh
	@$(ENV) swift build $(SWIFT_BUILD_FLAGS) --build-tests
	@$(ENV) SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) scripts/within.sh $(TEST_DEADLINE) \
		scripts/with-services.sh swift test $(SWIFT_BUILD_FLAGS) --skip-build
	@$(ENV) scripts/within.sh $(OBSERVABILITY_DEADLINE) scripts/with-services.sh scripts/observability-test.sh
	@$(ENV) scripts/within.sh $(LOAD_DEADLINE) scripts/with-services.sh scripts/load-test.sh
	@$(ENV) scripts/within.sh $(API_DEADLINE) scripts/with-services.sh scripts/api-test.sh
	@$(ENV) scripts/within.sh $(API_DEADLINE) scripts/with-services.sh scripts/quickstart-test.sh
	@scripts/alongside.sh finish kubernetes-test
	@$(ENV) scripts/within.sh $(ROLLING_DEADLINE) scripts/with-services.sh scripts/rolling-restart.sh $(ROLLING_ARGS)

# The HTTP API against openapi.yaml: the document validated, then Schemathesis's generated
# requests over every route of `checkin dev` (no 5xx; every answer as documented); then the
# README's quickstart, run as written.
test-api: setup
	@$(ENV) swift build $(SWIFT_BUILD_FLAGS) --product checkin
	@$(ENV) scripts/with-services.sh scripts/api-test.sh
	@$(ENV) scripts/with-services.sh scripts/quickstart-test.sh

# Alert rules, their unit tests and the dashboard against a real Prometheus scraping `checkin dev`
# under `checkin-bench load`.
test-observability: build-bench
	@$(ENV) scripts/with-services.sh scripts/observability-test.sh

# deploy/kubernetes: the base and the example overlay rendered with kubectl kustomize, every
# object validated against its schema, checkov with no network; no cluster, no services.
test-kubernetes: setup
	@$(ENV) scripts/kubernetes-test.sh

# Each ingest, evaluator and notifier process replaced in turn (SIGTERM, then a new one) under
# a steady load: no fix lost, every webhook once and in order, no long gap, each process
# stopped within the manifests' grace (scripts/rolling-restart.sh).
test-rolling: build-bench
	@$(ENV) scripts/within.sh $(ROLLING_DEADLINE) scripts/with-services.sh scripts/rolling-restart.sh $(ROLLING_ARGS)

# The harness the other tests run in: a run that scripts/within.sh stops at its deadline leaves
# no process, Postgres cluster or firewall rule behind (scripts/harness-test.sh, about 30 s).
test-harness: setup
	@$(ENV) scripts/harness-test.sh

# The modules' own tests, which need no Postgres and no broker (Kafka's run against librdkafka's mock cluster).
test-unit: setup
	@$(ENV) swift test $(SWIFT_BUILD_FLAGS) --filter '^(SharedTests|GeofenceTests|KafkaTests|PersistenceTests|BatchProcessingTests|IngestTests|EvaluatorTests|NotifierTests|ServiceSupportTests)\.'

compose-check: setup
	@docker-compose -f docker-compose.yml config -q && echo "docker-compose.yml: valid"

lint:
	@swift format lint --recursive Package.swift Sources Tests

bench: setup
	@$(ENV) cd Benchmarks && swift package --disable-sandbox benchmark

clean:
	rm -rf .build .local/run
