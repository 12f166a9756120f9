# llmbudget: build, run and test. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
ADDR ?= :8080
BIN := bin/llmbudget
LDFLAGS := -s -w -X main.version=$(VERSION)
FUZZTIME ?= 10s
BENCH_ROUNDS ?= 3
BENCHTIME ?= 500ms
LOADFLAGS ?=

.PHONY: help build run test unit fmt fmt-check vet fixtures bench fuzz k8s-bins test-integration manifests clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

build: ## build bin/llmbudget (static, CGO off)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./hooks

run: ## serve the hooks on $(ADDR) (no cluster needed; NOW=<RFC 3339> fixes the clock)
	$(GO) run ./hooks serve --addr $(ADDR) $(if $(NOW),--now $(NOW))

test: fmt-check vet unit manifests ## every check that needs no cluster: gofmt, vet, unit and golden tests, manifests render

unit: ## unit, golden and fuzz-seed tests
	$(GO) test -count=1 ./...

fmt: ## gofmt the tree
	gofmt -w hooks internal test

fmt-check:
	@out=$$(gofmt -l hooks internal test); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

fixtures: ## rewrite golden hook responses (review the diff!)
	$(GO) test ./test/golden/ -update

# kubectl from PATH, else the one `make k8s-bins` builds.
K8S_BIN ?= $(HOME)/.cache/llmbudget/k8s/v1.37.2
KUBECTL ?= $(shell command -v kubectl 2>/dev/null || echo $(K8S_BIN)/kubectl)

manifests: ## render the kustomize base, components, overlays, monitoring and Metacontroller manifests
	@test -x "$(KUBECTL)" || { echo "kubectl not found: install it or run make k8s-bins"; exit 1; }
	@for d in deploy deploy/overlays/all-kinds deploy/overlays/secure deploy/monitoring deploy/monitoring/kube-state-metrics deploy/notifications metacontroller examples/spend/litellm examples/spend/vllm examples/spend/otel-genai; do \
	  "$(KUBECTL)" kustomize $$d >/dev/null || { echo "kustomize $$d failed"; exit 1; }; \
	done; echo "manifests render"

bench: build ## benchmarks of the hook handlers against their JSON floor, then a load run
	$(GO) test -c -o bin/bench.test ./test/bench
	@# Each round runs every body's handler and floor benchmarks back to back,
	@# so the ratio compares figures taken under the same machine load.
	set -o pipefail; cd test/bench && for i in $$(seq $(BENCH_ROUNDS)); do \
	  ../../bin/bench.test -test.run '^$$' -test.bench . -test.benchmem -test.benchtime $(BENCHTIME) || exit 1; \
	done | tee ../../bin/bench.txt
	$(GO) run ./test/bench/cmd/ratio bin/bench.txt
	$(GO) run ./test/load -bin $(BIN) $(LOADFLAGS)

fuzz: ## run every fuzz target for $(FUZZTIME)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

k8s-bins: ## build kube-apiserver, kube-controller-manager and etcd v1.37.2 into the cache (once)
	bash test/k8s/build.sh

test-integration: ## integration tests against a real API server (builds the binaries first)
	bash test/k8s/run.sh

clean:
	rm -rf bin
