package migrate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/migrate"
)

// operatorBudget is an llm-cost-budget-operator budget whose spec lines
// are given; metadata is fixed.
func operatorBudget(spec string) string {
	return "apiVersion: finops.kineticgain.com/v1alpha1\nkind: LLMCostBudget\nmetadata:\n  name: chatbot\n  namespace: " +
		"team-ml\nspec:\n" + spec
}

const operatorSpec = `  monthlyLimitUSD: "500"
  costSource:
    configMapName: llm-spend
    key: total-usd
`

// kelosBudget is a Kelos TaskBudget whose spec lines are given.
func kelosBudget(spec string) string {
	return "apiVersion: kelos.dev/v1alpha2\nkind: TaskBudget\nmetadata:\n  name: agents\n  namespace: " +
		"team-ml\nspec:\n" + spec
}

const kelosSelector = `  taskSelector:
    matchLabels:
      team: platform
  period:
    type: Daily
    timezone: America/New_York
`

// converted is an output document decoded for assertions.
type converted struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec map[string]any `json:"spec"`
}

func migrateOne(t *testing.T, in string) (converted, string) {
	t.Helper()
	res, err := migrate.Migrate("stdin", []byte(in), migrate.Options{})
	require.NoError(t, err)
	require.Len(t, res.Documents, 1)
	var c converted
	require.NoError(t, yaml.UnmarshalStrict(res.Documents[0], &c))
	return c, string(res.Documents[0])
}

func field(t *testing.T, spec map[string]any, path ...string) any {
	t.Helper()
	var v any = spec
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "spec has no mapping at %s", p)
		v = m[p]
	}
	return v
}

func TestOperatorBudgetsBecomeMonthlyBudgetsOnTheSameKey(t *testing.T) {
	c, text := migrateOne(t, operatorBudget(operatorSpec+"  warnThresholdPercent: 90\n"))
	assert.Equal(t, "llmbudget.dev/v1alpha1", c.APIVersion)
	assert.Equal(t, "LLMCostBudget", c.Kind)
	assert.Equal(t, "chatbot", c.Metadata.Name)
	assert.Equal(t, "team-ml", c.Metadata.Namespace)
	assert.Equal(t, "500", field(t, c.Spec, "limitUSD"))
	assert.Equal(t, "Monthly", field(t, c.Spec, "period", "type"))
	assert.Equal(t, "UTC", field(t, c.Spec, "period", "timeZone"))
	assert.EqualValues(t, 90, field(t, c.Spec, "warnThresholdPercent"))
	assert.Equal(t, map[string]any{"configMapName": "llm-spend", "format": "Total", "key": "total-usd"}, field(t, c.Spec,
		"costSource"))
	assert.Contains(t, text, `limitUSD: "500" # was spec.monthlyLimitUSD`)
	assert.Contains(t, text, "# Converted by llmbudget migrate from finops.kineticgain.com/v1alpha1 LLMCostBudget "+
		"team-ml/chatbot.")
}

func TestOperatorLimitsKeepTheirLiteralDigits(t *testing.T) {
	tests := map[string]struct{ literal, want string }{
		"a quoted limit is kept as written":                  {`"1500.00"`, "1500.00"},
		"a YAML integer keeps its text":                      {`500`, "500"},
		"a YAML float keeps its text, trailing zero and all": {`12.50`, "12.50"},
		"six decimals are the full precision":                {`"0.000001"`, "0.000001"},
		"zeros past six decimals are dropped":                {`"12.5000000"`, "12.5"},
		"zeros past six decimals of a whole number go too":   {`"7.000000000"`, "7"},
		"leading zeros, which the CRD refuses, are dropped":  {`"007.5"`, "7.5"},
		"a limit of fifteen digits stays exact":              {`"987654321.123457"`, "987654321.123457"},
		"an unquoted one too, never through float64":         {`987654321.123457`, "987654321.123457"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := strings.Replace(operatorSpec, `"500"`, tc.literal, 1)
			c, _ := migrateOne(t, operatorBudget(spec))
			assert.Equal(t, tc.want, field(t, c.Spec, "limitUSD"))
		})
	}
}

func TestAnAbsentWarnThresholdStaysAbsentBecauseBothDefaultTo80(t *testing.T) {
	c, _ := migrateOne(t, operatorBudget(operatorSpec))
	_, present := c.Spec["warnThresholdPercent"]
	assert.False(t, present)
}

