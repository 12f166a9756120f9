package deploytest_test

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// helmStandardLabels are the labels the chart adds to every object's metadata.labels on
// top of those deploy/ sets: Helm's standard labels. They are removed before comparing.
// Selectors and Pod template labels are not touched: the chart must render them exactly.
var helmStandardLabels = []string{
	"helm.sh/chart",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
}

// renderChart renders the chart with values over values.yaml (deploytest.RenderChart).
func renderChart(t testing.TB, values map[string]any) []object {
	t.Helper()
	objs, err := deploytest.RenderChart(repoRoot(t), values)
	require.NoError(t, err)
	return objs
}

// withoutHelmLabels is o without Helm's standard labels in metadata.labels.
func withoutHelmLabels(t testing.TB, o object) object {
	t.Helper()
	data, err := yaml.Marshal(o)
	require.NoError(t, err)
	var c object
	require.NoError(t, yaml.Unmarshal(data, &c))
	if labels, ok := dig(c, "metadata", "labels"); ok {
		l := labels.(map[string]any)
		for _, k := range helmStandardLabels {
			delete(l, k)
		}
	}
	return c
}

// compareRenders requires that every object both sides produce is identical after
// stripping Helm's labels, and returns the keys only one side produces.
func compareRenders(t *testing.T, kustomized, charted []object) (onlyKustomize, onlyHelm []string) {
	t.Helper()
	k, h := byKey(t, kustomized), byKey(t, charted)
	for _, name := range sortedKeys(k) {
		ho, ok := h[name]
		if !ok {
			onlyKustomize = append(onlyKustomize, name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			want, got := withoutHelmLabels(t, k[name]), withoutHelmLabels(t, ho)
			if !reflect.DeepEqual(want, got) {
				wy, _ := yaml.Marshal(want)
				gy, _ := yaml.Marshal(got)
				assert.Equal(t, string(wy), string(gy), "kustomize (expected) vs Helm (actual)")
			}
		})
	}
	for _, name := range sortedKeys(h) {
		if _, ok := k[name]; !ok {
			onlyHelm = append(onlyHelm, name)
		}
	}
	return onlyKustomize, onlyHelm
}

func TestChartMetadata(t *testing.T) {
	ch, err := loader.Load(repoPath(t, deploytest.ChartDir))
	require.NoError(t, err)
	assert.Equal(t, "v2", ch.Metadata.APIVersion)
	assert.Equal(t, "llmbudget", ch.Metadata.Name)
	version, err := os.ReadFile(repoPath(t, "VERSION"))
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(version)), ch.Metadata.Version, "the chart is versioned as VERSION")
	assert.Equal(t, strings.TrimSpace(string(version)), ch.Metadata.AppVersion, "the chart installs the image of VERSION")
}

func TestChartDefaultsRenderWhatKustomizeRenders(t *testing.T) {
	onlyKustomize, onlyHelm := compareRenders(t, kustomize(t, "deploy"), renderChart(t, nil))
	// Helm installs into an existing namespace (helm install --create-namespace), so the
	// chart does not manage it; everything else must be in both.
	assert.Equal(t, []string{"Namespace llmbudget-system"}, onlyKustomize)
	assert.Empty(t, onlyHelm)
}

// secureValues turn on what deploy/components/secure turns on.
var secureValues = map[string]any{
	"tls":   map[string]any{"enabled": true},
	"token": map[string]any{"enabled": true},
}

func TestChartWithTLSAndTokenRendersWhatTheSecureOverlayRenders(t *testing.T) {
	onlyKustomize, onlyHelm := compareRenders(t, kustomize(t, "deploy/overlays/secure"), renderChart(t, secureValues))
	assert.Equal(t, []string{"Namespace llmbudget-system"}, onlyKustomize)
	assert.Empty(t, onlyHelm)
}

