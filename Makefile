# llmbudget: build, run and test. `make help` lists the targets.
SHELL := /bin/bash
comma := ,
#: the go command
GO ?= go
# The release version has one source, the VERSION file (test/release checks the manifests agree).
#: the version built in (the VERSION file)
VERSION ?= $(shell cat VERSION)
#: where make run serves the hooks
ADDR ?= :8080
# Where make run serves /metrics: empty (the default) serves it on $(ADDR) beside the hooks, so a local run needs
# one free port; the deployment serves it on :9090 alone (serve --metrics-addr).
#: where make run serves /metrics; empty: on ADDR, beside the hooks
METRICS_ADDR ?=
#: make run's fixed clock, RFC 3339 (serve --now); empty: the real one
NOW ?=
BIN := bin/llmbudget
LDFLAGS := -s -w -X main.version=$(VERSION)
#: how long make fuzz runs each fuzz target
FUZZTIME ?= 10s
#: how long make fuzz minimizes a failing input
FUZZMINIMIZETIME ?= 100x
MODULE := github.com/llmbudget/llmbudget
#: how many times make bench runs each benchmark
BENCH_ROUNDS ?= 7
#: go test -benchtime of make bench
BENCHTIME ?= 200ms
#: extra flags of make bench's load run
LOADFLAGS ?=
#: extra flags of make bench's authz run
AUTHZBENCHFLAGS ?=
#: extra flags of make bench's overshoot run (-burns 1h for the hour's burn)
OVERSHOOTFLAGS ?=

.PHONY: help build install run test unit fmt fmt-check vet lint generate apiref fixtures bench fuzz k8s-bins test-integration manifests image test-image clean

help: ## list targets, and the variables they read (each ?= variable, with the #: line above it)
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's/:.*## /\t/' -e 's/$$(ADDR)/$(ADDR)/g' \
	  -e 's/$$(FUZZTIME)/$(FUZZTIME)/g' | sort
	@echo; echo "variables (make TARGET NAME=value):"
	@awk '/^#: / {d = substr($$0, 4); next} /^[A-Z_]+ [?]=/ {v = $$1; sub(/^[^=]*[?]= */, ""); \
	  printf "  %-17s %s (default: %s)\n", v, d, ($$0 == "" ? "empty" : $$0)} {d = ""}' $(MAKEFILE_LIST)

# A static binary (no cgo), reproducible from the same commit (-trimpath keeps local paths out).
GOBUILD = CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)"
# What a compile says first: with empty Go caches it compiles some 800 packages (go list -deps ./hooks/llmbudget).
COMPILING = the first time, with empty Go caches, it compiles some 800 packages: several minutes on 2 cores; \
  later, seconds
# go build -v names each package it compiles (none when the cache holds them all): PROGRESS counts them on one
# line, so that a first compile shows it is moving, and passes every other line (an error) through. It is the
# shell's read, not awk: mawk reads a pipe a buffer at a time, which would hold every count back to the end.
PROGRESS = { n=0; while IFS= read -r l; do case "$$l" in ''|*[\ \#]*) if [ $$n -gt 0 ]; then echo; fi; n=0; \
  printf '%s\n' "$$l";; *) n=$$((n + 1)); printf '\r  compiled %d packages' $$n;; esac; done; \
  if [ $$n -gt 0 ]; then echo; fi; }

build: ## build bin/llmbudget (static, CGO off)
	@echo "compiling $(BIN) ($(COMPILING))"
	@set -o pipefail; { $(GOBUILD) -v -o $(BIN) ./hooks/llmbudget; } 2>&1 | $(PROGRESS)

install: ## go install the llmbudget CLI into GOBIN (default: GOPATH/bin), and say what to add to PATH
	@echo "compiling llmbudget $(VERSION) ($(COMPILING))"
	@set -o pipefail; CGO_ENABLED=0 $(GO) install -v -trimpath -ldflags "$(LDFLAGS)" ./hooks/llmbudget 2>&1 \
	  | $(PROGRESS)
	@d=$$($(GO) env GOBIN); d=$${d:-$$($(GO) env GOPATH)/bin}; echo "installed $$d/llmbudget"; \
	  case ":$$PATH:" in *":$$d:"*) ;; *) echo "$$d is not on your PATH: add it, for example with" \
	    "export PATH=\"\$$PATH:$$d\" in your shell's profile, or run $$d/llmbudget";; esac

