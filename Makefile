# mcpfleet. `make run` serves the all-in-one on 127.0.0.1:8080 (its
# /healthz, /readyz and /metrics on 127.0.0.1:9090, the admin listener); `make test`
# installs what the tests need (scripts/deps.sh) and runs every test.
SHELL := /bin/bash
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: run test deps vet gotest modules-test conformance conformance-cluster conformance-ha cluster cluster-ha build fmt lint test-ha

run:
	go run ./cmd/mcpfleet serve --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:9090

build:
	mkdir -p bin
	go build -o bin/ ./cmd/...

deps:
	./scripts/deps.sh

# gofmt covers every directory; go vet runs in every module (bench/peers,
# each of examples/, docs/migrating and deploy/helm/test are modules of
# their own, outside the root's ./...).
NESTED_MODULES := bench/peers $(patsubst %/go.mod,%,$(wildcard examples/*/go.mod)) docs/migrating deploy/helm/test
vet:
	@test -z "$$(gofmt -l . | grep -v '^.cache/' | tee /dev/stderr)" || (echo "gofmt: the files above need formatting" && exit 1)
	go vet ./...
	@for m in $(NESTED_MODULES); do echo "go vet ./... (in $$m)"; (cd $$m && go vet ./...) || exit 1; done

gotest:
	go test -race -count=1 -timeout 20m ./...

# The tests of the modules beside the root: each example's own tests,
# docs/migrating.md's code (every block still an excerpt of docs/migrating/,
# which compiles against the pinned go-sdk and mcp-go, and the three
# versions of its server driven by the go-sdk client in both eras), and the
# Helm chart (deploy/helm/test: helm lint and template, every object
# decoded strictly against the Kubernetes API types, every flag the chart
# passes checked against the real binaries' -h).
TESTED_MODULES := $(patsubst %/go.mod,%,$(wildcard examples/*/go.mod)) docs/migrating deploy/helm/test
modules-test:
	@for m in $(TESTED_MODULES); do echo "go test -race -count=1 ./... (in $$m)"; (cd $$m && go test -race -count=1 ./...) || exit 1; done

# Native Go fuzzing of the parsers that read client input: each target runs
# for a bounded budget (go test -fuzz takes one package and one target per
# run). The budget is a number of executions, about 5 s per target here,
# not a duration: a duration can fail spuriously with "context deadline
# exceeded" at its end on Go 1.26 (golang/go#75804). `make fuzz
# FUZZTIME=2m` fuzzes longer. A failing input is written to the package's
# testdata/fuzz/<target>/; commit it, and every go test runs it.
FUZZTIME ?= 30000x
FUZZ_TARGETS := \
	./pkg/protocol:FuzzDecode \
	./pkg/protocol:FuzzDecodeDepth \
	./pkg/protocol:FuzzDecodeHeaderValue \
	./pkg/protocol:FuzzCheckSizes \
	./pkg/protocol:FuzzAppendJSONString \
	./pkg/protocol:FuzzScanObject \
	./pkg/protocol:FuzzWireScan \
	./pkg/protocol:FuzzDecodeParamsHead \
	./pkg/protocol:FuzzDecodeWithHead \
	./pkg/mcp:FuzzDecodeCallToolParams \
	./pkg/mcp:FuzzDecodeHead \
	./pkg/mcp:FuzzFlatArgs \
	./pkg/frontend/stream:FuzzParseEventID \
	./pkg/frontend/stream:FuzzEventIDRoundTrip \
	./pkg/stdio:FuzzLineReader \
	./internal/uritemplate:FuzzParseMatch \
	./internal/jsonschema:FuzzValidateJSON \
	./internal/jsonschema:FuzzValidateJSONFast \
	./pkg/bus:FuzzToken \
	./pkg/bus:FuzzDecodeRequest \
	./pkg/sessionstore:FuzzValidID \
	./pkg/sessionstore:FuzzMembersCopy \
	./internal/httpx:FuzzAccepts

.PHONY: fuzz
fuzz:
	@failed=; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "go test -run '^\$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME) $$pkg"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || failed="$$failed $$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAIL:$$failed"; exit 1; fi

conformance:
	./scripts/conformance.sh 2025-11-25 2026-07-28

# The same suite through nginx against 2 frontends, 2 workers, nats-server
# and redis-server.
conformance-cluster:
	./scripts/conformance-cluster.sh 2025-11-25 2026-07-28

# Both requirement sets through nginx against the cluster-ha topology (3
# NATS nodes, a Redis Cluster), before and after killing a NATS node and a
# Redis master.
conformance-ha:
	./scripts/conformance-ha.sh 2025-11-25 2026-07-28

# The cluster on this machine, without docker; Ctrl-C stops it.
cluster:
	./scripts/cluster.sh

# Past one machine, on one machine: 3 NATS nodes, a Redis Cluster of 3
# masters and 3 replicas, 2 frontends, 2 workers, nginx; Ctrl-C stops it.
cluster-ha:
	./scripts/cluster-ha.sh

test: deps vet gotest modules-test fuzz conformance conformance-cluster conformance-ha

# Partitions between hosts (internal/hatest, build tag ha): every process
# of a cluster on a network namespace of its own, hosts cut off and links
# made lossy while clients call. Needs root, ip (iproute2) and iptables;
# not part of `make test` (nor CI): run it before a release, or by hand.
test-ha:
	go test -race -count=1 -tags ha -timeout 30m ./internal/hatest/

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet

# mcpfleet beside the peer Go MCP servers of bench/peers (echo tool at
# c=1, 16, 64: all-in-one, cluster of 4 processes, 2 frontends + 2 workers
# with requests alternating between the frontends, go-sdk, mcp-go, floor),
# the clusters' CPU per kind of process and Redis commands per request,
# then the scale figures, what durable delivery and tracing cost (off, on
# and exported to Jaeger, always_off), the targets (issue 21's, at c=64)
# with PASS/FAIL, and a chart, .cache/bench/chart.svg. BENCH_DURATION
# (default 5s) is each run's measured time, BENCH_SECTIONS picks parts;
# scripts/bench.sh lists the other knobs. It installs what it runs first
# (scripts/deps.sh: redis-server, nats-server, Jaeger), as `make test`
# does, so a fresh clone runs it alone.
.PHONY: bench
bench: deps
	./scripts/bench.sh