func TestMetadataKeepsNameNamespaceLabelsAndAnnotationsOnly(t *testing.T) {
	in := `apiVersion: finops.kineticgain.com/v1alpha1
kind: LLMCostBudget
metadata:
  name: support-bot
  namespace: team-support
  uid: 6f0c1d9e-5b7a-4c2e-9d4f-2a8e1b3c7d50
  resourceVersion: "48213377"
  generation: 3
  creationTimestamp: "2026-09-02T08:14:31Z"
  managedFields:
  - manager: kubectl-client-side-apply
    fieldsV1: {f:spec: {}}
  labels:
    app: support
    tier: "1"
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"kind":"LLMCostBudget"}'
    owner: support-platform@example.com
    description: "two\nlines"
` + "spec:\n" + operatorSpec
	c, text := migrateOne(t, in)
	assert.Equal(t, map[string]string{"app": "support", "tier": "1"}, c.Metadata.Labels)
	assert.Equal(t, map[string]string{"owner": "support-platform@example.com", "description": "two\nlines"},
		c.Metadata.Annotations)
	for _, dropped := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
		"last-applied"} {
		assert.NotContains(t, text, dropped)
	}
}

func TestAnObjectWithoutNamespaceStaysWithoutOne(t *testing.T) {
	in := strings.Replace(operatorBudget(operatorSpec), "  namespace: team-ml\n", "", 1)
	c, text := migrateOne(t, in)
	assert.Empty(t, c.Metadata.Namespace)
	assert.Contains(t, text, "LLMCostBudget chatbot.")
}

func TestYAMLAnchorsAndAliasesResolveAsKubectlReadsThem(t *testing.T) {
	in := strings.Replace(operatorBudget(operatorSpec), "  namespace: team-ml\n",
		"  namespace: team-ml\n  labels: &labels\n    app: chatbot\n  annotations: *labels\n", 1)
	c, _ := migrateOne(t, in)
	assert.Equal(t, map[string]string{"app": "chatbot"}, c.Metadata.Labels)
	assert.Equal(t, map[string]string{"app": "chatbot"}, c.Metadata.Annotations)
}

func TestOnlyAnnotationsThatAreAllLastAppliedLeaveNoAnnotationsField(t *testing.T) {
	in := strings.Replace(operatorBudget(operatorSpec), "  namespace: team-ml\n",
		"  namespace: team-ml\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{}'\n", 1)
	_, text := migrateOne(t, in)
	assert.NotContains(t, text, "annotations")
}

func TestDroppedControllerMetadataIsNoted(t *testing.T) {
	in := strings.Replace(operatorBudget(operatorSpec), "  namespace: team-ml\n",
		"  namespace: team-ml\n  finalizers: [finops.kineticgain.com/cleanup]\n  ownerReferences: [{apiVersion: v1, kind: "+
			"ConfigMap, name: x, uid: u1}]\n", 1)
	res, err := migrate.Migrate("budgets.yaml", []byte(in), migrate.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"budgets.yaml:1: LLMCostBudget team-ml/chatbot: dropped metadata.ownerReferences: it belongs to the source object " +
			"and its controller",
		"budgets.yaml:1: LLMCostBudget team-ml/chatbot: dropped metadata.finalizers: it belongs to the source object and " +
			"its controller",
	}, res.Notes)
}

func TestKelosTaskBudgetsBecomeBudgetsOverTheSameTaskRecords(t *testing.T) {
	in := kelosBudget(kelosSelector + "  maxCostUSD: 12500m\n  maxInputTokens: 3000000\n  maxOutputTokens: 0\n")
	c, text := migrateOne(t, in)
	assert.Equal(t, "12.5", field(t, c.Spec, "limitUSD"))
	assert.Equal(t, map[string]any{"type": "Daily", "timeZone": "America/New_York"}, field(t, c.Spec, "period"))
	assert.Equal(t, map[string]any{"input": float64(3000000), "output": float64(0)}, field(t, c.Spec, "tokenLimits"))
	assert.Equal(t, map[string]any{"format": "TaskRecords",
		"selector": map[string]any{"matchLabels": map[string]any{"team": "platform"}}}, field(t, c.Spec, "costSource"))
	assert.Equal(t, map[string]any{"action": "BlockNewWorkloads", "resources": []any{"tasks.kelos.dev"},
		"failurePolicy": "Closed", "scope": "Labelled"}, field(t, c.Spec, "enforcement"))
	assert.Contains(t, text, `limitUSD: "12.5" # was spec.maxCostUSD (12500m)`)
	assert.Contains(t, text,
		"#   kubectl label tasks.kelos.dev -n team-ml -l 'team=platform' llmbudget.dev/budget=agents\n")
	assert.Contains(t, text, "#   kubectl get taskrecords.kelos.dev -n team-ml -l 'team=platform'\n")
}

