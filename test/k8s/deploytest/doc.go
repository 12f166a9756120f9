// Package deploytest checks llmbudget's deployment artefacts without a cluster: the Helm
// chart against the kustomize manifests, the kube-state-metrics configuration, the
// PrometheusRule and Grafana dashboard against the series that really exist, the
// kubernetes-event-exporter routes, the secure component against Metacontroller's CRD
// schema, and the Argo CD health check.
//
// Its tests carry no build tag: `go test ./...` in test/k8s runs them, and so does
// test/k8s/run.sh (`make test-integration`). They need kubectl (for `kubectl kustomize`)
// and the Go toolchain (to build and run the llmbudget server once), nothing else.
package deploytest
