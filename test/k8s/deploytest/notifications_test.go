package deploytest_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubernetes-event-exporter configuration, mirrored from
// github.com/resmoio/kubernetes-event-exporter v1.7 (pkg/exporter/config.go, route.go,
// rule.go; pkg/sinks/receiver.go, webhook.go), for a strict decode: the exporter itself
// ignores unknown fields, so a misspelt match field would silently match everything. Fields
// without a yaml tag there are read under their lower-cased Go name. Only the webhook sink is
// mirrored: it is the only one we use.
type exporterConfig struct {
	LogLevel           string `json:"logLevel"`
	LogFormat          string `json:"logFormat"`
	ThrottlePeriod     int64  `json:"throttlePeriod"`
	MaxEventAgeSeconds int64  `json:"maxEventAgeSeconds"`
	ClusterName        string `json:"clusterName"`
	Namespace          string `json:"namespace"`
	LeaderElection     struct {
		Enabled          bool   `json:"enabled"`
		LeaderElectionID string `json:"leaderElectionID"`
	} `json:"leaderElection"`
	Route             exporterRoute      `json:"route"`
	Receivers         []exporterReceiver `json:"receivers"`
	KubeQPS           float32            `json:"kubeQPS"`
	KubeBurst         int                `json:"kubeBurst"`
	MetricsNamePrefix string             `json:"metricsNamePrefix"`
	OmitLookup        bool               `json:"omitLookup"`
	CacheSize         int                `json:"cacheSize"`
}

type exporterRoute struct {
	Drop   []exporterRule  `json:"drop"`
	Match  []exporterRule  `json:"match"`
	Routes []exporterRoute `json:"routes"`
}

type exporterRule struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Message     string            `json:"message"`
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	Namespace   string            `json:"namespace"`
	Reason      string            `json:"reason"`
	Type        string            `json:"type"`
	MinCount    int32             `json:"minCount"`
	Component   string            `json:"component"`
	Host        string            `json:"host"`
	Receiver    string            `json:"receiver"`
}

type exporterReceiver struct {
	Name    string `json:"name"`
	Webhook *struct {
		Endpoint string `json:"endpoint"`
		TLS      struct {
			InsecureSkipVerify bool   `json:"insecureSkipVerify"`
			ServerName         string `json:"serverName"`
			CaFile             string `json:"caFile"`
			KeyFile            string `json:"keyFile"`
			CertFile           string `json:"certFile"`
		} `json:"tls"`
		Layout  map[string]any    `json:"layout"`
		Headers map[string]string `json:"headers"`
	} `json:"webhook"`
}

// notificationEnv is what the exporter's environment holds (Secret llmbudget-notifications).
var notificationEnv = map[string]string{
	"PAGERDUTY_ROUTING_KEY": "R0UT1NGKEY",
	"SLACK_WEBHOOK_URL":     "https://hooks.slack.com/services/T000/B000/XXXX",
	"EVENTS_WEBHOOK_URL":    "https://events.example.com/llmbudget",
}