func TestKelosCostQuantitiesBecomeExactPlainDecimals(t *testing.T) {
	tests := map[string]struct{ literal, want string }{
		"a whole number string":                         {`"50"`, "50"},
		"a YAML integer":                                {`50`, "50"},
		"a YAML float keeps its exact value":            {`12.5`, "12.5"},
		"milli units as the API server stores 12.50":    {`12500m`, "12.5"},
		"a decimal string with trailing zeros":          {`"12.50"`, "12.5"},
		"micro units":                                   {`1u`, "0.000001"},
		"nano units that make whole micro-dollars":      {`1000n`, "0.000001"},
		"kilo units":                                    {`1.5k`, "1500"},
		"a binary suffix":                               {`1Ki`, "1024"},
		"a positive exponent":                           {`1.5e2`, "150"},
		"a negative exponent":                           {`25E-2`, "0.25"},
		"an explicit plus sign":                         {`"+7"`, "7"},
		"a fraction without an integer part":            {`.5`, "0.5"},
		"a point without a fraction":                    {`"5."`, "5"},
		"a value of fifteen digits stays exact":         {`"987654321.123457"`, "987654321.123457"},
		"an unquoted one too":                           {`987654321.123457`, "987654321.123457"},
		"exa units are a suffix, not an exponent":       {`0.0000000001E`, "100000000"},
		"six decimals reached through a suffix exactly": {`123456u`, "0.123456"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, _ := migrateOne(t, kelosBudget(kelosSelector+"  maxCostUSD: "+tc.literal+"\n"))
			assert.Equal(t, tc.want, field(t, c.Spec, "limitUSD"))
		})
	}
}

func TestKelosWithoutATimezoneUsesKelossDefaultUTC(t *testing.T) {
	in := kelosBudget(strings.Replace(kelosSelector, "    timezone: America/New_York\n", "", 1) + "  maxOutputTokens: " +
		"1000\n")
	c, text := migrateOne(t, in)
	assert.Equal(t, "UTC", field(t, c.Spec, "period", "timeZone"))
	assert.Contains(t, text, "timeZone: UTC # Kelos's default time zone")
	_, hasLimit := c.Spec["limitUSD"]
	assert.False(t, hasLimit, "a token-only TaskBudget has no USD limit")
}

func TestAnEmptyKelosSelectorTellsTheUserToLabelEveryTask(t *testing.T) {
	in := kelosBudget(strings.Replace(kelosSelector, "    matchLabels:\n      team: platform\n", "", 1) + "  " +
		"maxCostUSD: 5\n")
	in = strings.Replace(in, "  taskSelector:\n", "  taskSelector: {}\n", 1)
	c, text := migrateOne(t, in)
	assert.Equal(t, map[string]any{}, field(t, c.Spec, "costSource", "selector"), "every TaskRecord counts")
	assert.Contains(t, text, "The empty selector matched every Task in namespace team-ml:")
	assert.Contains(t, text, "kubectl label tasks.kelos.dev -n team-ml --all llmbudget.dev/budget=agents")
}

func TestKelosSelectorExpressionsAreRenderedForKubectl(t *testing.T) {
	in := kelosBudget(`  taskSelector:
    matchExpressions:
    - {key: kelos.dev/type, operator: In, values: [codex, claude-code]}
    - {key: tier, operator: NotIn, values: [free]}
    - {key: team, operator: Exists}
    - {key: experimental, operator: DoesNotExist}
  period: {type: Daily}
  maxCostUSD: "5"
`)
	c, text := migrateOne(t, in)
	assert.Contains(t, text, "-l '!experimental,kelos.dev/type in (claude-code,codex),team,tier notin (free)'")
	assert.Equal(t, []any{
		map[string]any{"key": "kelos.dev/type", "operator": "In", "values": []any{"codex", "claude-code"}},
		map[string]any{"key": "tier", "operator": "NotIn", "values": []any{"free"}},
		map[string]any{"key": "team", "operator": "Exists"},
		map[string]any{"key": "experimental", "operator": "DoesNotExist"},
	}, field(t, c.Spec, "costSource", "selector", "matchExpressions"), "the records are selected as the Tasks were")
}

func TestKelosStatusUsageIsOfferedAsTheFirstLedgerValue(t *testing.T) {
	in := kelosBudget(kelosSelector+"  maxCostUSD: 12500m\n") + `status:
  observedGeneration: 1
  currentPeriodStart: "2026-11-29T05:00:00Z"
  currentPeriodEnd: "2026-11-30T05:00:00Z"
  used:
    costUSD: 3750m
    inputTokens: 1210400
    outputTokens: 187250
`
	_, text := migrateOne(t, in)
	assert.Contains(t, text, "# When exported, Kelos had counted 3.75 USD, 1210400 input and 187250 output tokens for "+
		"the day from 2026-11-29T05:00:00Z.")
}

func TestKelosConversionsLeaveANoteForStderr(t *testing.T) {
	res, err := migrate.Migrate("stdin", []byte(kelosBudget(kelosSelector+"  maxCostUSD: 5\n")), migrate.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"stdin:1: TaskBudget team-ml/agents: label the Tasks with llmbudget.dev/budget=agents " +
		"(see the comments in the output)"}, res.Notes)
}

