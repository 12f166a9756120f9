package deploytest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// The kube-state-metrics Custom Resource State configuration, mirrored from
// k8s.io/kube-state-metrics/v2/pkg/customresourcestate (config.go and
// config_metrics_types.go, v2.20) so that a strict decode refuses any field kube-state-metrics
// would silently ignore (it decodes leniently: a misspelt `valueFrom` just yields no series).
type ksmConfig struct {
	Kind string  `json:"kind"`
	Spec ksmSpec `json:"spec"`
}

type ksmSpec struct {
	Resources []ksmResource `json:"resources"`
}

type ksmResource struct {
	CommonLabels     map[string]string   `json:"commonLabels,omitempty"`
	LabelsFromPath   map[string][]string `json:"labelsFromPath,omitempty"`
	MetricNamePrefix *string             `json:"metricNamePrefix"`
	GroupVersionKind struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"groupVersionKind"`
	ResourcePlural string         `json:"resourcePlural,omitempty"`
	Metrics        []ksmGenerator `json:"metrics"`
	ErrorLogV      int            `json:"errorLogV,omitempty"`
}

type ksmGenerator struct {
	Each           ksmMetric           `json:"each"`
	CommonLabels   map[string]string   `json:"commonLabels,omitempty"`
	LabelsFromPath map[string][]string `json:"labelsFromPath,omitempty"`
	Name           string              `json:"name"`
	Help           string              `json:"help"`
	ErrorLogV      int                 `json:"errorLogV,omitempty"`
}

type ksmMetric struct {
	Gauge    *ksmGauge    `json:"gauge,omitempty"`
	StateSet *ksmStateSet `json:"stateSet,omitempty"`
	Info     *ksmInfo     `json:"info,omitempty"`
	Type     string       `json:"type"`
}

type ksmGauge struct {
	LabelFromKey   string              `json:"labelFromKey,omitempty"`
	LabelsFromPath map[string][]string `json:"labelsFromPath,omitempty"`
	Path           []string            `json:"path"`
	ValueFrom      []string            `json:"valueFrom,omitempty"`
	NilIsZero      bool                `json:"nilIsZero,omitempty"`
}

type ksmInfo struct {
	LabelFromKey   string              `json:"labelFromKey,omitempty"`
	LabelsFromPath map[string][]string `json:"labelsFromPath,omitempty"`
	Path           []string            `json:"path"`
}

type ksmStateSet struct {
	LabelsFromPath map[string][]string `json:"labelsFromPath,omitempty"`
	Path           []string            `json:"path"`
	List           []string            `json:"list"`
	LabelName      string              `json:"labelName"`
	ValueFrom      []string            `json:"valueFrom,omitempty"`
}

const ksmConfigFile = "deploy/monitoring/kube-state-metrics/custom-resource-state.yaml"

func loadKSMConfig(t testing.TB) ksmConfig {
	t.Helper()
	var cfg ksmConfig
	readYAML(t, ksmConfigFile, &cfg)
	require.Len(t, cfg.Spec.Resources, 2, "LLMCostBudget and ClusterLLMCostBudget")
	return cfg
}

// ksmSeries lists the series names the configuration makes kube-state-metrics export.
func ksmSeries(t testing.TB) map[string]bool {
	t.Helper()
	cfg := loadKSMConfig(t)
	series := map[string]bool{}
	for _, r := range cfg.Spec.Resources {
		for _, m := range r.Metrics {
			series[*r.MetricNamePrefix+"_"+m.Name] = true
		}
	}
	return series
}

// knownSeries is every series a rule or dashboard may use: kube-state-metrics' llmbudget_*
// series, the llmbudget server's own, and Prometheus' `up`.
func knownSeries(t testing.TB) map[string]bool {
	t.Helper()
	known := map[string]bool{"up": true}
	for s := range ksmSeries(t) {
		known[s] = true
	}
	for s := range serviceSeries(t) {
		require.NotContains(t, known, s, "the server and kube-state-metrics both export %s", s)
		known[s] = true
	}
	return known
}

// crdSchema is the LLMCostBudget CRD's openAPIV3Schema and its group, served version and kind.
type crdInfo struct {
	group, version, kind string
	schema               map[string]any
}

func budgetCRD(t testing.TB, rel string) crdInfo {
	t.Helper()
	var crd map[string]any
	data, err := os.ReadFile(repoPath(t, rel))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &crd))
	group, _ := dig(crd, "spec", "group")
	kind, _ := dig(crd, "spec", "names", "kind")
	version, _ := dig(crd, "spec", "versions", 0, "name")
	schema, ok := dig(crd, "spec", "versions", 0, "schema", "openAPIV3Schema")
	require.True(t, ok, "%s has an openAPIV3Schema", rel)
	return crdInfo{group.(string), version.(string), kind.(string), schema.(map[string]any)}
}

// schemaAt follows path through an OpenAPI schema, stepping into array items; ok is false
// when a field is not declared. metadata.name and metadata.namespace always exist.
func schemaAt(schema map[string]any, path []string) (map[string]any, bool) {
	if len(path) == 2 && path[0] == "metadata" && (path[1] == "name" || path[1] == "namespace") {
		return map[string]any{"type": "string"}, true
	}
	cur := schema
	for _, p := range path {
		for cur["type"] == "array" {
			cur, _ = cur["items"].(map[string]any)
		}
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[p].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// getPath resolves a kube-state-metrics path in decoded JSON (plain field names only).
func getPath(v any, path []string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// ksmFloat converts a value as kube-state-metrics' toFloat64 does.
func ksmFloat(v any) (float64, error) {
	switch v := v.(type) {
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case float64:
		return v, nil
	case string:
		switch strings.ToLower(v) {
		case "true", "yes":
			return 1, nil
		case "false", "no", "unknown":
			return 0, nil
		}
		if ts, err := time.Parse(time.RFC3339, v); err == nil {
			return float64(ts.Unix()), nil
		}
		if q, err := resource.ParseQuantity(v); err == nil {
			return q.AsApproximateFloat64(), nil
		}
		return strconv.ParseFloat(v, 64)
	case nil:
		return 0, fmt.Errorf("nil value")
	}
	return 0, fmt.Errorf("unsupported %T", v)
}

// sampleBudget is an LLMCostBudget as kube-state-metrics would see it: the parent of a golden
// budget/sync request with the status the hook answered.
type sampleBudget struct {
	name string
	obj  map[string]any
}

func sampleBudgets(t testing.TB) []sampleBudget { return sampleParents(t, "budget") }

// sampleParents are the parents of the golden sync responses of controller, each with the
// status its response writes.
func sampleParents(t testing.TB, controller string) []sampleBudget {
	t.Helper()
	dir := repoPath(t, "test", "fixtures", controller, "sync")
	responses, err := filepath.Glob(filepath.Join(dir, "*.response.json"))
	require.NoError(t, err)
	require.NotEmpty(t, responses)
	var out []sampleBudget
	for _, resp := range responses {
		var answer struct {
			Status map[string]any `json:"status"`
		}
		var request struct {
			Parent map[string]any `json:"parent"`
		}
		readJSON(t, resp, &answer)
		readJSON(t, strings.TrimSuffix(resp, ".response.json")+".request.json", &request)
		if answer.Status == nil {
			continue
		}
		obj := request.Parent
		obj["status"] = answer.Status
		out = append(out, sampleBudget{strings.TrimSuffix(filepath.Base(resp), ".response.json"), obj})
	}
	return out
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "%s", path)
}

// ksmValues evaluates one metric on one object as kube-state-metrics would, returning the
// values it would export (labels are not modelled) and any conversion errors.
func ksmValues(m ksmMetric, obj map[string]any) (values []float64, errs []error) {
	add := func(v any) {
		f, err := ksmFloat(v)
		if err != nil {
			errs = append(errs, err)
			return
		}
		values = append(values, f)
	}
	switch {
	case m.Gauge != nil:
		switch v := getPath(obj, m.Gauge.Path).(type) {
		case nil:
		case []any:
			for _, el := range v {
				if got := getPath(el, m.Gauge.ValueFrom); got != nil {
					add(got)
				}
			}
		case map[string]any:
			if len(m.Gauge.ValueFrom) == 0 {
				for _, child := range v {
					add(child)
				}
			} else if got := getPath(v, m.Gauge.ValueFrom); got != nil {
				add(got)
			}
		default:
			if len(m.Gauge.ValueFrom) > 0 {
				errs = append(errs, fmt.Errorf("valueFrom below a scalar"))
			} else {
				add(v)
			}
		}
	case m.StateSet != nil:
		check := func(v any) {
			s, ok := getPath(v, m.StateSet.ValueFrom).(string)
			if !ok {
				errs = append(errs, fmt.Errorf("state is %T, not a string", v))
				return
			}
			if !slices.Contains(m.StateSet.List, s) {
				errs = append(errs, fmt.Errorf("state %q is not in the list %v", s, m.StateSet.List))
			}
			values = append(values, 1)
		}
		switch v := getPath(obj, m.StateSet.Path).(type) {
		case nil:
		case []any:
			for _, el := range v {
				check(el)
			}
		default:
			check(v)
		}
	case m.Info != nil:
		if v := getPath(obj, m.Info.Path); v != nil {
			for label, p := range m.Info.LabelsFromPath {
				if _, ok := getPath(v, p).(string); !ok {
					errs = append(errs, fmt.Errorf("label %s: %v is not a string", label, p))
				}
			}
			values = append(values, 1)
		}
	}
	return values, errs
}

func TestKubeStateMetricsConfigDecodesStrictlyAndDescribesLLMCostBudget(t *testing.T) {
	cfg := loadKSMConfig(t)
	crd := budgetCRD(t, "deploy/crd/llmcostbudgets.llmbudget.dev.yaml")
	r := cfg.Spec.Resources[0]

	assert.Equal(t, "CustomResourceStateMetrics", cfg.Kind)
	assert.Equal(t, crd.group, r.GroupVersionKind.Group)
	assert.Equal(t, crd.version, r.GroupVersionKind.Version)
	assert.Equal(t, crd.kind, r.GroupVersionKind.Kind)
	require.NotNil(t, r.MetricNamePrefix)
	assert.Equal(t, "llmbudget", *r.MetricNamePrefix)
	assert.Equal(t, map[string][]string{"namespace": {"metadata", "namespace"}, "name": {"metadata", "name"}},
		r.LabelsFromPath)

	names := map[string]bool{}
	metricName := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, m := range r.Metrics {
		t.Run(m.Name, func(t *testing.T) {
			assert.Regexp(t, metricName, m.Name)
			assert.False(t, names[m.Name], "metric %s is defined twice", m.Name)
			names[m.Name] = true
			assert.NotEmpty(t, m.Help)
			set := 0
			for _, isSet := range []bool{m.Each.Gauge != nil, m.Each.StateSet != nil, m.Each.Info != nil} {
				if isSet {
					set++
				}
			}
			require.Equal(t, 1, set, "exactly one of gauge, stateSet, info")
			switch m.Each.Type {
			case "Gauge":
				require.NotNil(t, m.Each.Gauge)
			case "StateSet":
				require.NotNil(t, m.Each.StateSet)
				assert.NotEmpty(t, m.Each.StateSet.LabelName)
				states, ok := schemaAt(crd.schema, []string{"status", "state"})
				require.True(t, ok)
				assert.ElementsMatch(t, states["enum"], toAny(m.Each.StateSet.List), "the StateSet lists exactly the CRD's states")
			case "Info":
				require.NotNil(t, m.Each.Info)
				assert.NotEmpty(t, m.Each.Info.LabelsFromPath)
			default:
				t.Fatalf("type %q is not Gauge, StateSet or Info", m.Each.Type)
			}
		})
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// metricPaths lists every field a metric reads, as full paths from the object root.
func metricPaths(m ksmMetric) [][]string {
	join := func(a, b []string) []string { return append(slices.Clone(a), b...) }
	var paths [][]string
	switch {
	case m.Gauge != nil:
		paths = append(paths, join(m.Gauge.Path, m.Gauge.ValueFrom))
		for _, p := range m.Gauge.LabelsFromPath {
			paths = append(paths, join(m.Gauge.Path, p))
		}
	case m.StateSet != nil:
		paths = append(paths, join(m.StateSet.Path, m.StateSet.ValueFrom))
		for _, p := range m.StateSet.LabelsFromPath {
			paths = append(paths, join(m.StateSet.Path, p))
		}
	case m.Info != nil:
		for _, p := range m.Info.LabelsFromPath {
			paths = append(paths, join(m.Info.Path, p))
		}
	}
	return paths
}

func TestKubeStateMetricsPathsExistInTheCRDAndInRealStatuses(t *testing.T) {
	cfg := loadKSMConfig(t)
	require.Len(t, cfg.Spec.Resources, 2, "LLMCostBudget and ClusterLLMCostBudget")
	t.Run("LLMCostBudget", func(t *testing.T) {
		assertPathsExist(t, cfg.Spec.Resources[0], "deploy/crd/llmcostbudgets.llmbudget.dev.yaml", sampleBudgets(t))
	})
	t.Run("ClusterLLMCostBudget", func(t *testing.T) {
		r := cfg.Spec.Resources[1]
		assert.Equal(t, "ClusterLLMCostBudget", r.GroupVersionKind.Kind)
		assertPathsExist(t, r, "deploy/crd/clusterllmcostbudgets.llmbudget.dev.yaml", sampleParents(t, "clusterbudget"))
	})
}

func assertPathsExist(t *testing.T, r ksmResource, crdFile string, samples []sampleBudget) {
	crd := budgetCRD(t, crdFile)

	for label, p := range r.LabelsFromPath {
		_, ok := schemaAt(crd.schema, p)
		assert.True(t, ok, "label %s: %v", label, p)
	}
	for _, m := range r.Metrics {
		t.Run(m.Name, func(t *testing.T) {
			for _, p := range metricPaths(m.Each) {
				_, ok := schemaAt(crd.schema, p)
				assert.True(t, ok, "%v is not declared in the LLMCostBudget CRD, so the API server would prune it from status", p)
			}
			exported := 0
			for _, s := range samples {
				values, errs := ksmValues(m.Each, s.obj)
				for _, err := range errs {
					t.Errorf("golden status %s: %v", s.name, err)
				}
				exported += len(values)
			}
			assert.Positive(t, exported, "no golden budget/sync status yields a value for %s", m.Name)
		})
	}
}

func TestKubeStateMetricsCoversTheStatusFieldsWeAlertAndGraphOn(t *testing.T) {
	cfg := loadKSMConfig(t)
	var read []string
	for _, m := range cfg.Spec.Resources[0].Metrics {
		for _, p := range metricPaths(m.Each) {
			read = append(read, strings.Join(p, "."))
		}
		if m.Each.Gauge != nil && m.Each.Gauge.LabelFromKey != "" {
			read = append(read, strings.Join(m.Each.Gauge.Path, "."))
		}
	}
	for _, field := range []string{
		"status.observedSpendUSD", "status.limitUSD", "status.remainingUSD", "status.forecastSpendUSD",
		"status.percentUsed", "status.tokens", "status.state", "status.enforcement.blocking", "status.period.end",
	} {
		assert.Contains(t, read, field)
	}
}

func TestKubeStateMetricsHelmValuesCarryTheSameConfig(t *testing.T) {
	var raw, values map[string]any
	readYAML(t, ksmConfigFile, &raw)
	readYAML(t, "deploy/monitoring/kube-state-metrics/values.yaml", &values)
	config, ok := dig(values, "kube-state-metrics", "customResourceState", "config")
	require.True(t, ok)
	assert.Equal(t, raw, config, "values.yaml and custom-resource-state.yaml disagree")
	enabled, _ := dig(values, "kube-state-metrics", "customResourceState", "enabled")
	assert.Equal(t, true, enabled)
	rules, _ := dig(values, "kube-state-metrics", "rbac", "extraRules")
	assert.Contains(t, rules, map[string]any{
		"apiGroups": []any{"llmbudget.dev"}, "resources": []any{"llmcostbudgets", "clusterllmcostbudgets"},
		"verbs": []any{"list", "watch"},
	})

	objs := byKey(t, kustomize(t, "deploy/monitoring/kube-state-metrics"))
	cm, ok := objs["ConfigMap monitoring/llmbudget-kube-state-metrics"]
	require.True(t, ok, "rendered: %v", sortedKeys(objs))
	file, err := os.ReadFile(repoPath(t, ksmConfigFile))
	require.NoError(t, err)
	data, _ := dig(cm, "data", "config.yaml")
	assert.Equal(t, string(file), data)
}
