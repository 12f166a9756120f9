//go:build integration

package integration_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

func TestBudgetCRDInstallsAndExplainsItsFields(t *testing.T) {
	installBudgetCRD(t)

	// The OpenAPI document that kubectl explain reads is published shortly after the CRD
	// is Established.
	var explained string
	cluster.WaitFor(t, time.Minute, "kubectl explain llmcostbudget.spec", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "explain", "llmcostbudget.spec")
		explained = out
		return err == nil && strings.Contains(out, "limitUSD"), out
	})
	for _, want := range []string{
		"GROUP:      llmbudget.dev",
		"KIND:       LLMCostBudget",
		"VERSION:    v1alpha1",
		"What the budget allows and where its spend is read from",
		"Spending limit per period, in US dollars",
		"costSource\t<Object> -required-",
		"What happens in the namespace while the budget is exhausted",
	} {
		assert.Contains(t, explained, want)
	}

	recursive := kube.Kubectl(t, "explain", "llmcostbudget.spec", "--recursive")
	for _, field := range []string{"limitUSD", "period", "timeZone", "startDay", "warnThresholdPercent", "thresholds",
		"basis", "tokenLimits", "costSource", "configMapName", "keyPrefix", "enforcement", "failurePolicy", "suspend"} {
		assert.Contains(t, recursive, field)
	}

	// Every field, however deep, teaches the API: explain prints <empty> for a field
	// without a description.
	for _, path := range explainPaths(t, "llmcostbudget", recursive) {
		out := kube.Kubectl(t, "explain", path)
		assert.NotContains(t, out, "<empty>", "kubectl explain %s", path)
	}

	startDay := kube.Kubectl(t, "explain", "llmcostbudget.spec.period.startDay")
	assert.Contains(t, startDay, "1 = Monday")
	status := kube.Kubectl(t, "explain", "llmcostbudget.status.percentUsed")
	assert.Contains(t, status, "rounded down")
}

// explainPaths turns `kubectl explain X --recursive` output (fields indented by two
// spaces per level) into the dotted paths of every field under X.
func explainPaths(t *testing.T, resource, recursive string) []string {
	t.Helper()
	_, fieldsPart, ok := strings.Cut(recursive, "FIELDS:\n")
	require.True(t, ok, "explain output has a FIELDS section:\n%s", recursive)
	var stack, paths []string
	for _, line := range strings.Split(fieldsPart, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		name, _, isField := strings.Cut(trimmed, "\t<") // other lines list enum values
		depth := (len(line) - len(trimmed)) / 2         // top-level fields are indented by 2
		if !isField || depth < 1 {
			continue
		}
		stack = append(stack[:depth-1], name)
		paths = append(paths, resource+".spec."+strings.Join(stack, "."))
	}
	require.NotEmpty(t, paths)
	return paths
}

func TestBudgetCRDResolvesItsShortNamesAndCategory(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "names")
	kube.ApplyYAML(t, ns, budgetYAML(t, "names", nil))

	for _, resource := range []string{"llmcostbudgets", "llmcostbudget", "llmb", "llmbudget", "llmcostbudgets.llmbudget.dev"} {
		out := kube.Kubectl(t, "get", resource, "-n", ns, "-o", "name")
		assert.Equal(t, "llmcostbudget.llmbudget.dev/names\n", out, "kubectl get %s", resource)
	}
	categories := kube.Kubectl(t, "get", "crd", "llmcostbudgets.llmbudget.dev", "-o", "jsonpath={.spec.names.categories}")
	assert.JSONEq(t, `["llmbudget"]`, categories)
}

func TestBudgetCRDKustomizationListsTheCRD(t *testing.T) {
	out := kube.Kubectl(t, "apply", "-k", filepath.Join(repoRoot, "deploy", "crd"), "--server-side", "--dry-run=server")
	assert.Contains(t, out, "customresourcedefinition.apiextensions.k8s.io/llmcostbudgets.llmbudget.dev serverside-applied")
}

