#!/usr/bin/env bash
# run.sh runs the real-Kubernetes integration tests: it builds kube-apiserver,
# kube-controller-manager and etcd first if the cache lacks them (see build.sh), and the
# Prometheus of the spend test (build-prometheus.sh), the Kueue of the Kueue test
# (build-kueue.sh) and the Caddy of the authz test (build-caddy.sh), then runs `go test -tags
# integration` in this module. Its exit code is go test's.
#
#   test/k8s/run.sh               all integration tests
#   test/k8s/run.sh -v -run CRD   extra arguments go to go test
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LLMBUDGET_K8S_BIN=${LLMBUDGET_K8S_BIN:-$HOME/.cache/llmbudget/k8s/v1.37.2}
export GOWORK=off

"$here/build.sh"
"$here/build-prometheus.sh"
"$here/build-kueue.sh"
"$here/build-caddy.sh"
cd "$here"
exec go test -tags integration -count=1 -timeout 30m "$@" ./...