func TestMultiDocumentStreamsAndListsConvertInOrder(t *testing.T) {
	in := "---\n" + operatorBudget(operatorSpec) + "---\n---\n" + kelosBudget(kelosSelector+"  maxCostUSD: 5\n") + "---\n"
	res, err := migrate.Migrate("stdin", []byte(in), migrate.Options{})
	require.NoError(t, err)
	require.Len(t, res.Documents, 2)
	assert.Contains(t, string(res.Documents[0]), "name: chatbot")
	assert.Contains(t, string(res.Documents[1]), "name: agents")

	joined := string(migrate.Join(res.Documents))
	assert.Equal(t, 1, strings.Count(joined, "---\n"), "two documents need one separator")

	list := "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n"
	for _, item := range []string{operatorBudget(operatorSpec), kelosBudget(kelosSelector + "  maxCostUSD: 5\n")} {
		list += "- " + strings.ReplaceAll(strings.TrimSuffix(item, "\n"), "\n", "\n  ") + "\n"
	}
	fromList, err := migrate.Migrate("stdin", []byte(list), migrate.Options{})
	require.NoError(t, err)
	assert.Equal(t, res.Documents, fromList.Documents, "a kubectl List converts like the same objects as documents")
}

func TestJSONFromKubectlConvertsLikeYAML(t *testing.T) {
	js, err := yaml.YAMLToJSON([]byte(operatorBudget(operatorSpec)))
	require.NoError(t, err)
	fromJSON, err := migrate.Migrate("stdin", js, migrate.Options{})
	require.NoError(t, err)
	fromYAML, err := migrate.Migrate("stdin", []byte(operatorBudget(operatorSpec)), migrate.Options{})
	require.NoError(t, err)
	assert.Equal(t, fromYAML.Documents, fromJSON.Documents)
}

func TestOtherKindsAreRefusedUnlessSkipped(t *testing.T) {
	in := operatorBudget(operatorSpec) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: llm-spend\n  " +
		"namespace: team-ml\ndata:\n  total-usd: \"1\"\n"
	_, err := migrate.Migrate("stdin", []byte(in), migrate.Options{})
	require.Error(t, err)
	assert.Equal(t, "stdin:12: ConfigMap team-ml/llm-spend: not a kind migrate converts: v1 ConfigMap "+
		"(--skip-unknown-kinds skips such documents)", err.Error())

	res, err := migrate.Migrate("stdin", []byte(in), migrate.Options{SkipUnknownKinds: true})
	require.NoError(t, err)
	assert.Len(t, res.Documents, 1)
	assert.Equal(t, []string{"stdin:12: ConfigMap team-ml/llm-spend: skipped: not a kind migrate converts: v1 " +
		"ConfigMap"}, res.Notes)
}