// loadExporterConfig reads config.yaml as the exporter does: os.ExpandEnv over the text,
// then a YAML decode (strict here).
func loadExporterConfig(t testing.TB) exporterConfig {
	t.Helper()
	raw, err := os.ReadFile(repoPath(t, "deploy/notifications/config.yaml"))
	require.NoError(t, err)
	var missing []string
	expanded := os.Expand(string(raw), func(name string) string {
		v, ok := notificationEnv[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	require.Empty(t, missing, "config.yaml reads variables the Secret does not provide")
	var cfg exporterConfig
	require.NoError(t, decodeStrict([]byte(expanded), &cfg))
	return cfg
}

// event is what the exporter routes and renders: its EnhancedEvent (pkg/kube/event.go).
type event struct {
	corev1.Event
	ClusterName    string
	InvolvedObject involvedObject
}

type involvedObject struct {
	corev1.ObjectReference
	Labels          map[string]string
	Annotations     map[string]string
	OwnerReferences []metav1.OwnerReference
	Deleted         bool
}

func (e *event) GetTimestampISO8601() string {
	ts := e.FirstTimestamp.Time
	if ts.IsZero() {
		ts = e.EventTime.Time
	}
	return ts.Format("2006-01-02T15:04:05.000Z")
}

func (e *event) GetTimestampMs() int64 {
	ts := e.FirstTimestamp.Time
	if ts.IsZero() {
		ts = e.EventTime.Time
	}
	return ts.UnixMilli()
}

// matches is the exporter's Rule.MatchesEvent: every non-empty field is an unanchored
// regular expression.
func (r exporterRule) matches(ev *event) bool {
	for _, f := range [][2]string{
		{r.Message, ev.Message}, {r.APIVersion, ev.InvolvedObject.APIVersion}, {r.Kind, ev.InvolvedObject.Kind},
		{r.Namespace, ev.Namespace}, {r.Reason, ev.Reason}, {r.Type, ev.Type},
		{r.Component, ev.Source.Component}, {r.Host, ev.Source.Host},
	} {
		if f[0] != "" && !regexp.MustCompile(f[0]).MatchString(f[1]) {
			return false
		}
	}
	for k, v := range r.Labels {
		if got, ok := ev.InvolvedObject.Labels[k]; !ok || !regexp.MustCompile(v).MatchString(got) {
			return false
		}
	}
	for k, v := range r.Annotations {
		if got, ok := ev.InvolvedObject.Annotations[k]; !ok || !regexp.MustCompile(v).MatchString(got) {
			return false
		}
	}
	return ev.Count >= r.MinCount
}

// route is the exporter's Route.ProcessEvent, collecting the receivers an event reaches.
func (r exporterRoute) route(ev *event, to map[string]int) {
	for _, d := range r.Drop {
		if d.matches(ev) {
			return
		}
	}
	all := true
	for _, m := range r.Match {
		if m.matches(ev) {
			if m.Receiver != "" {
				to[m.Receiver]++
			}
		} else {
			all = false
		}
	}
	if all {
		for _, sub := range r.Routes {
			sub.route(ev, to)
		}
	}
}

func sampleEvent(reason, eventType, component, kind, apiVersion string) *event {
	at := metav1.NewTime(time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC))
	ev := &event{Event: corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "chatbot.occurrence.1795937400", Namespace: "team-ml"},
		Reason:     reason, Type: eventType, Message: "usage reached 100% of the limit of 500.00 USD in the Monthly period",
		Source: corev1.EventSource{Component: component}, FirstTimestamp: at, LastTimestamp: at, Count: 1,
	}}
	ev.InvolvedObject.ObjectReference = corev1.ObjectReference{
		Kind: kind, APIVersion: apiVersion, Namespace: "team-ml", Name: "chatbot",
	}
	return ev
}

// budgetEvent is an Event that llmbudget writes about the LLMCostBudget team-ml/chatbot.
func budgetEvent(reason, eventType string) *event {
	return sampleEvent(reason, eventType, "llmbudget", "LLMCostBudget", "llmbudget.dev/v1alpha1")
}

func TestEventExporterConfigDecodesStrictlyAndItsRulesCompile(t *testing.T) {
	cfg := loadExporterConfig(t)
	assert.Positive(t, cfg.MaxEventAgeSeconds)
	assert.Regexp(t, `^[a-zA-Z][a-zA-Z0-9_:]*_$`, cfg.MetricsNamePrefix, "the exporter's own validation")
	assert.True(t, cfg.OmitLookup, "rbac.yaml grants no reads of involved objects")

	receivers := map[string]bool{}
	for _, r := range cfg.Receivers {
		require.NotNil(t, r.Webhook, "receiver %s", r.Name)
		assert.False(t, receivers[r.Name], "receiver %s twice", r.Name)
		receivers[r.Name] = true
		assert.Regexp(t, `^https://`, r.Webhook.Endpoint, "receiver %s", r.Name)
	}
	var walk func(exporterRoute)
	walk = func(r exporterRoute) {
		for _, rule := range slices.Concat(r.Drop, r.Match) {
			for _, re := range []string{
				rule.Message, rule.APIVersion, rule.Kind, rule.Namespace, rule.Reason, rule.Type, rule.Component, rule.Host,
			} {
				if re == "" {
					continue
				}
				_, err := regexp.Compile(re)
				assert.NoError(t, err)
				// The exporter does not anchor: "OverBudget" would match "ForecastOverBudget".
				assert.True(t, strings.HasPrefix(re, "^") && strings.HasSuffix(re, "$"), "%q is anchored", re)
			}
			if rule.Receiver != "" {
				assert.True(t, receivers[rule.Receiver], "rule sends to unknown receiver %q", rule.Receiver)
			}
		}
		for _, sub := range r.Routes {
			walk(sub)
		}
	}
	walk(cfg.Route)
}