// workloadRules are the (group, resource, verbs) triples of every rule that Metacontroller's
// aggregated ClusterRole collects, for the resources that are decorated workloads.
func workloadRules(t *testing.T, objs []object, decorated map[string]bool) []string {
	t.Helper()
	var out []string
	for _, cr := range ofKind(objs, "ClusterRole") {
		if l, _ := dig(cr, "metadata", "labels", "llmbudget.dev/aggregate-to-metacontroller"); l != "true" {
			continue
		}
		rules, _ := cr["rules"].([]any)
		for _, r := range rules {
			groups, _ := dig(r, "apiGroups")
			resources, _ := dig(r, "resources")
			verbs, _ := dig(r, "verbs")
			for _, g := range groups.([]any) {
				for _, res := range resources.([]any) {
					if decorated[fmt.Sprint(g)+"/"+fmt.Sprint(res)] {
						out = append(out, fmt.Sprintf("%s/%s %v", g, res, verbs))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestChartOptionalKindsMatchTheAllKindsOverlay(t *testing.T) {
	all := kustomize(t, "deploy/overlays/all-kinds")
	dcs := byName(ofKind(all, "DecoratorController"))
	require.Len(t, dcs, 4, "the workload decorator, its unlabelled twin, the namespace and the gate decorators")
	dc := []object{dcs["llmbudget-workloads"]}
	resources, _ := dig(dc[0], "spec", "resources")
	var values []any
	decorated := map[string]bool{}
	for _, r := range resources.([]any) {
		apiVersion, _ := dig(r, "apiVersion")
		resource, _ := dig(r, "resource")
		values = append(values, map[string]any{"apiVersion": apiVersion, "resource": resource})
		group, _, found := strings.Cut(apiVersion.(string), "/")
		if !found {
			group = ""
		}
		decorated[group+"/"+resource.(string)] = true
	}
	require.Len(t, values, 7, "the four default kinds and the three optional ones")
	unlabelled, _ := dig(dcs["llmbudget-workloads-unlabelled"], "spec", "resources")
	require.Len(t, unlabelled, 7, "the unlabelled twin cleans the same kinds")

	vap := byName(ofKind(all, "ValidatingAdmissionPolicy"))
	require.Len(t, vap, 5, "the gates of LLMCostBudget and ClusterLLMCostBudget, their warn-mode policies, and the "+
		"one over spend sources")
	rules, _ := dig(vap["llmbudget-budgets"], "spec", "matchConstraints", "resourceRules")
	var ruleValues []any
	for _, r := range rules.([]any) {
		groups, _ := dig(r, "apiGroups")
		resources, _ := dig(r, "resources")
		ruleValues = append(ruleValues, map[string]any{"apiGroups": groups, "resources": resources})
	}
	require.Len(t, ruleValues, 6, "the three default rules and one per optional kind")

	charted := renderChart(t, map[string]any{
		"decorator":       map[string]any{"resources": values},
		"admissionPolicy": map[string]any{"resourceRules": ruleValues},
	})
	hdc := byName(ofKind(charted, "DecoratorController"))
	require.Len(t, hdc, 4)
	for name, d := range dcs {
		assert.Equal(t, withoutHelmLabels(t, d), withoutHelmLabels(t, hdc[name]), name)
	}
	hvap := byName(ofKind(charted, "ValidatingAdmissionPolicy"))
	require.Len(t, hvap, 5)
	for name, p := range vap {
		assert.Equal(t, withoutHelmLabels(t, p), withoutHelmLabels(t, hvap[name]), "%s sees the same kinds", name)
	}
	assert.Equal(t, workloadRules(t, all, decorated), workloadRules(t, charted, decorated),
		"Metacontroller may read and patch the same decorated kinds")
}

// byName keys objects by metadata.name.
func byName(objs []object) map[string]object {
	out := map[string]object{}
	for _, o := range objs {
		name, _ := dig(o, "metadata", "name")
		out[fmt.Sprint(name)] = o
	}
	return out
}

func TestChartWithoutThePolicyGateRendersNoAdmissionPolicy(t *testing.T) {
	objs := renderChart(t, map[string]any{
		"admissionPolicy": map[string]any{"enabled": false},
		"spendSources":    map[string]any{"enabled": false},
	})
	assert.Empty(t, ofKind(objs, "ValidatingAdmissionPolicy"))
	assert.Empty(t, ofKind(objs, "ValidatingAdmissionPolicyBinding"))
	assert.NotEmpty(t, ofKind(objs, "CompositeController"), "the rest is still rendered")
}

// The Policy gate and the protection of spend sources are separate controls: a cluster
// without the gate (every budget gate: Quota) still keeps spend to its writers.
func TestChartWithoutThePolicyGateStillProtectsSpendSources(t *testing.T) {
	objs := renderChart(t, map[string]any{"admissionPolicy": map[string]any{"enabled": false}})
	assert.ElementsMatch(t, []string{"llmbudget-spend-sources"},
		slices.Collect(maps.Keys(byName(ofKind(objs, "ValidatingAdmissionPolicy")))))
}

// spendWriterLists are the writer lists of a spend-source policy, as its CEL variables.
func spendWriterLists(t *testing.T, policy object) map[string]any {
	t.Helper()
	vars, _ := dig(policy, "spec", "variables")
	out := map[string]any{}
	for _, v := range vars.([]any) {
		name, _ := dig(v, "name")
		expr, _ := dig(v, "expression")
		switch name {
		case "writerUsers", "writerGroups", "writerServiceAccountNamespaces":
			out[name.(string)] = expr
		}
	}
	require.Len(t, out, 3)
	return out
}

func TestChartSpendWritersAreTheListsTheSpendSourcePolicyNames(t *testing.T) {
	objs := byName(ofKind(renderChart(t, map[string]any{"spendSources": map[string]any{"writers": map[string]any{
		"users":                    []any{"finops-bot@example.com"},
		"groups":                   []any{"system:masters", "finops"},
		"serviceAccountNamespaces": []any{"spend-collectors", "llmbudget-system"},
	}}}), "ValidatingAdmissionPolicy"))
	want := map[string]any{
		"writerUsers":                    `["finops-bot@example.com"]`,
		"writerGroups":                   `["system:masters","finops"]`,
		"writerServiceAccountNamespaces": `["llmbudget-system","spend-collectors"]`,
	}
	require.Len(t, objs, 5, "the four gate policies and the one over spend sources")
	require.Contains(t, objs, "llmbudget-spend-sources")
	assert.Equal(t, want, spendWriterLists(t, objs["llmbudget-spend-sources"]))
}

// The chart's spend writers run in the release namespace, which is therefore always a writer, and where its
// ServiceAccounts write only the spend writer's checkpoints.
func TestChartSpendWritersInAnotherReleaseNamespaceStillWriteSpend(t *testing.T) {
	ch, err := loader.Load(repoPath(t, deploytest.ChartDir))
	require.NoError(t, err)
	opts := chartutil.ReleaseOptions{Name: "llmbudget", Namespace: "platform", IsInstall: true, Revision: 1}
	rv, err := chartutil.ToRenderValues(ch, nil, opts, chartutil.DefaultCapabilities)
	require.NoError(t, err)
	rendered, err := engine.Engine{Strict: true}.Render(ch, rv)
	require.NoError(t, err)
	objs, err := deploytest.DecodeObjects(rendered["llmbudget/templates/spend-sources.yaml"])
	require.NoError(t, err)
	policies := ofKind(objs, "ValidatingAdmissionPolicy")
	require.Len(t, policies, 1)
	for _, p := range policies {
		assert.Equal(t, `["platform"]`, spendWriterLists(t, p)["writerServiceAccountNamespaces"])
		vars, _ := dig(p, "spec", "variables")
		var home any
		for _, v := range vars.([]any) {
			if name, _ := dig(v, "name"); name == "writerNamespace" {
				home, _ = dig(v, "expression")
			}
		}
		assert.Equal(t, `'platform'`, home, "the writer's own namespace, where it writes only its checkpoints")
	}
}

// aggregateToDefaultRoles.edit opts back into the RBAC of commits before 0.1.0 exactly as the kustomize
// component budget-writers-in-edit does; by default neither edit nor admin writes budgets.
func TestChartBudgetWritersInEditIsTheKustomizeComponent(t *testing.T) {
	byDefault := byKey(t, renderChart(t, nil))
	assert.NotContains(t, byDefault, "ClusterRole llmbudget-edit")
	assert.Contains(t, byDefault, "ClusterRole llmbudget-budget-admin")
	labels, _ := dig(byDefault["ClusterRole llmbudget-budget-admin"], "metadata", "labels")
	for k := range labels.(map[string]any) {
		assert.False(t, strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-"),
			"llmbudget-budget-admin is aggregated into nothing: %s", k)
	}

	var component object
	readYAML(t, "deploy/components/budget-writers-in-edit/llmbudget-edit.yaml", &component)
	charted := byKey(t, renderChart(t, map[string]any{"aggregateToDefaultRoles": map[string]any{"edit": true}}))
	require.Contains(t, charted, "ClusterRole llmbudget-edit")
	assert.Equal(t, withoutHelmLabels(t, component), withoutHelmLabels(t, charted["ClusterRole llmbudget-edit"]))
}

func TestChartServiceMonitorMatchesDeployMonitoring(t *testing.T) {
	values := map[string]any{"monitoring": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}
	objs := byKey(t, renderChart(t, values))
	var want object
	readYAML(t, "deploy/monitoring/servicemonitor.yaml", &want)
	got, ok := objs["ServiceMonitor llmbudget-system/llmbudget"]
	require.True(t, ok)
	assert.Equal(t, withoutHelmLabels(t, want), withoutHelmLabels(t, got))
}

func TestChartAuthzServiceMonitorMatchesDeployMonitoring(t *testing.T) {
	values := map[string]any{
		"monitoring": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
		"authz":      map[string]any{"enabled": true},
	}
	objs := byKey(t, renderChart(t, values))
	var want object
	readYAML(t, "deploy/monitoring/servicemonitor-authz.yaml", &want)
	got, ok := objs["ServiceMonitor llmbudget-system/llmbudget-authz"]
	require.True(t, ok)
	assert.Equal(t, withoutHelmLabels(t, want), withoutHelmLabels(t, got))
}

func TestChartServiceMonitorScrapesHTTPSWithTheServingCA(t *testing.T) {
	values := map[string]any{
		"tls": map[string]any{"enabled": true},
		"monitoring": map[string]any{"serviceMonitor": map[string]any{
			"enabled": true, "labels": map[string]any{"release": "kube-prometheus-stack"},
		}},
	}
	objs := byKey(t, renderChart(t, values))
	raw, err := yaml.Marshal(objs["ServiceMonitor llmbudget-system/llmbudget"])
	require.NoError(t, err)
	var sm monitoringv1.ServiceMonitor
	require.NoError(t, decodeStrict(raw, &sm))
	assert.Equal(t, "kube-prometheus-stack", sm.Labels["release"])
	require.Len(t, sm.Spec.Endpoints, 1)
	ep := sm.Spec.Endpoints[0]
	assert.Equal(t, "metrics", ep.Port)
	require.NotNil(t, ep.Scheme)
	assert.Equal(t, "https", strings.ToLower(string(*ep.Scheme)))
	require.NotNil(t, ep.TLSConfig)
	require.NotNil(t, ep.TLSConfig.CA.Secret)
	assert.Equal(t, "llmbudget-tls", ep.TLSConfig.CA.Secret.Name)
	assert.Equal(t, "ca.crt", ep.TLSConfig.CA.Secret.Key)

	cert := objs["Certificate llmbudget-system/llmbudget-serving"]
	require.NotNil(t, cert)
	dnsNames, _ := dig(cert, "spec", "dnsNames")
	require.NotNil(t, ep.TLSConfig.ServerName)
	assert.Contains(t, dnsNames, *ep.TLSConfig.ServerName)
	secretName, _ := dig(cert, "spec", "secretName")
	assert.Equal(t, "llmbudget-tls", secretName)
}

// webhooks lists every hook webhook of the rendered controllers, keyed by controller and hook.
func webhooks(t *testing.T, objs []object) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	// No DecoratorController has a finalize hook: no finalizer of ours on the workloads or Namespaces. The one that
	// cleans unlabelled workloads reads no budget, so it has no customize hook either.
	hooks := map[string][]string{
		"CompositeController": {"customize", "sync", "finalize"},
		"DecoratorController": {"customize", "sync"},
	}
	for kind, names := range hooks {
		for _, c := range ofKind(objs, kind) {
			name, _ := dig(c, "metadata", "name")
			for _, hook := range names {
				wh, ok := dig(c, "spec", "hooks", hook, "webhook")
				if hook == "customize" && name == "llmbudget-workloads-unlabelled" {
					require.False(t, ok, "%s has no customize hook", name)
					continue
				}
				require.True(t, ok, "%s %s hook", name, hook)
				out[fmt.Sprint(name)+" "+hook] = wh.(map[string]any)
			}
			if kind == "DecoratorController" {
				_, ok := dig(c, "spec", "hooks", "finalize")
				assert.False(t, ok, "%s has no finalize hook", name)
			}
		}
	}
	require.Len(t, out, 13, "two CompositeControllers of three hooks, three decorators of two and one of one")
	return out
}

func TestChartWebhooksFollowTheTLSAndTokenValues(t *testing.T) {
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	cases := map[string]struct {
		values        map[string]any
		scheme        string
		caBundle      map[string]any
		authorization bool
		readsSecrets  bool
	}{
		"plain HTTP by default": {
			values: nil, scheme: "http://llmbudget.llmbudget-system/",
		},
		"TLS alone trusts ca.crt of the serving Secret": {
			values: map[string]any{"tls": map[string]any{"enabled": true}}, scheme: "https://llmbudget.llmbudget-system.svc/",
			caBundle: map[string]any{"secretRef": map[string]any{
				"name": "llmbudget-tls", "namespace": "llmbudget-system", "key": "ca.crt",
			}},
			readsSecrets: true,
		},
		"an inline CA bundle needs no Secret read": {
			values: map[string]any{"tls": map[string]any{
				"enabled": true, "caBundle": pem, "certManager": map[string]any{"create": false},
			}},
			scheme: "https://llmbudget.llmbudget-system.svc/", caBundle: map[string]any{"inline": pem},
		},
		"a token alone keeps HTTP and sends the bearer token": {
			values: map[string]any{"token": map[string]any{"enabled": true}}, scheme: "http://llmbudget.llmbudget-system/",
			authorization: true, readsSecrets: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderChart(t, tc.values)
			for hook, wh := range webhooks(t, objs) {
				assert.True(t, strings.HasPrefix(wh["url"].(string), tc.scheme), "%s: %s", hook, wh["url"])
				if tc.caBundle == nil {
					assert.NotContains(t, wh, "caBundle", hook)
				} else {
					assert.Equal(t, tc.caBundle, wh["caBundle"], hook)
				}
				if tc.authorization {
					assert.Equal(t, map[string]any{"type": "Bearer", "secretRef": map[string]any{
						"name": "llmbudget-hook-token", "namespace": "llmbudget-system", "key": "token"}}, wh["authorization"], hook)
				} else {
					assert.NotContains(t, wh, "authorization", hook)
				}
			}
			_, reads := byKey(t, objs)["ClusterRole llmbudget-metacontroller-secrets"]
			assert.Equal(t, tc.readsSecrets, reads, "Metacontroller gets Secret access exactly when it reads a Secret")
			_, certs := byKey(t, objs)["Certificate llmbudget-system/llmbudget-serving"]
			assert.Equal(t, tc.caBundle != nil && tc.caBundle["inline"] == nil, certs,
				"cert-manager objects only when the chart creates the PKI")
		})
	}
}

func TestChartCRDIsTheCRDOfDeploy(t *testing.T) {
	var charted, deployed object
	for _, crd := range []string{"llmcostbudgets.llmbudget.dev.yaml", "clusterllmcostbudgets.llmbudget.dev.yaml"} {
		readYAML(t, "deploy/helm/llmbudget/crds/"+crd, &charted)
		readYAML(t, "deploy/crd/"+crd, &deployed)
		if !reflect.DeepEqual(deployed, charted) {
			want, _ := yaml.Marshal(deployed)
			got, _ := yaml.Marshal(charted)
			assert.Equal(t, string(want), string(got), "deploy/helm/llmbudget/crds/ is a copy of deploy/crd/: copy it again")
		}
	}
}

func TestChartPassesValuesThrough(t *testing.T) {
	objs := byKey(t, renderChart(t, map[string]any{
		"image":             map[string]any{"tag": "0.2.0"},
		"replicas":          3,
		"logLevel":          "debug",
		"maxBodyBytes":      16777216,
		"maxInFlightBytes":  33554432,
		"maxListBodyBytes":  50331648,
		"pprof":             true,
		"priorityClassName": "llm-critical",
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"metacontroller":    map[string]any{"namespace": "platform", "serviceAccount": "mc"},
		"monitoring":        map[string]any{"namespace": "observability"},
	}))
	dep := objs["Deployment llmbudget-system/llmbudget"]
	require.NotNil(t, dep)
	container, _ := dig(dep, "spec", "template", "spec", "containers", 0)
	assert.Equal(t, "ghcr.io/llmbudget/llmbudget:0.2.0", container.(map[string]any)["image"])
	assert.Equal(t, []any{
		"serve", "--addr=:8080", "--metrics-addr=:9090", "--log-level=debug", "--authz-namespace=llmbudget-system",
		"--max-body-bytes=16777216", "--max-in-flight-bytes=33554432", "--max-list-body-bytes=50331648", "--pprof",
	}, container.(map[string]any)["args"])

	unwatched := byKey(t, renderChart(t, map[string]any{"authz": map[string]any{"leasesInStatus": false}}))
	container, _ = dig(unwatched["Deployment llmbudget-system/llmbudget"], "spec", "template", "spec", "containers", 0)
	assert.Contains(t, container.(map[string]any)["args"], "--authz-namespace=",
		"authz.leasesInStatus false: serve relates no Lease")
	replicas, _ := dig(dep, "spec", "replicas")
	assert.EqualValues(t, 3, replicas)
	priority, _ := dig(dep, "spec", "template", "spec", "priorityClassName")
	assert.Equal(t, "llm-critical", priority)
	nodeOS, _ := dig(dep, "spec", "template", "spec", "nodeSelector", "kubernetes.io/os")
	assert.Equal(t, "linux", nodeOS)

	subject, _ := dig(objs["ClusterRoleBinding llmbudget-metacontroller"], "roleRef", "name")
	assert.Equal(t, "llmbudget-metacontroller", subject)
	sa, _ := dig(objs["ClusterRoleBinding llmbudget-metacontroller"], "subjects", 0)
	assert.Equal(t, map[string]any{"kind": "ServiceAccount", "name": "mc", "namespace": "platform"}, sa)
	np := objs["NetworkPolicy llmbudget-system/llmbudget"]
	mcNS, _ := dig(np, "spec", "ingress", 0, "from", 0,
		"namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
	assert.Equal(t, "platform", mcNS)
	promNS, _ := dig(np, "spec", "ingress", 1, "from", 0,
		"namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
	assert.Equal(t, "observability", promNS)
}

// recordRules is every rule of a ClusterRole aggregated into Metacontroller's that names taskrecords.kelos.dev.
func recordRules(objs []object) []any {
	var out []any
	for _, cr := range ofKind(objs, "ClusterRole") {
		if l, _ := dig(cr, "metadata", "labels", "llmbudget.dev/aggregate-to-metacontroller"); l != "true" {
			continue
		}
		rules, _ := cr["rules"].([]any)
		for _, r := range rules {
			if res, _ := dig(r, "resources"); fmt.Sprint(res) == "[taskrecords]" {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestMetacontrollerMayWatchTaskRecordsWithTheKelosComponentOrValue(t *testing.T) {
	want := []any{map[string]any{
		"apiGroups": []any{"kelos.dev"}, "resources": []any{"taskrecords"}, "verbs": []any{"get", "list", "watch"},
	}}
	assert.Equal(t, want, recordRules(kustomize(t, "deploy/overlays/all-kinds")), "the kelos-task component")
	assert.Equal(t, want, recordRules(renderChart(t, map[string]any{"kelos": map[string]any{"taskRecords": true}})))
	assert.Empty(t, recordRules(kustomize(t, "deploy")), "only with the component")
	assert.Empty(t, recordRules(renderChart(t, nil)), "only with the value")
}