func TestBudgetCRDFillsInDefaults(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "defaults")
	kube.ApplyYAML(t, ns, budgetYAML(t, "minimal", nil))
	kube.ApplyYAML(t, ns, budgetYAML(t, "with-thresholds", func(spec map[string]any) {
		spec["thresholds"] = []any{map[string]any{"percent": 50}}
	}))

	var minimal map[string]any
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "llmb", "minimal", "-n", ns, "-o", "jsonpath={.spec}")), &minimal))
	assert.Equal(t, map[string]any{
		"limitUSD":             "500",
		"period":               map[string]any{"type": "Monthly", "timeZone": "UTC", "startDay": float64(1)},
		"warnThresholdPercent": float64(80),
		"costSource":           map[string]any{"configMapName": "llm-spend", "key": "spend-usd", "format": "Total"},
		"enforcement":          map[string]any{"action": "None", "failurePolicy": "Open", "gate": "Policy", "scope": "Namespace"},
		"suspend":              false,
	}, minimal, "no thresholds default in the CRD: the hook derives them from warnThresholdPercent")

	basis := kube.Kubectl(t, "get", "llmb", "with-thresholds", "-n", ns, "-o", "jsonpath={.spec.thresholds[0].basis}")
	assert.Equal(t, "Actual", basis)
}

func TestBudgetPrinterColumnsShowStatus(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "columns")
	kube.ApplyYAML(t, ns, budgetYAML(t, "team-a", nil))
	end := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Second).Format(time.RFC3339)
	status := fmt.Sprintf(`{"status":{"state":"Warning","limitUSD":"500.00","observedSpendUSD":"412.50","percentUsed":82,`+
		`"period":{"start":"2026-01-01T00:00:00Z","end":%q}}}`, end)
	kube.Kubectl(t, "patch", "llmb", "team-a", "-n", ns, "--subresource=status", "--type=merge", "-p", status)

	out := kube.Kubectl(t, "get", "llmb", "team-a", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"NAME", "LIMIT", "SPENT", "USED", "STATE", "RESETS", "AGE"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.Len(t, row, 7, out)
	assert.Equal(t, []string{"team-a", "500", "412.50", "82", "Warning", end}, row[:6],
		"the period end is in the future, so it must print as a timestamp, not as an age")

	wide := kube.Kubectl(t, "get", "crd", "llmcostbudgets.llmbudget.dev", "-o",
		`jsonpath={.spec.versions[0].additionalPrinterColumns[?(@.name=="Used")].description}`)
	assert.Contains(t, wide, "%")
}