func TestDocumentsMigrateRefusesNameTheDocumentObjectAndField(t *testing.T) {
	valid := operatorBudget(operatorSpec)
	tests := map[string]struct {
		in   string
		want string
	}{
		"a misspelt field in the second document": {
			valid + "---\n" + strings.Replace(valid, "key: total-usd", "keyy: total-usd", 1),
			`stdin:21: LLMCostBudget team-ml/chatbot: unknown field "spec.costSource.keyy"`,
		},
		"a field name in another case, which the API server does not read either": {
			strings.Replace(valid, "monthlyLimitUSD", "monthlylimitusd", 1),
			`stdin:7: LLMCostBudget team-ml/chatbot: unknown field "spec.monthlylimitusd"`,
		},
		"an unknown top-level field": {
			valid + "spek: {}\n",
			`stdin:11: LLMCostBudget team-ml/chatbot: unknown field "spek"`,
		},
		"an unknown metadata field": {
			strings.Replace(valid, "  name: chatbot\n", "  name: chatbot\n  labelz: {}\n", 1),
			`stdin:5: LLMCostBudget team-ml/chatbot: unknown field "metadata.labelz"`,
		},
		"an unknown status field": {
			valid + "status:\n  spend: \"1\"\n",
			`stdin:12: LLMCostBudget team-ml/chatbot: unknown field "status.spend"`,
		},
		"an unknown condition field": {
			valid + "status:\n  conditions:\n  - type: Ready\n    severity: high\n",
			`stdin:14: LLMCostBudget team-ml/chatbot: unknown field "status.conditions[0].severity"`,
		},
		"a repeated field": {
			strings.Replace(valid, "    key: total-usd\n", "    key: total-usd\n    key: other\n", 1),
			`stdin:11: not valid YAML: unmarshal errors: key "key" already set in map`,
		},
		"an unknown field brought in by a YAML merge key": {
			strings.Replace(valid, "  costSource:\n", "  costSource:\n    <<: {x: y}\n", 1),
			`stdin:8: LLMCostBudget team-ml/chatbot: unknown field "spec.costSource.x"`,
		},
		"a limit brought in by a YAML merge key, whose literal digits cannot be located": {
			strings.Replace(valid, "  monthlyLimitUSD: \"500\"\n", "  <<: {monthlyLimitUSD: 12.50}\n", 1),
			`:6: LLMCostBudget team-ml/chatbot: spec.monthlyLimitUSD: must be written in place, not through a YAML merge key`,
		},
		"two unknown fields at once": {
			valid + "spek: {}\nstatuz: {}\n",
			"stdin:11: LLMCostBudget team-ml/chatbot: unknown field \"spek\"\nstdin:12: LLMCostBudget team-ml/chatbot: " +
				"unknown field \"statuz\"",
		},
		"a value JSON cannot hold": {
			valid + "  warnThresholdPercent: .inf\n",
			`stdin:1: a value JSON cannot represent: unsupported value: +Inf`,
		},
		"a limit with seven significant decimals": {
			strings.Replace(valid, `"500"`, `"12.3456789"`, 1),
			`stdin:7: LLMCostBudget team-ml/chatbot: spec.monthlyLimitUSD: "12.3456789"…6 decimals…, and llmbudget limits are ` +
				`exact to micro-dollars: round it yourself`,
		},
		"a limit in exponent form": {
			strings.Replace(valid, `"500"`, `5e2`, 1),
			`stdin:7: LLMCostBudget team-ml/chatbot: spec.monthlyLimitUSD: "5e2"… (the operator's pattern is ` +
				`^[0-9]+(\.[0-9]+)?$)`,
		},
		"a negative limit": {
			strings.Replace(valid, `"500"`, `-5`, 1),
			`:7: LLMCostBudget team-ml/chatbot: spec.monthlyLimitUSD: "-5"…negative… (the operator's pattern is ` +
				`^[0-9]+(\.[0-9]+)?$)`,
		},
		"a zero limit": {
			strings.Replace(valid, `"500"`, `"0.00"`, 1),
			`:7: LLMCostBudget team-ml/chatbot: spec.monthlyLimitUSD: "0.00" must be greater than 0 (the operator cannot ` +
				`evaluate a zero limit either)`,
		},
		"a limit that is a mapping": {
			strings.Replace(valid, `"500"`, `{usd: 500}`, 1),
			`:7: LLMCostBudget team-ml/chatbot: spec.monthlyLimitUSD: must be a number or a string`,
		},
		"a missing limit": {
			strings.Replace(valid, "  monthlyLimitUSD: \"500\"\n", "", 1),
			`stdin:6: LLMCostBudget team-ml/chatbot: spec.monthlyLimitUSD: is required`,
		},
		"a missing cost source": {
			strings.Replace(valid, "  costSource:\n    configMapName: llm-spend\n    key: total-usd\n", "", 1),
			`stdin:6: LLMCostBudget team-ml/chatbot: spec.costSource: is required`,
		},
		"a missing key": {
			strings.Replace(valid, "    key: total-usd\n", "", 1),
			`spec.costSource.key: is required`,
		},
		"a warning threshold of zero, which the API refuses": {
			valid + "  warnThresholdPercent: 0\n",
			`stdin:1: LLMCostBudget team-ml/chatbot: the converted budget is not valid: spec.warnThresholdPercent: Invalid ` +
				`value: 0: must be greater than or equal to 1`,
		},
		"a warning threshold as a string": {
			valid + "  warnThresholdPercent: \"80\"\n",
			`:11: LLMCostBudget team-ml/chatbot: spec.warnThresholdPercent: must be of type integer, got string`,
		},
		"a ConfigMap name the API refuses": {
			strings.Replace(valid, "llm-spend", "LLM_Spend", 1),
			`the converted budget is not valid: spec.costSource.configMapName: Invalid value: "LLM_Spend": must be a ` +
				`ConfigMap name (lower-case DNS subdomain)`,
		},
		"a label value that is not a string": {
			strings.Replace(valid, "  name: chatbot\n", "  name: chatbot\n  labels:\n    tier: 1\n", 1),
			`:5: LLMCostBudget team-ml/chatbot: metadata.labels: must be of type string, got number (quote it)`,
		},
		"a missing name": {
			strings.Replace(valid, "  name: chatbot\n", "", 1),
			`stdin:3: LLMCostBudget: metadata.name: Required value: name or generateName is required`,
		},
		"only a generated name": {
			strings.Replace(valid, "  name: chatbot\n", "  generateName: chatbot-\n", 1),
			`stdin:3: LLMCostBudget: metadata.name: Required value: generateName is not enough: kubectl apply needs a fixed ` +
				`name`,
		},
		"a name Kubernetes refuses": {
			strings.Replace(valid, "  name: chatbot\n", "  name: Chat_Bot\n", 1),
			`stdin:4: LLMCostBudget team-ml/Chat_Bot: metadata.name: Invalid value: "Chat_Bot": a lowercase RFC 1123 subdomain`,
		},
		"a spec that is a list": {
			strings.Replace(valid, "spec:\n"+operatorSpec, "spec: []\n", 1),
			`stdin:6: LLMCostBudget team-ml/chatbot: spec: must be of type object, got array`,
		},
		"a document that is not YAML": {
			valid + "---\nkind: [unclosed\n",
			`stdin:12: not valid YAML: did not find expected ',' or ']'`,
		},
		"a document that is a plain string": {
			"just text\n",
			`stdin:1: not a Kubernetes object: a mapping is expected`,
		},
		"a document without a kind": {
			"metadata: {name: x}\n",
			`stdin:1: x: not a kind migrate converts: it has no kind`,
		},
		"an operator budget of a version that does not exist": {
			strings.Replace(valid, "v1alpha1", "v1beta1", 1),
			`not a kind migrate converts: finops.kineticgain.com/v1beta1 LLMCostBudget (migrate knows ` +
				`finops.kineticgain.com/v1alpha1 LLMCostBudget and kelos.dev/v1alpha2 TaskBudget)`,
		},
		"a bad item in a List": {
			"apiVersion: v1\nkind: List\nitems:\n- " +
				"" + strings.ReplaceAll(strings.TrimSuffix(strings.Replace(valid, "key:", "kee:", 1), "\n"), "\n", "\n  ") + "\n",
			`stdin:13: LLMCostBudget team-ml/chatbot: unknown field "items[0].spec.costSource.kee"`,
		},
		"a List whose items come through a YAML merge key": {
			"apiVersion: v1\nkind: List\n<<: {items: [{kind: x}]}\n",
			`stdin: x: not a kind migrate converts: x`,
		},
		"a List inside a List": {
			"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n",
			`stdin:4: List: not a kind migrate converts: v1 List`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := migrate.Migrate("stdin", []byte(tc.in), migrate.Options{})
			require.Error(t, err)
			for _, part := range strings.Split(tc.want, "…") { // parts the money package words are left out
				assert.Contains(t, err.Error(), part)
			}
			assert.Empty(t, res.Documents, "a refused input yields no documents")
			var merr manifest.Errors
			assert.True(t, errors.As(err, &merr), "the error is a manifest.Errors")
		})
	}
}