func TestEventExporterRoutesEachEventToTheAgreedReceivers(t *testing.T) {
	cfg := loadExporterConfig(t)
	const budget, budgetAPI = "LLMCostBudget", "llmbudget.dev/v1alpha1"
	paged, resolved := []string{"pagerduty", "webhook"}, []string{"pagerduty-resolve", "slack", "webhook"}
	toSlack, webhookOnly := []string{"slack", "webhook"}, []string{"webhook"}
	cases := map[string]struct {
		ev   *event
		want []string
	}{
		"OverBudget pages":                            {budgetEvent("OverBudget", "Warning"), paged},
		"BlockingNewWorkloads pages":                  {budgetEvent("BlockingNewWorkloads", "Warning"), paged},
		"ForecastOverBudget pages":                    {budgetEvent("ForecastOverBudget", "Warning"), paged},
		"Unblocked resolves the page and tells Slack": {budgetEvent("Unblocked", "Normal"), resolved},
		"BudgetWarning goes to Slack":                 {budgetEvent("BudgetWarning", "Warning"), toSlack},
		"BudgetPeriodReset goes to Slack":             {budgetEvent("BudgetPeriodReset", "Normal"), toSlack},
		"BudgetExceeded on a workload goes to Slack": {
			sampleEvent("BudgetExceeded", "Warning", "llmbudget", "Deployment", "apps/v1"), toSlack,
		},
		"a cluster budget's OverBudget pages": {
			sampleEvent("OverBudget", "Warning", "llmbudget", "ClusterLLMCostBudget", budgetAPI), paged,
		},
		"the writer's SpendWriteFailed goes to Slack": {
			sampleEvent("SpendWriteFailed", "Warning", "llmbudget-spend", budget, budgetAPI), toSlack,
		},
		"CostKeyMissing only reaches the webhook": {budgetEvent("CostKeyMissing", "Warning"), webhookOnly},
		"InvalidSpec only reaches the webhook":    {budgetEvent("InvalidSpec", "Warning"), webhookOnly},
		"SyncError on a budget reaches the webhook": {
			sampleEvent("SyncError", "Warning", "metacontroller", budget, budgetAPI), webhookOnly,
		},
		"SyncError on a Deployment is not ours": {
			sampleEvent("SyncError", "Warning", "metacontroller", "Deployment", "apps/v1"), nil,
		},
		"another component's OverBudget is not ours": {
			sampleEvent("OverBudget", "Warning", "other-operator", budget, budgetAPI), nil,
		},
		"an Event about a Pod from the kubelet is ignored": {sampleEvent("BackOff", "Warning", "kubelet", "Pod", "v1"), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := map[string]int{}
			cfg.Route.route(tc.ev, got)
			for r, n := range got {
				assert.Equal(t, 1, n, "receiver %s gets the event %d times", r, n)
			}
			names := sortedKeys(got)
			sort.Strings(tc.want)
			if tc.want == nil {
				tc.want = []string{}
			}
			assert.Equal(t, tc.want, append([]string{}, names...))
		})
	}
}

// renderLayout is the exporter's convertLayoutTemplate: every string is a text/template
// with sprig's functions, executed on the event.
func renderLayout(t *testing.T, v any, ev *event) any {
	t.Helper()
	switch v := v.(type) {
	case string:
		tmpl, err := template.New("layout").Funcs(sprig.TxtFuncMap()).Parse(v)
		require.NoError(t, err, "%q", v)
		var b bytes.Buffer
		require.NoError(t, tmpl.Execute(&b, ev), "%q", v)
		return b.String()
	case map[string]any:
		out := map[string]any{}
		for k, el := range v {
			out[k] = renderLayout(t, el, ev)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, el := range v {
			out[i] = renderLayout(t, el, ev)
		}
		return out
	}
	return v
}

// pagerDutyEvent is a PagerDuty Events API v2 request.
type pagerDutyEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     *struct {
		Summary       string         `json:"summary"`
		Source        string         `json:"source"`
		Severity      string         `json:"severity"`
		Timestamp     string         `json:"timestamp"`
		Component     string         `json:"component"`
		Group         string         `json:"group"`
		Class         string         `json:"class"`
		CustomDetails map[string]any `json:"custom_details"`
	} `json:"payload"`
}