// budgetYAML is a valid budget named name, changed by edit (when not nil), as JSON
// (which is YAML) ready for kubectl.
func budgetYAML(t *testing.T, name string, edit func(spec map[string]any)) string {
	t.Helper()
	spec := map[string]any{
		"limitUSD":   "500",
		"costSource": map[string]any{"configMapName": "llm-spend", "key": "spend-usd"},
	}
	if edit != nil {
		edit(spec)
	}
	obj := map[string]any{
		"apiVersion": "llmbudget.dev/v1alpha1",
		"kind":       "LLMCostBudget",
		"metadata":   map[string]any{"name": name},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(data)
}

// sub returns the object at key in m, creating it when absent.
func sub(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

func TestBudgetCRDRefusesInvalidBudgets(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "invalid")

	cases := []struct {
		name      string
		edit      func(spec map[string]any)
		budget    string // metadata.name when not the default
		wantField string // the field the message must name
		wantText  string // and what it must say about it
	}{
		{"a zero limit is refused", func(s map[string]any) { s["limitUSD"] = "0" },
			"", "spec.limitUSD", "limitUSD must be greater than 0"},
		{"a zero limit written with decimals is refused", func(s map[string]any) { s["limitUSD"] = "0.000000" },
			"", "spec.limitUSD", "limitUSD must be greater than 0"},
		{"a negative limit is refused", func(s map[string]any) { s["limitUSD"] = "-5" },
			"", "spec.limitUSD", "should match"},
		{"a limit with seven decimals is refused", func(s map[string]any) { s["limitUSD"] = "1.0000001" },
			"", "spec.limitUSD", "should match"},
		{"a limit in words is refused", func(s map[string]any) { s["limitUSD"] = "ten dollars" },
			"", "spec.limitUSD", "should match"},
		{"a limit in exponent notation is refused", func(s map[string]any) { s["limitUSD"] = "5e2" },
			"", "spec.limitUSD", "should match"},
		{"a limit given as a number is refused", func(s map[string]any) { s["limitUSD"] = 500 },
			"", "spec.limitUSD", "must be of type string"},
		{"an unknown period type is refused", func(s map[string]any) { sub(s, "period")["type"] = "Yearly" },
			"", "spec.period.type", `Unsupported value: "Yearly"`},
		{"a monthly start day of 0 is refused", func(s map[string]any) { sub(s, "period")["startDay"] = 0 },
			"", "spec.period.startDay", "greater than or equal to 1"},
		{"a monthly start day of 29 is refused", func(s map[string]any) { sub(s, "period")["startDay"] = 29 },
			"", "spec.period.startDay", "less than or equal to 28"},
		{"a weekly start day of 8 is refused", func(s map[string]any) {
			p := sub(s, "period")
			p["type"], p["startDay"] = "Weekly", 8
		}, "", "spec.period.startDay", "between 1 (Monday) and 7 (Sunday) when period.type is Weekly"},
		{"a time zone that cannot be a zone name is refused", func(s map[string]any) { sub(s, "period")["timeZone"] = "UTC+2 (Berlin)" },
			"", "spec.period.timeZone", "should match"},
		{"a warning threshold of 0 is refused", func(s map[string]any) { s["warnThresholdPercent"] = 0 },
			"", "spec.warnThresholdPercent", "greater than or equal to 1"},
		{"a warning threshold of 101 is refused", func(s map[string]any) { s["warnThresholdPercent"] = 101 },
			"", "spec.warnThresholdPercent", "less than or equal to 100"},
		{"eleven thresholds are refused", func(s map[string]any) { s["thresholds"] = thresholds(11) },
			"", "spec.thresholds", "must have at most 10 items"},
		{"a repeated threshold is refused", func(s map[string]any) {
			s["thresholds"] = []any{map[string]any{"percent": 80}, map[string]any{"percent": 80, "basis": "Actual"}}
		}, "", "spec.thresholds", "must not repeat a (percent, basis) pair"},
		{"a threshold above 1000 percent is refused", func(s map[string]any) { s["thresholds"] = []any{map[string]any{"percent": 1001}} },
			"", "spec.thresholds[0].percent", "less than or equal to 1000"},
		{"a threshold without percent is refused", func(s map[string]any) { s["thresholds"] = []any{map[string]any{"basis": "Forecasted"}} },
			"", "spec.thresholds[0].percent", "Required value"},
		{"an unknown threshold basis is refused", func(s map[string]any) {
			s["thresholds"] = []any{map[string]any{"percent": 90, "basis": "Projected"}}
		}, "", "spec.thresholds[0].basis", `Unsupported value: "Projected"`},
		{"a budget without limitUSD or tokenLimits is refused", func(s map[string]any) { delete(s, "limitUSD") },
			"", "spec.limitUSD", "spec.limitUSD is required unless spec.tokenLimits sets input, output or total"},
		{"empty tokenLimits do not replace limitUSD", func(s map[string]any) {
			delete(s, "limitUSD")
			s["tokenLimits"] = map[string]any{}
		}, "", "spec.limitUSD", "spec.limitUSD is required unless spec.tokenLimits sets input, output or total"},
		{"a negative token limit is refused", func(s map[string]any) { s["tokenLimits"] = map[string]any{"input": -1} },
			"", "spec.tokenLimits.input", "greater than or equal to 0"},
		{"a budget without costSource is refused", func(s map[string]any) { delete(s, "costSource") },
			"", "spec.costSource", "Required value"},
		{"a cost source without configMapName is refused", func(s map[string]any) { delete(sub(s, "costSource"), "configMapName") },
			"", "spec.costSource.configMapName", "Required value"},
		{"a configMapName that is not a DNS name is refused", func(s map[string]any) { sub(s, "costSource")["configMapName"] = "LLM_Spend" },
			"", "spec.costSource.configMapName", "should match"},
		{"an unknown cost format is refused", func(s map[string]any) { sub(s, "costSource")["format"] = "Csv" },
			"", "spec.costSource.format", `Unsupported value: "Csv"`},
		{"a Total cost source without key is refused", func(s map[string]any) { delete(sub(s, "costSource"), "key") },
			"", "spec.costSource.key", "costSource.key is required when costSource.format is Total"},
		{"a key that a ConfigMap cannot hold is refused", func(s map[string]any) { sub(s, "costSource")["key"] = "spend/usd" },
			"", "spec.costSource.key", "should match"},
		{"keyPrefix with format Total is refused", func(s map[string]any) { sub(s, "costSource")["keyPrefix"] = "team-a." },
			"", "spec.costSource.keyPrefix", "costSource.keyPrefix is only allowed when costSource.format is DailyLedger"},
		{"BlockNewWorkloads without resources is refused", func(s map[string]any) { sub(s, "enforcement")["action"] = "BlockNewWorkloads" },
			"", "spec.enforcement.resources", "enforcement.resources must list at least one resource when enforcement.action is BlockNewWorkloads"},
		{"BlockNewWorkloads with an empty resource list is refused", func(s map[string]any) {
			e := sub(s, "enforcement")
			e["action"], e["resources"] = "BlockNewWorkloads", []any{}
		}, "", "spec.enforcement.resources", "enforcement.resources must list at least one resource"},
		{"a resource written as Kind/group is refused", func(s map[string]any) {
			e := sub(s, "enforcement")
			e["action"], e["resources"] = "BlockNewWorkloads", []any{"Jobs/batch"}
		}, "", "spec.enforcement.resources[0]", "should match"},
		{"a resource name too long for a quota's count/ key is refused", func(s map[string]any) {
			e := sub(s, "enforcement")
			e["action"], e["resources"] = "BlockNewWorkloads", []any{strings.Repeat("a", 59) + ".abcd"}
		}, "", "spec.enforcement.resources[0]", "Too long: may not be more than 63"},
		{"a resource listed twice is refused", func(s map[string]any) {
			e := sub(s, "enforcement")
			e["action"], e["resources"] = "BlockNewWorkloads", []any{"jobs.batch", "jobs.batch"}
		}, "", "spec.enforcement.resources[1]", "Duplicate value"},
		{"an unknown enforcement action is refused", func(s map[string]any) { sub(s, "enforcement")["action"] = "Delete" },
			"", "spec.enforcement.action", `Unsupported value: "Delete"`},
		{"an unknown failure policy is refused", func(s map[string]any) { sub(s, "enforcement")["failurePolicy"] = "Ignore" },
			"", "spec.enforcement.failurePolicy", `Unsupported value: "Ignore"`},
		{"an unknown gate is refused", func(s map[string]any) { sub(s, "enforcement")["gate"] = "Webhook" },
			"", "spec.enforcement.gate", `Unsupported value: "Webhook"`},
		{"the labelled scope through a quota is refused", func(s map[string]any) {
			e := sub(s, "enforcement")
			e["action"], e["resources"], e["gate"], e["scope"] = "BlockNewWorkloads", []any{"jobs.batch"}, "Both", "Labelled"
		}, "", "spec.enforcement.scope", "enforcement.scope Labelled needs enforcement.gate Policy"},
		{"suspend as a string is refused", func(s map[string]any) { s["suspend"] = "yes" },
			"", "spec.suspend", "must be of type boolean"},
		{"a misspelt field is refused", func(s map[string]any) { s["limitUsd"] = "10" },
			"", `unknown field "spec.limitUsd"`, "strict decoding error"},
		{"a budget name longer than a label value is refused", nil,
			strings.Repeat("b", 64), "metadata.name", "metadata.name must be at most 63 characters"},
	}
	require.GreaterOrEqual(t, len(cases), 15)

	// The base budget must pass, or every case below would pass for the wrong reason.
	kube.ApplyYAML(t, ns, budgetYAML(t, "base", nil), "--dry-run=server")

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.budget
			if name == "" {
				name = "invalid"
			}
			out, err := kube.KubectlErr(t, budgetYAML(t, name, tc.edit), "apply", "-n", ns, "--dry-run=server", "-f", "-")
			require.Error(t, err, "the API server accepted it:\n%s", out)
			assert.Contains(t, out, tc.wantField)
			assert.Contains(t, out, tc.wantText)
		})
	}
}

