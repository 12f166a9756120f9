package deploytest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

const runbookBase = "https://github.com/llmbudget/llmbudget/blob/main/docs/runbooks.md#"

func loadPrometheusRule(t testing.TB) monitoringv1.PrometheusRule {
	t.Helper()
	var rule monitoringv1.PrometheusRule
	readYAML(t, "deploy/monitoring/prometheusrule.yaml", &rule)
	require.Equal(t, "monitoring.coreos.com/v1", rule.APIVersion)
	require.Equal(t, "PrometheusRule", rule.Kind)
	return rule
}

func TestPrometheusRuleHasTheAlertsWeDocument(t *testing.T) {
	rule := loadPrometheusRule(t)
	got := map[string]monitoringv1.Rule{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s has a recording rule; only alerts are expected", g.Name)
			require.NotContains(t, got, r.Alert)
			got[r.Alert] = r
		}
	}
	assert.ElementsMatch(t, []string{
		"LLMBudgetWarning", "LLMBudgetOverBudget", "LLMBudgetForecastOverBudget", "LLMBudgetUnknown", "LLMBudgetSpendStale",
		"LLMBudgetHookErrors", "LLMBudgetHookLatencyHigh", "LLMBudgetServiceDown",
	}, sortedKeys(got))

	forOf := func(name string) string {
		if r, ok := got[name]; ok && r.For != nil {
			return string(*r.For)
		}
		return ""
	}
	assert.Equal(t, "30m", forOf("LLMBudgetUnknown"), "Unknown for 30 minutes")
	assert.Equal(t, "10m", forOf("LLMBudgetHookLatencyHigh"), "p99 latency for 10 minutes")
	assert.Contains(t, exprOf(got["LLMBudgetHookLatencyHigh"]), "histogram_quantile(0.99")
	assert.Contains(t, exprOf(got["LLMBudgetHookLatencyHigh"]), "> 0.25")
	assert.Contains(t, exprOf(got["LLMBudgetHookErrors"]), `code!="200"`)
	assert.Contains(t, exprOf(got["LLMBudgetServiceDown"]), "absent(up{")
}

// exprOf is a rule's expression text.
func exprOf(r monitoringv1.Rule) string { return r.Expr.String() }

func TestPrometheusRuleExpressionsParseAndUseOnlyRealSeries(t *testing.T) {
	rule := loadPrometheusRule(t)
	known := knownSeries(t)
	anchors := markdownAnchors(t, "docs/runbooks.md")
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				info := requireKnownSeries(t, r.Alert, exprOf(r), known)
				if r.For != nil {
					_, err := model.ParseDuration(string(*r.For))
					assert.NoError(t, err, "for: %s", *r.For)
				}
				assert.Contains(t, []string{"warning", "critical"}, r.Labels["severity"])

				for _, a := range []string{"summary", "description", "runbook_url"} {
					assert.NotEmpty(t, r.Annotations[a], "annotation %s", a)
				}
				url := r.Annotations["runbook_url"]
				assert.Equal(t, runbookBase+strings.ToLower(r.Alert), url)
				anchor := strings.TrimPrefix(url, runbookBase)
				assert.True(t, anchors[anchor], "docs/runbooks.md has no heading for #%s", anchor)

				for _, a := range []string{"summary", "description"} {
					used, err := expandAlertTemplate(r.Annotations[a])
					require.NoError(t, err, "annotation %s", a)
					for _, l := range used {
						assert.True(t, info.grouping[l], "annotation %s uses $labels.%s, which the expression does not keep (by: %v)",
							a, l, sortedSet(info.grouping))
					}
				}
			})
		}
	}
}