func TestKelosTaskBudgetsMigrateRefusesNameTheField(t *testing.T) {
	tests := map[string]struct {
		spec string
		want string
	}{
		"a cost with more than six decimals": {
			kelosSelector + "  maxCostUSD: 100n\n",
			`:13: TaskBudget team-ml/agents: spec.maxCostUSD: "100n" reads as 0.0000001: "0.0000001"…6 decimals…, and ` +
				`llmbudget limits are exact to micro-dollars: round it yourself`,
		},
		"a negative cost": {
			kelosSelector + "  maxCostUSD: \"-5\"\n",
			`:13: TaskBudget team-ml/agents: spec.maxCostUSD: "-5" is negative`,
		},
		"a zero cost, which blocks everything in Kelos": {
			kelosSelector + "  maxCostUSD: \"0\"\n",
			`:13: TaskBudget team-ml/agents: spec.maxCostUSD: "0" blocks every matching Task in Kelos, but an llmbudget limit ` +
				`must be greater than 0: set a positive maxCostUSD, or remove it and keep a token limit`,
		},
		"a cost with a currency": {
			kelosSelector + "  maxCostUSD: 5 USD\n",
			`spec.maxCostUSD: "5 USD" is not a Kubernetes quantity like 50, 12.5 or 12500m: quantities must match the regular ` +
				`expression`,
		},
		"a cost too long to be one": {
			kelosSelector + "  maxCostUSD: " + strings.Repeat("9", 101) + "\n",
			`:13: TaskBudget team-ml/agents: spec.maxCostUSD: "9999999999999999999999999999999999999999"... is longer than ` +
				`100 characters`,
		},
		"a negative cost reached through a YAML alias": {
			kelosSelector + "  maxOutputTokens: &cost -3\n  maxCostUSD: *cost\n",
			`:14: TaskBudget team-ml/agents: spec.maxCostUSD: "-3" is negative`,
		},
		"a cost with an exponent beyond range": {
			kelosSelector + "  maxCostUSD: 1e31\n",
			`spec.maxCostUSD: "1e31": exponent beyond ±30`,
		},
		"a cost that is a boolean": {
			kelosSelector + "  maxCostUSD: true\n",
			`:13: TaskBudget team-ml/agents: spec.maxCostUSD: must be a number or a string`,
		},
		"a negative token limit": {
			kelosSelector + "  maxInputTokens: -1\n",
			`:13: TaskBudget team-ml/agents: spec.maxInputTokens: -1 is negative`,
		},
		"a token limit with a fraction": {
			kelosSelector + "  maxOutputTokens: 1.5\n",
			`:13: TaskBudget team-ml/agents: spec.maxOutputTokens: must be of type integer, got number 1.5`,
		},
		"no limit at all": {
			kelosSelector,
			`spec: sets no limit: Kelos requires one of maxCostUSD, maxInputTokens or maxOutputTokens`,
		},
		"a weekly period, which Kelos does not have": {
			strings.Replace(kelosSelector, "type: Daily", "type: Weekly", 1) + "  maxCostUSD: 5\n",
			`:11: TaskBudget team-ml/agents: spec.period.type: "Weekly" is not a Kelos period type (only Daily)`,
		},
		"a time zone that does not exist": {
			strings.Replace(kelosSelector, "America/New_York", "Mars/Olympus", 1) + "  maxCostUSD: 5\n",
			`the converted budget is not valid: spec.period.timeZone: Invalid value: "Mars/Olympus": must be an IANA time zone`,
		},
		"a time zone with characters Kelos refuses": {
			strings.Replace(kelosSelector, "America/New_York", `"America/New York"`, 1) + "  maxCostUSD: 5\n",
			`:12: TaskBudget team-ml/agents: spec.period.timezone: "America/New York" is not an IANA time zone name (Kelos's ` +
				`pattern ^[A-Za-z0-9/_+-]{1,64}$)`,
		},
		"a cost below a nano-dollar, which Kubernetes rounds up to one": {
			kelosSelector + "  maxCostUSD: \"0." + strings.Repeat("0", 60) + "1\"\n",
			`spec.maxCostUSD: "0.` + strings.Repeat("0", 60) + `1" reads as 0.000000001: "0.000000001"…6 decimals`,
		},
		"a cost with an exponent far beyond range, which is never computed": {
			kelosSelector + "  maxCostUSD: 1e999999\n",
			`:13: TaskBudget team-ml/agents: spec.maxCostUSD: "1e999999": exponent beyond ±30`,
		},
		"a cost with an exponent beyond what an int64 holds": {
			kelosSelector + "  maxCostUSD: 1e-99999999999999999999\n",
			`:13: TaskBudget team-ml/agents: spec.maxCostUSD: "1e-99999999999999999999": exponent beyond ±30`,
		},
		"a missing selector": {
			strings.Replace(kelosSelector, "  taskSelector:\n    matchLabels:\n      team: platform\n", "", 1) + "  " +
				"maxCostUSD: 5\n",
			`spec.taskSelector: is required (use {} for every Task in the namespace)`,
		},
		"a missing period": {
			strings.Replace(kelosSelector, "  period:\n    type: Daily\n    timezone: America/New_York\n", "", 1) + "  " +
				"maxCostUSD: 5\n",
			`spec.period: is required`,
		},
		"an In expression without values": {
			"  taskSelector:\n    matchExpressions:\n    - {key: team, operator: In}\n  period: {type: Daily}\n  maxCostUSD: " +
				"5\n",
			`:7: TaskBudget team-ml/agents: spec.taskSelector: values: Invalid value: null: for 'in', 'notin' operators, ` +
				`values set can't be empty`,
		},
		"a selector value of the wrong type": {
			"  taskSelector:\n    matchExpressions:\n    - {key: tier, operator: In, values: [1]}\n  period: {type: Daily}\n  " +
				"maxCostUSD: 5\n",
			`:8: TaskBudget team-ml/agents: spec.taskSelector.matchExpressions.values: must be of type string, got number ` +
				`(quote it)`,
		},
		"a status timestamp that is not one": {
			kelosSelector + "  maxCostUSD: 5\nstatus:\n  currentPeriodStart: yesterday\n  used: {costUSD: \"1\"}\n",
			`:15: TaskBudget team-ml/agents: status.currentPeriodStart: "yesterday" is not an RFC 3339 time`,
		},
		"a label key Kubernetes refuses": {
			"  taskSelector:\n    matchLabels:\n      \"bad key\": x\n  period: {type: Daily}\n  maxCostUSD: 5\n",
			`spec.taskSelector: key: Invalid value: "bad key"`,
		},
		"a misspelt selector field": {
			"  taskSelector:\n    matchLabel: {team: x}\n  period: {type: Daily}\n  maxCostUSD: 5\n",
			`:8: TaskBudget team-ml/agents: unknown field "spec.taskSelector.matchLabel"`,
		},
		"a misspelt period field": {
			"  taskSelector: {}\n  period: {type: Daily, timeZone: UTC}\n  maxCostUSD: 5\n",
			`:8: TaskBudget team-ml/agents: unknown field "spec.period.timeZone"`,
		},
		"an unknown usage field in status": {
			kelosSelector + "  maxCostUSD: 5\nstatus:\n  used:\n    requests: 3\n",
			`:16: TaskBudget team-ml/agents: unknown field "status.used.requests"`,
		},
		"a name too long for the budget label": {
			kelosSelector + "  maxCostUSD: 5\n",
			`stdin:4: TaskBudget team-ml/aaaa…: metadata.name must be at most 63 characters: workloads name their budget in ` +
				`the llmbudget.dev/budget label`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := kelosBudget(tc.spec)
			if strings.HasPrefix(name, "a name too long") {
				in = strings.Replace(in, "name: agents", "name: "+strings.Repeat("a", 250), 1)
			}
			_, err := migrate.Migrate("stdin", []byte(in), migrate.Options{})
			require.Error(t, err)
			for _, part := range strings.Split(tc.want, "…") { // parts the money package words are left out
				assert.Contains(t, err.Error(), part)
			}
			assert.Contains(t, err.Error(), ": TaskBudget team-ml/")
		})
	}
}