run: ## serve the hooks and /metrics on $(ADDR) (METRICS_ADDR=:9090 puts /metrics apart; NOW fixes the clock)
	@echo "compiling $(BIN) ($(COMPILING))"
	@set -o pipefail; { $(GOBUILD) -v -o $(BIN) ./hooks/llmbudget; } 2>&1 | $(PROGRESS)
	@echo "starting the hooks on $(ADDR) and /metrics on $(or $(METRICS_ADDR),$(ADDR)); Ctrl-C stops"
	@$(BIN) serve --addr $(ADDR) --metrics-addr '$(METRICS_ADDR)' $(if $(NOW),--now $(NOW)) || { rc=$$?; \
	  echo "make run: llmbudget serve failed (status $$rc); if $(ADDR) is taken, choose another port:" \
	    "make run ADDR=:8081"; exit $$rc; }

test: fmt-check vet unit manifests ## every check that needs no cluster: gofmt, vet, unit and golden tests, manifests render

unit: ## unit, golden and fuzz-seed tests
	$(GO) test -count=1 ./...

fmt: ## gofmt the tree
	gofmt -w hooks internal test tools

fmt-check:
	@out=$$(gofmt -l hooks internal test tools); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## go vet
	@echo "go vet: compiling the tree first (the first time takes a few minutes)"
	$(GO) vet ./...