// expandAlertTemplate runs an alert annotation as Prometheus does (text/template with
// $labels and $value defined, and Prometheus' template functions) and returns the labels it
// reads.
func expandAlertTemplate(text string) ([]string, error) {
	var used []string
	labels := map[string]string{}
	for _, m := range regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`).FindAllStringSubmatch(text, -1) {
		used = append(used, m[1])
		labels[m[1]] = "example"
	}
	funcs := template.FuncMap{
		"humanize":           func(v float64) string { return fmt.Sprintf("%.4g", v) },
		"humanize1024":       func(v float64) string { return fmt.Sprintf("%.4g", v) },
		"humanizeDuration":   func(v float64) string { return (time.Duration(v * float64(time.Second))).String() },
		"humanizePercentage": func(v float64) string { return fmt.Sprintf("%.4g%%", v*100) },
		"humanizeTimestamp":  func(v float64) string { return time.Unix(int64(v), 0).UTC().String() },
		"toUpper":            strings.ToUpper,
		"toLower":            strings.ToLower,
		"title":              strings.ToTitle,
	}
	prefix := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$value := .Value}}"
	tmpl, err := template.New("annotation").Option("missingkey=zero").Funcs(funcs).Parse(prefix + text)
	if err != nil {
		return nil, err
	}
	var out strings.Builder
	err = tmpl.Execute(&out, map[string]any{"Labels": labels, "ExternalLabels": map[string]string{}, "Value": 0.3})
	if err == nil && strings.Contains(out.String(), "<no value>") {
		err = fmt.Errorf("renders <no value>: %s", out.String())
	}
	return used, err
}

// markdownAnchors lists the GitHub anchors of a Markdown file's headings.
func markdownAnchors(t testing.TB, rel string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, rel))
	require.NoError(t, err)
	anchors := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors[githubAnchor(heading)] = true
	}
	return anchors
}

// githubAnchor is GitHub's heading slug: lower case, punctuation dropped, spaces to hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// grafanaVariables replaces a dashboard's variables with values PromQL accepts.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m", "${__rate_interval}", "5m", "$__interval", "1m", "$__range", "1h",
	"$namespace", ".*", "${namespace}", ".*", "$budget", ".*", "${budget}", ".*", "$job", ".*", "${job}", ".*",
)

type grafanaPanel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource map[string]any `json:"datasource"`
	Targets    []struct {
		Expr       string         `json:"expr"`
		RefID      string         `json:"refId"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string         `json:"name"`
			Type       string         `json:"type"`
			Query      any            `json:"query"`
			Definition string         `json:"definition"`
			Datasource map[string]any `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

func loadDashboard(t testing.TB) (grafanaDashboard, []byte) {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "deploy/monitoring/grafana-dashboard.json"))
	require.NoError(t, err)
	var d grafanaDashboard
	require.NoError(t, json.Unmarshal(data, &d))
	return d, data
}

func flattenPanels(ps []grafanaPanel) []grafanaPanel {
	var out []grafanaPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flattenPanels(p.Panels)...)
	}
	return out
}

func TestGrafanaDashboardIsTemplatedAndHasTheAgreedPanels(t *testing.T) {
	d, _ := loadDashboard(t)
	assert.GreaterOrEqual(t, d.SchemaVersion, 39)
	assert.NotEmpty(t, d.UID)

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	assert.Equal(t, "datasource", vars["datasource"], "a templated data source")
	assert.Equal(t, "query", vars["namespace"], "a namespace variable")

	titles := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range flattenPanels(d.Panels) {
		assert.False(t, ids[p.ID], "panel id %d is used twice", p.ID)
		ids[p.ID] = true
		titles[p.Title] = true
		if p.Type == "row" {
			continue
		}
		assert.Equal(t, "${datasource}", p.Datasource["uid"], "panel %q uses the templated data source", p.Title)
		for _, target := range p.Targets {
			assert.Equal(t, "${datasource}", target.Datasource["uid"], "panel %q target %s", p.Title, target.RefID)
		}
	}
	for _, want := range []string{
		"Spend vs limit", "Percent of limit used", "Forecast vs limit", "Budget states", "Blocking budgets",
		"Hook requests by code", "Hook latency p50 / p99", "Evaluations by state",
	} {
		assert.True(t, titles[want], "panel %q", want)
	}
}

func TestGrafanaDashboardQueriesParseAndUseOnlyRealSeries(t *testing.T) {
	d, raw := loadDashboard(t)
	known := knownSeries(t)
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: %q is not label_values(<series>, <label>)", v.Name, v.Definition)
		requireKnownSeries(t, "variable "+v.Name, grafanaVariables.Replace(m[1]), known)
	}
	exprs := 0
	for _, p := range flattenPanels(d.Panels) {
		for _, target := range p.Targets {
			exprs++
			requireKnownSeries(t, fmt.Sprintf("panel %q target %s", p.Title, target.RefID),
				grafanaVariables.Replace(target.Expr), known)
		}
	}
	assert.Positive(t, exprs)

	objs := byKey(t, kustomize(t, "deploy/monitoring"))
	cm, ok := objs["ConfigMap monitoring/llmbudget-dashboard"]
	require.True(t, ok, "rendered: %v", sortedKeys(objs))
	data, _ := dig(cm, "data", "llmbudget.json")
	assert.Equal(t, string(raw), data)
	label, _ := dig(cm, "metadata", "labels", "grafana_dashboard")
	assert.Equal(t, "1", label)
}

func TestServiceMonitorScrapesTheServicePortByName(t *testing.T) {
	var sm monitoringv1.ServiceMonitor
	readYAML(t, "deploy/monitoring/servicemonitor.yaml", &sm)
	svc := byKey(t, kustomize(t, "deploy"))["Service llmbudget-system/llmbudget"]
	require.NotNil(t, svc)
	port, _ := dig(svc, "spec", "ports", 1, "name")
	require.Len(t, sm.Spec.Endpoints, 1)
	assert.Equal(t, "metrics", port, "the Service's second port serves /metrics alone")
	assert.Equal(t, port, sm.Spec.Endpoints[0].Port)
	assert.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	selector, _ := dig(svc, "metadata", "labels")
	for k, v := range sm.Spec.Selector.MatchLabels {
		assert.Equal(t, v, selector.(map[string]any)[k], "the Service carries the selected label %s", k)
	}
	assert.Equal(t, []string{"llmbudget-system"}, sm.Spec.NamespaceSelector.MatchNames)
}

// A NetworkPolicy admits ports, not paths: the monitoring namespace may reach the port that
// serves /metrics alone (serve --metrics-addr), never the hooks, in every variant.
func TestTheMonitoringNamespaceReachesOnlyTheMetricsPort(t *testing.T) {
	variants := map[string][]object{
		"kustomize":        kustomize(t, "deploy"),
		"kustomize secure": kustomize(t, "deploy/overlays/secure"),
		"helm":             renderChart(t, nil),
		"helm secure":      renderChart(t, secureValues),
	}
	for name, objs := range variants {
		t.Run(name, func(t *testing.T) {
			byK := byKey(t, objs)
			dep := byK["Deployment llmbudget-system/llmbudget"]
			require.NotNil(t, dep)
			container, _ := dig(dep, "spec", "template", "spec", "containers", 0)
			args := container.(map[string]any)["args"]
			assert.Contains(t, args, "--metrics-addr=:9090")
			ports := map[string]float64{}
			raw, _ := dig(container, "ports")
			for _, p := range raw.([]any) {
				ports[p.(map[string]any)["name"].(string)] = p.(map[string]any)["containerPort"].(float64)
			}
			require.Equal(t, float64(9090), ports["metrics"])

			np := byK["NetworkPolicy llmbudget-system/llmbudget"]
			require.NotNil(t, np)
			rules, _ := dig(np, "spec", "ingress")
			var monitoring []any
			for _, r := range rules.([]any) {
				ns, _ := dig(r, "from", 0, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
				if ns == "monitoring" {
					monitoring = append(monitoring, r)
				}
			}
			require.Len(t, monitoring, 1)
			allowed, _ := dig(monitoring[0], "ports")
			assert.Equal(t, []any{map[string]any{"protocol": "TCP", "port": float64(9090)}}, allowed)
		})
	}
}

// stringMap turns decoded YAML labels into a label set.
func stringMap(v any) labels.Set {
	set := labels.Set{}
	m, _ := v.(map[string]any)
	for k, v := range m {
		set[k] = fmt.Sprint(v)
	}
	return set
}

// unscrapedMetricsPorts lists every container port named metrics of every Deployment in objs that no ServiceMonitor
// of objs scrapes: through a Service of its namespace that selects the Pods and exposes the port, selected by a
// ServiceMonitor that looks in that namespace and has an endpoint on that Service port.
func unscrapedMetricsPorts(t *testing.T, objs []object) (ports int, unscraped []string) {
	t.Helper()
	for _, dep := range ofKind(objs, "Deployment") {
		ns, _ := dig(dep, "metadata", "namespace")
		podLabels, _ := dig(dep, "spec", "template", "metadata", "labels")
		containers, _ := dig(dep, "spec", "template", "spec", "containers")
		for _, c := range containers.([]any) {
			cports, _ := dig(c, "ports")
			for _, p := range asList(cports) {
				if dig1(p, "name") != "metrics" {
					continue
				}
				ports++
				if !scraped(objs, ns, stringMap(podLabels), p.(map[string]any)) {
					unscraped = append(unscraped, fmt.Sprintf("%s port %v", key(dep), dig1(p, "containerPort")))
				}
			}
		}
	}
	return ports, unscraped
}

func scraped(objs []object, ns any, podLabels labels.Set, port map[string]any) bool {
	for _, svc := range ofKind(objs, "Service") {
		if dig1(svc, "metadata", "namespace") != ns {
			continue
		}
		sel := stringMap(dig1(svc, "spec", "selector"))
		if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(podLabels) {
			continue
		}
		for _, sp := range asList(dig1(svc, "spec", "ports")) {
			target := fmt.Sprint(dig1(sp, "targetPort"))
			if target != fmt.Sprint(port["name"]) && target != fmt.Sprint(port["containerPort"]) {
				continue
			}
			for _, sm := range ofKind(objs, "ServiceMonitor") {
				names := asList(dig1(sm, "spec", "namespaceSelector", "matchNames"))
				if !slices.Contains(names, ns) || !labels.SelectorFromSet(stringMap(
					dig1(sm, "spec", "selector", "matchLabels"))).Matches(stringMap(dig1(svc, "metadata", "labels"))) {
					continue
				}
				for _, ep := range asList(dig1(sm, "spec", "endpoints")) {
					if dig1(ep, "port") == dig1(sp, "name") {
						return true
					}
				}
			}
		}
	}
	return false
}

func dig1(v any, path ...any) any {
	got, _ := dig(v, path...)
	return got
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// A component whose /metrics nobody scrapes fails unseen: every metrics port of every Deployment that an install
// runs, by kustomize with deploy/monitoring or by the chart with its ServiceMonitor, is scraped.
func TestEveryMetricsPortOfEveryDeploymentIsScraped(t *testing.T) {
	monitoring := kustomize(t, "deploy/monitoring")
	withMonitor := func(values map[string]any) map[string]any {
		out := map[string]any{"monitoring": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}
		for k, v := range values {
			out[k] = v
		}
		return out
	}
	authz := map[string]any{"authz": map[string]any{"enabled": true}}
	variants := map[string][]object{
		"kustomize":              append(kustomize(t, "deploy"), monitoring...),
		"kustomize authz":        append(kustomize(t, "deploy/overlays/authz"), monitoring...),
		"kustomize secure":       append(kustomize(t, "deploy/overlays/secure"), monitoring...),
		"kustomize spend writer": append(kustomize(t, "deploy/overlays/spend-writer"), monitoring...),
		"helm":                   renderChart(t, withMonitor(nil)),
		"helm authz":             renderChart(t, withMonitor(authz)),
		"helm secure":            renderChart(t, withMonitor(secureValues)),
		"helm authz and spend writer": renderChart(t, withMonitor(map[string]any{"authz": authz["authz"],
			"spendWriter": map[string]any{"enabled": true}})),
	}
	for name, objs := range variants {
		t.Run(name, func(t *testing.T) {
			ports, unscraped := unscrapedMetricsPorts(t, objs)
			assert.Positive(t, ports)
			assert.Empty(t, unscraped)
		})
	}
}