func TestMigrationIsDeterministic(t *testing.T) {
	in := []byte(operatorBudget(operatorSpec) + "---\n" + kelosBudget(kelosSelector+"  maxCostUSD: 12500m\n  "+
		"maxInputTokens: 5\n"))
	first, err := migrate.Migrate("stdin", in, migrate.Options{})
	require.NoError(t, err)
	for range 20 {
		again, err := migrate.Migrate("stdin", in, migrate.Options{})
		require.NoError(t, err)
		assert.Equal(t, first, again)
	}
}

func TestEveryRefusedObjectOfAStreamIsReported(t *testing.T) {
	doc := func(name string) string {
		return "apiVersion: finops.kineticgain.com/v1alpha1\nkind: LLMCostBudget\nmetadata: {name: " + name +
			"}\nspec:\n  monthlyLimitUSD: \"5\"\n  costSource: {configMapName: c, keyy: k}\n"
	}
	list := "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n" +
		"- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n"
	res, err := migrate.Migrate("in.yaml", []byte(doc("one")+"---\n"+list+"---\n"+doc("two")), migrate.Options{})
	require.Error(t, err)
	assert.Empty(t, res.Documents, "nothing converted is returned when anything is refused")
	errs, ok := errors.AsType[manifest.Errors](err)
	require.True(t, ok, "%T", err)
	require.Len(t, errs, 4, "%v", err)
	assert.Equal(t, []int{6, 11, 12, 19}, []int{errs[0].Line, errs[1].Line, errs[2].Line, errs[3].Line})
}