# golangci-lint as a Go tool pinned in a module of its own (tools/lint), so that the main go.mod holds only the
# program's dependencies. The first run compiles it (several minutes of CPU on 2 cores); go caches the binary
# and later runs start at once. The modfile's path is absolute because each module is linted from its own
# directory.
#: the golangci-lint command of make lint
GOLANGCI_LINT ?= $(GO) tool -modfile=$(CURDIR)/tools/lint/go.mod golangci-lint
# Every module of the repository, found by its go.mod rather than listed, so that a new one is linted too.
LINT_MODULES = $(sort $(patsubst %/,%,$(dir $(shell find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*'))))

lint: ## golangci-lint in every module (., test/k8s, tools/*) with the one .golangci.yml: depguard, vet, lll, ...
	@failed=; for m in $(LINT_MODULES); do \
	  pkgs=$$(cd $$m && $(GO) list -find ./...) || { failed="$$failed $$m"; continue; }; \
	  if [ -z "$$pkgs" ]; then echo "== lint $$m: no Go packages"; continue; fi; \
	  echo "== lint $$m"; \
	  (cd $$m && $(GOLANGCI_LINT) run --config=$(CURDIR)/.golangci.yml ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "lint found problems in:$$failed" >&2; exit 1; fi

# controller-gen as a Go tool pinned in tools/controllergen, like golangci-lint. It writes one file per kind, named
# <group>_<plural>.yaml; the kustomize base and the chart name theirs <plural>.<group>.yaml.
#: the controller-gen command of make generate
CONTROLLER_GEN ?= $(GO) tool -modfile=tools/controllergen/go.mod controller-gen
CRD_DIRS := deploy/crd deploy/helm/llmbudget/crds
# helm-docs as a Go tool pinned in tools/helmdocs, like controller-gen: it writes the values table of the chart's
# README from values.yaml and its `# --` comments, through the chart's README.md.gotmpl.
#: the helm-docs command of make generate
HELM_DOCS ?= $(GO) tool -modfile=tools/helmdocs/go.mod helm-docs

# The kustomize manifests of deploy/ and metacontroller/ that the chart also renders are hack/manifestgen's renders
# of the chart (a module of its own, on Helm's engine; its first run compiles it, a minute or more of CPU).
#: the manifestgen command of make generate, run in hack/manifestgen
MANIFESTGEN ?= GOWORK=off $(GO) run .

generate: ## write the CRDs, the kustomize manifests from the chart and the generated docs (reference, metrics, ...)
	@out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./internal/api/v1alpha1/crd/... output:crd:artifacts:config=$$out && \
	for f in $$out/*.yaml; do \
	  name=$$(basename $$f .yaml); group=$${name%%_*}; plural=$${name#*_}; \
	  for d in $(CRD_DIRS); do cp $$f $$d/$$plural.$$group.yaml; done; \
	done
	cd hack/manifestgen && $(MANIFESTGEN) -root $(CURDIR)
	@$(MAKE) --no-print-directory apiref
	$(GO) run ./hack/metricsdoc
	$(GO) test -count=1 ./hooks/llmbudget -run '^TestTheCommandsReferenceIsCurrent$$' -update
	$(HELM_DOCS) --chart-search-root deploy/helm/llmbudget --sort-values-order file --log-level warning

apiref: ## write the API reference docs/reference.md from the CRDs in deploy/crd (hack/apiref test checks it)
	$(GO) run ./hack/apiref -crd-dir deploy/crd -out docs/reference.md

fixtures: ## rewrite the crafted hook requests and their golden responses (review the diff!)
	$(GO) test ./test/golden/ -update

# kustomize as a pinned Go tool: no kubectl needed. v5.8.2 is the newest release that builds
# with Go 1.26 (v5.8.3 needs Go 1.27). The first run compiles it (about 45 s of CPU with an empty
# build cache), and says so; later runs take 0.5 s per directory.
#: the kustomize command of make manifests
KUSTOMIZE ?= $(GO) run sigs.k8s.io/kustomize/kustomize/v5@v5.8.2
MANIFEST_DIRS := deploy deploy/overlays/all-kinds deploy/overlays/secure deploy/monitoring deploy/monitoring/kube-state-metrics deploy/notifications metacontroller \
	deploy/overlays/spend-writer deploy/overlays/authz deploy/overlays/admission-check

manifests: ## render the kustomize base, components, overlays, monitoring and Metacontroller manifests
	@echo "rendering with kustomize (its first run compiles it: a minute or more)"
	@for d in $(MANIFEST_DIRS); do \
	  $(KUSTOMIZE) build $$d >/dev/null || { echo "kustomize build $$d failed"; exit 1; }; \
	done; echo "manifests render"

bench: build ## the hooks against their JSON floor, load, memory under attack, admission, spend writer, authz
	$(GO) test -c -o bin/bench.test ./test/bench
	@# Each round runs every body's handler and floor benchmarks back to back,
	@# so the ratio compares figures taken under the same machine load.
	set -o pipefail; cd test/bench && for i in $$(seq $(BENCH_ROUNDS)); do \
	  ../../bin/bench.test -test.run '^$$' -test.bench . -test.benchmem -test.benchtime $(BENCHTIME) || exit 1; \
	done | tee ../../bin/bench.txt
	$(GO) run ./test/bench/cmd/ratio bin/bench.txt
	$(GO) run ./test/load -bin $(BIN) $(LOADFLAGS)
	$(GO) run ./test/attack -bin $(BIN)
	$(GO) run ./test/attack/conns -bin $(BIN)
	$(GO) run ./test/climem -bin $(BIN)
	@# Admission with 1,000 budgets in a namespace, against the real API server, where test/k8s/build.sh built it.
	@if [ -x "$${LLMBUDGET_K8S_BIN:-$$HOME/.cache/llmbudget/k8s/v1.37.2}/kube-apiserver" ]; then \
	  cd test/k8s && $(GO) run ./cmd/admissionbench; \
	else echo "admissionbench: skipped, no kube-apiserver (bash test/k8s/build.sh builds it)"; fi
	@# The spend writer over 1,000 and 10,000 budgets, against the real API server and a real Prometheus.
	@if [ -x "$${LLMBUDGET_K8S_BIN:-$$HOME/.cache/llmbudget/k8s/v1.37.2}/kube-apiserver" ] && \
	  [ -x "$${LLMBUDGET_PROMETHEUS_BIN:-$$HOME/.cache/llmbudget/prometheus/v0.316.0}/prometheus" ]; then \
	  cd test/k8s && $(GO) run ./cmd/writerbench -bin $(CURDIR)/$(BIN) \
	    -prometheus-bin "$${LLMBUDGET_PROMETHEUS_BIN:-$$HOME/.cache/llmbudget/prometheus/v0.316.0}/prometheus"; \
	else echo "writerbench: skipped, no kube-apiserver or Prometheus (test/k8s/build.sh, build-prometheus.sh)"; fi
	@# The spend writer's memory against a hostile Prometheus answering large vectors, with the real API server.
	@if [ -x "$${LLMBUDGET_K8S_BIN:-$$HOME/.cache/llmbudget/k8s/v1.37.2}/kube-apiserver" ]; then \
	  cd test/k8s && $(GO) run ./cmd/writerattack -bin $(CURDIR)/$(BIN); \
	else echo "writerattack: skipped, no kube-apiserver (bash test/k8s/build.sh builds it)"; fi
	@# llmbudget authz at 10,000 namespaces, 1,000 budgets and 100,000 Pods, and through a real Caddy.
	bash test/k8s/build-caddy.sh
	$(GO) run ./test/bench/cmd/authzbench $(AUTHZBENCHFLAGS)
	@# Overshoot: budgets burnt in 2 and 10 minutes through Caddy and authz, the writer's loop and a real Prometheus.
	@if [ -x "$${LLMBUDGET_K8S_BIN:-$$HOME/.cache/llmbudget/k8s/v1.37.2}/kube-apiserver" ] && \
	  [ -x "$${LLMBUDGET_PROMETHEUS_BIN:-$$HOME/.cache/llmbudget/prometheus/v0.316.0}/prometheus" ]; then \
	  cd test/k8s && $(GO) run ./cmd/overshootbench -bin $(CURDIR)/$(BIN) $(OVERSHOOTFLAGS) \
	    -prometheus-bin "$${LLMBUDGET_PROMETHEUS_BIN:-$$HOME/.cache/llmbudget/prometheus/v0.316.0}/prometheus" \
	    -caddy-bin "$${LLMBUDGET_CADDY_BIN:-$$HOME/.cache/llmbudget/caddy/v2.11.9}/caddy"; \
	else echo "overshootbench: skipped, no kube-apiserver or Prometheus (test/k8s/build.sh, build-prometheus.sh)"; fi

# Minimising each new input the fuzzer finds can take most of a short run (the default allows 60 s): a bound in
# executions keeps the run fuzzing, on a busy machine too.
fuzz: ## run every fuzz target for $(FUZZTIME); print the executions each reached
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    out=$$($(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg 2>&1) \
	      || { echo "$$out"; echo "fuzz $$pkg $$f failed"; exit 1; }; \
	    execs=$$(echo "$$out" | grep -o 'execs: [0-9]*' | tail -1 | cut -d' ' -f2); \
	    printf '%-32s %-28s %10s execs in %s\n' "$${pkg#$(MODULE)/}" "$$f" "$${execs:-?}" "$(FUZZTIME)"; \
	  done; done

# The image: built by tools/image (go-containerregistry, its own module) from the static
# binaries, with every timestamp at the commit's time so that one commit gives one digest.
#: the platforms make image builds, comma-separated
IMAGE_PLATFORMS ?= linux/$(shell $(GO) env GOARCH)
#: where make image writes the OCI layout
IMAGE_DIR ?= bin/image
#: where make image writes the image archive
IMAGE_TAR ?= bin/llmbudget-image.tar
#: the time of every file in the image (the commit's)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
#: the commit the image names
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

image: ## OCI image (user 65532, no shell) of IMAGE_PLATFORMS into IMAGE_DIR and IMAGE_TAR, without Docker
	@set -e; bins=; for p in $(subst $(comma), ,$(IMAGE_PLATFORMS)); do \
	  out=$(abspath bin/image-bin)/$${p//\//_}/llmbudget; \
	  echo 'GOOS='$${p%%/*}' GOARCH='$${p#*/}' $(GOBUILD) -o '$$out' ./hooks/llmbudget'; \
	  GOOS=$${p%%/*} GOARCH=$${p#*/} $(GOBUILD) -o $$out ./hooks/llmbudget; bins="$$bins -bin $$p=$$out"; \
	done; \
	cd tools/image && GOWORK=off $(GO) run . -out $(abspath $(IMAGE_DIR)) $(if $(IMAGE_TAR),-tar $(abspath $(IMAGE_TAR))) \
	  -version $(VERSION) -revision $(REVISION) -epoch $(SOURCE_DATE_EPOCH) $$bins

test-image: ## build the image twice; check its user, entrypoint, files, version and reproducible digest
	$(MAKE) --no-print-directory image
	$(MAKE) --no-print-directory image IMAGE_DIR=bin/image-again IMAGE_TAR=
	cd tools/image && GOWORK=off LLMBUDGET_IMAGE=$(abspath $(IMAGE_DIR)) LLMBUDGET_IMAGE_AGAIN=$(abspath bin/image-again) \
	  LLMBUDGET_VERSION=$(VERSION) $(GO) test -count=1 .

k8s-bins: ## build kube-apiserver, kube-controller-manager and kubectl v1.37.2, and etcd, into the cache (once)
	bash test/k8s/build.sh

test-integration: ## integration tests against a real API server (builds the binaries first)
	bash test/k8s/run.sh

clean:
	rm -rf bin