func TestEventExporterLayoutsRenderValidPayloads(t *testing.T) {
	cfg := loadExporterConfig(t)
	layouts := map[string]map[string]any{}
	for _, r := range cfg.Receivers {
		layouts[r.Name] = r.Webhook.Layout
	}
	pagerDuty := func(receiver string, ev *event) pagerDutyEvent {
		t.Helper()
		data, err := json.Marshal(renderLayout(t, layouts[receiver], ev))
		require.NoError(t, err)
		var pd pagerDutyEvent
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&pd), "%s", data)
		assert.Equal(t, notificationEnv["PAGERDUTY_ROUTING_KEY"], pd.RoutingKey)
		assert.NotEmpty(t, pd.DedupKey)
		assert.LessOrEqual(t, len(pd.DedupKey), 255)
		return pd
	}

	for _, tc := range []struct{ reason, severity string }{
		{"OverBudget", "critical"}, {"BlockingNewWorkloads", "critical"}, {"ForecastOverBudget", "warning"},
	} {
		t.Run(tc.reason+" triggers a "+tc.severity+" incident", func(t *testing.T) {
			pd := pagerDuty("pagerduty", budgetEvent(tc.reason, "Warning"))
			assert.Equal(t, "trigger", pd.EventAction)
			require.NotNil(t, pd.Payload)
			assert.Equal(t, tc.severity, pd.Payload.Severity)
			assert.NotEmpty(t, pd.Payload.Source)
			assert.Contains(t, pd.Payload.Summary, "team-ml/chatbot")
			assert.LessOrEqual(t, len(pd.Payload.Summary), 1024)
			_, err := time.Parse(time.RFC3339, pd.Payload.Timestamp)
			assert.NoError(t, err, "timestamp %q", pd.Payload.Timestamp)
		})
	}
	t.Run("Unblocked resolves the incident BlockingNewWorkloads opened", func(t *testing.T) {
		opened := pagerDuty("pagerduty", budgetEvent("BlockingNewWorkloads", "Warning"))
		resolved := pagerDuty("pagerduty-resolve", budgetEvent("Unblocked", "Normal"))
		assert.Equal(t, "resolve", resolved.EventAction)
		assert.Equal(t, opened.DedupKey, resolved.DedupKey)
	})
	t.Run("a cluster budget's incident names it without a namespace", func(t *testing.T) {
		ev := sampleEvent("OverBudget", "Warning", "llmbudget", "ClusterLLMCostBudget", "llmbudget.dev/v1alpha1")
		ev.InvolvedObject.Namespace = ""
		pd := pagerDuty("pagerduty", ev)
		require.NotNil(t, pd.Payload)
		assert.Contains(t, pd.Payload.Summary, "OverBudget: ClusterLLMCostBudget chatbot: ")
		assert.Equal(t, "chatbot", pd.Payload.Source)
		assert.Contains(t, pd.Payload.CustomDetails["how_to_lift"], "kubectl get cllmb chatbot")
	})
	t.Run("Slack gets one line of text", func(t *testing.T) {
		workloadEvent := sampleEvent("BudgetExceeded", "Warning", "llmbudget", "Deployment", "apps/v1")
		msg := renderLayout(t, layouts["slack"], workloadEvent)
		assert.Equal(t, []string{"text"}, sortedKeys(msg.(map[string]any)))
		text := msg.(map[string]any)["text"].(string)
		assert.Contains(t, text, "*BudgetExceeded* Deployment `team-ml/chatbot`")
		assert.NotContains(t, text, "\n")
	})
}