func TestBudgetCRDAcceptsEveryValidShape(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "valid")

	cases := []struct {
		name   string
		edit   func(spec map[string]any)
		budget string
	}{
		{"the smallest limit, one millionth of a dollar", func(s map[string]any) { s["limitUSD"] = "0.000001" }, ""},
		{"a limit with six decimals", func(s map[string]any) { s["limitUSD"] = "1250.123456" }, ""},
		{"token limits alone, without limitUSD", func(s map[string]any) {
			delete(s, "limitUSD")
			s["tokenLimits"] = map[string]any{"total": 50000000}
		}, ""},
		{"a zero token limit without limitUSD", func(s map[string]any) {
			delete(s, "limitUSD")
			s["tokenLimits"] = map[string]any{"output": 0}
		}, ""},
		{"every token limit at the int64 maximum", func(s map[string]any) {
			s["tokenLimits"] = map[string]any{"input": int64(9223372036854775807), "output": 1, "total": 2}
		}, ""},
		{"weekly periods starting on Sunday", func(s map[string]any) {
			s["period"] = map[string]any{"type": "Weekly", "startDay": 7, "timeZone": "Europe/Berlin"}
		}, ""},
		{"monthly periods starting on the 28th", func(s map[string]any) { s["period"] = map[string]any{"startDay": 28} }, ""},
		{"daily periods in a three-part zone name", func(s map[string]any) {
			s["period"] = map[string]any{"type": "Daily", "timeZone": "America/Argentina/Buenos_Aires"}
		}, ""},
		{"a zone with a sign in its name", func(s map[string]any) { s["period"] = map[string]any{"timeZone": "Etc/GMT+5"} }, ""},
		{"ten thresholds up to 1000 percent", func(s map[string]any) { s["thresholds"] = thresholds(10) }, ""},
		{"100 percent on both bases", func(s map[string]any) {
			s["thresholds"] = []any{map[string]any{"percent": 100}, map[string]any{"percent": 100, "basis": "Forecasted"}}
		}, ""},
		{"a daily ledger with a key prefix", func(s map[string]any) {
			s["costSource"] = map[string]any{"configMapName": "llm-spend", "format": "DailyLedger", "keyPrefix": "team-a."}
		}, ""},
		{"a daily ledger with an empty key prefix", func(s map[string]any) {
			s["costSource"] = map[string]any{"configMapName": "llm-spend", "format": "DailyLedger", "keyPrefix": ""}
		}, ""},
		{"blocking core and grouped resources, failing closed", func(s map[string]any) {
			s["enforcement"] = map[string]any{"action": "BlockNewWorkloads", "failurePolicy": "Closed",
				"resources": []any{"pods", "jobs.batch", "deployments.apps", "llminstances.llm.privatellms.msp"}}
		}, ""},
		{"a suspended budget", func(s map[string]any) { s["suspend"] = true }, ""},
		{"a budget name of exactly 63 characters", nil, strings.Repeat("b", 63)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.budget
			if name == "" {
				name = "valid"
			}
			kube.ApplyYAML(t, ns, budgetYAML(t, name, tc.edit), "--dry-run=server")
		})
	}
}

// thresholds is n distinct Actual thresholds, the last at 1000 percent.
func thresholds(n int) []any {
	list := make([]any, n)
	for i := range n {
		list[i] = map[string]any{"percent": 1000 - (n-1-i)*10}
	}
	return list
}