// YAML 1.1, as kubectl reads YAML, takes yes, on, y and NO for booleans; such strings are printed quoted.
func TestStringsThatYAML11ReadsAsBooleansConvertAndStayStrings(t *testing.T) {
	for _, v := range []string{"yes", "on", "y", "NO", "Off", "n"} {
		t.Run(v, func(t *testing.T) {
			in := strings.Replace(operatorBudget(strings.Replace(operatorSpec, "key: total-usd", "key: \""+v+"\"", 1)),
				"metadata:\n", "metadata:\n  labels:\n    \""+v+"\": \""+v+"\"\n  annotations:\n    a: \""+v+"\"\n", 1)
			out, _ := migrateOne(t, in)
			assert.Equal(t, map[string]string{v: v}, out.Metadata.Labels)
			assert.Equal(t, map[string]string{"a": v}, out.Metadata.Annotations)
			assert.Equal(t, v, out.Spec["costSource"].(map[string]any)["key"])
		})
	}
}

// Each line break YAML knows but kubectl's splitter does not: two budgets are never converted as one.
func TestAStreamOfBudgetsIsConvertedWholeOrRefused(t *testing.T) {
	stream := operatorBudget(operatorSpec) + "---\n" + strings.ReplaceAll(operatorBudget(operatorSpec), "chatbot", "other")
	for name, brk := range map[string]string{"CR alone": "\r", "NEL": "\u0085", "U+2028": "\u2028", "U+2029": "\u2029"} {
		t.Run(name, func(t *testing.T) {
			res, err := migrate.Migrate("stdin", []byte(strings.ReplaceAll(stream, "\n", brk)), migrate.Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "the YAML parser finds 2 documents where kubectl's splitter finds one")
			assert.Empty(t, res.Documents)
		})
	}
	res, err := migrate.Migrate("stdin", []byte(strings.ReplaceAll(stream, "\n", "\r\n")), migrate.Options{})
	require.NoError(t, err)
	assert.Len(t, res.Documents, 2, "CRLF")
}

// A directory of a migration holds its output beside its input: a converted budget is passed over with a note.
func TestAnLLMBudgetBudgetIsSkippedWithANote(t *testing.T) {
	in := "apiVersion: llmbudget.dev/v1alpha1\nkind: LLMCostBudget\nmetadata: {name: x}\n---\n" +
		operatorBudget(operatorSpec)
	res, err := migrate.Migrate("stdin", []byte(in), migrate.Options{})
	require.NoError(t, err)
	assert.Len(t, res.Documents, 1)
	assert.Equal(t, []string{"stdin:1: LLMCostBudget x: skipped: already an llmbudget budget"}, res.Notes)
}