func TestEventExporterManifestsWireTheConfigAndSecret(t *testing.T) {
	objs := kustomize(t, "deploy/notifications")
	raw, err := os.ReadFile(repoPath(t, "deploy/notifications/config.yaml"))
	require.NoError(t, err)
	cms := ofKind(objs, "ConfigMap")
	require.Len(t, cms, 1)
	data, _ := dig(cms[0], "data", "config.yaml")
	assert.Equal(t, string(raw), data)
	cmName, _ := dig(cms[0], "metadata", "name")

	deps := ofKind(objs, "Deployment")
	require.Len(t, deps, 1)
	volume, _ := dig(deps[0], "spec", "template", "spec", "volumes", 0, "configMap", "name")
	assert.Equal(t, cmName, volume, "the Deployment mounts the generated ConfigMap")
	secret, _ := dig(deps[0], "spec", "template", "spec", "containers", 0, "envFrom", 0, "secretRef", "name")
	assert.Equal(t, "llmbudget-notifications", secret)
	replicas, _ := dig(deps[0], "spec", "replicas")
	assert.EqualValues(t, 1, replicas, "two exporters would send every Event twice")

	manifest, err := os.ReadFile(repoPath(t, "deploy/notifications/deployment.yaml"))
	require.NoError(t, err)
	for name := range notificationEnv {
		assert.Contains(t, string(manifest), "--from-literal="+name+"=", "deployment.yaml tells how to create %s", name)
	}
}

// eventSources are the packages of the llmbudget program whose code names the reasons of the Events it posts: the
// hook service's announcements (evaluate, api/v1alpha1), its workload Events (workload) and the spend writer's
// (spendwriter), each with the source.component its Events carry.
var eventSources = map[string]string{
	"internal/api/v1alpha1": "llmbudget",
	"internal/evaluate":     "llmbudget",
	"internal/controller":   "llmbudget",
	"internal/spendwriter":  "llmbudget-spend",
}

// productEventReasons reads, from the program's source, every reason its Event-posting packages name: each string
// constant called Reason..., and each string literal set as a Reason field. Condition reasons are among them: an
// Event route that takes every one takes every Event reason. It returns the component of each reason.
func productEventReasons(t *testing.T) map[string]string {
	t.Helper()
	reasons := map[string]string{}
	for dir, component := range eventSources {
		fset := token.NewFileSet()
		files, err := filepath.Glob(repoPath(t, dir, "*.go"))
		require.NoError(t, err)
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			require.NoError(t, err)
			add := func(e ast.Expr) {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					reasons[s] = component
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if strings.HasPrefix(name.Name, "Reason") && i < len(n.Values) {
							add(n.Values[i])
						}
					}
				case *ast.KeyValueExpr:
					if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Reason" {
						add(n.Value)
					}
				case *ast.AssignStmt:
					for i, lhs := range n.Lhs {
						if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Reason" && i < len(n.Rhs) {
							add(n.Rhs[i])
						}
					}
				}
				return true
			})
		}
	}
	require.Contains(t, reasons, "OverBudget", "the scan finds the announcements' literal reasons")
	require.Contains(t, reasons, "SpendWriteFailed")
	return reasons
}

// An Event no route takes is dropped without a trace: every reason the program names, on a budget of either kind,
// from the component that posts it, reaches a receiver, and a cluster budget's reaches the receivers a namespaced
// budget's does.
func TestEventExporterRoutesEveryReasonOfBothKindsAndTheWriter(t *testing.T) {
	cfg := loadExporterConfig(t)
	reasons := productEventReasons(t)
	for _, reason := range sortedKeys(reasons) {
		component := reasons[reason]
		t.Run(reason+" from "+component, func(t *testing.T) {
			var namespaced []string
			for _, kind := range []string{"LLMCostBudget", "ClusterLLMCostBudget"} {
				ev := sampleEvent(reason, "Warning", component, kind, "llmbudget.dev/v1alpha1")
				if kind == "ClusterLLMCostBudget" {
					ev.InvolvedObject.Namespace, ev.Namespace = "", "default"
				}
				got := map[string]int{}
				cfg.Route.route(ev, got)
				assert.NotEmpty(t, got, "%s on a %s reaches no receiver", reason, kind)
				if namespaced == nil {
					namespaced = sortedKeys(got)
					continue
				}
				assert.Equal(t, namespaced, sortedKeys(got), "%s on a %s", reason, kind)
			}
		})
	}
}
