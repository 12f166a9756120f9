package promspend_test

import (
	"math"
	"testing"
	"time"

	prommodel "github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/promspend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// mustParse is money.Parse for amounts a test writes out.
func mustParse(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

// byModel is a query answer: one sample per model (label l), "" for none.
func byModel(l string, values map[string]float64) prommodel.Vector {
	var v prommodel.Vector
	for name, x := range values {
		m := prommodel.Metric{}
		if name != "" {
			m[prommodel.LabelName(l)] = prommodel.LabelValue(name)
		}
		v = append(v, &prommodel.Sample{Metric: m, Value: prommodel.SampleValue(x)})
	}
	return v
}

func totalPlan(t *testing.T, preset string) promspend.Plan {
	t.Helper()
	src, err := promspend.Preset(preset, promspend.Selection{Namespace: "ns"})
	require.NoError(t, err)
	plan, err := promspend.NewPlan(budget(api.Monthly, "UTC", 1, api.Total),
		at("2026-11-20T12:00:00Z"), src, 15*time.Second)
	require.NoError(t, err)
	return plan
}

func mustPrices(t *testing.T, doc string) *promspend.Prices {
	t.Helper()
	p, err := promspend.ParsePrices([]byte(doc))
	require.NoError(t, err)
	return p
}

func TestLiteLLMSpendIsItsOwnCostCounterRoundedToAMicroDollar(t *testing.T) {
	plan := totalPlan(t, "litellm")
	data, err := dataOf(plan, []prommodel.Vector{
		byModel("model", map[string]float64{"gpt-4o": 0.1 + 0.2, "claude-3-5-sonnet": 12.3456786}),
		byModel("model", map[string]float64{"gpt-4o": 1200, "claude-3-5-sonnet": 5000}),
		byModel("model", map[string]float64{"gpt-4o": 340, "claude-3-5-sonnet": 0}),
	}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"costUSD": "12.645679", "inputTokens": 6200, "outputTokens": 340, "models": {
		"gpt-4o": {"costUSD": "0.30", "inputTokens": 1200, "outputTokens": 340},
		"claude-3-5-sonnet": {"costUSD": "12.345679", "inputTokens": 5000, "outputTokens": 0}}}`, data["total"])
	u, err := source.ParseValue(data["total"])
	require.NoError(t, err, "the hooks read what Data writes")
	assert.Equal(t, mustParse("12.645679"), u.CostUSD)
	assert.Equal(t, int64(1200), u.Models["gpt-4o"].InputTokens)
}

func TestAFloatCounterOfManySmallCostsReadsAsItsExactDecimalSum(t *testing.T) {
	// A proxy adds 0.000375 USD per request in float64; 40,000 requests cost
	// exactly 15 USD, which the float sum misses by float noise only.
	var counter float64
	for range 40_000 {
		counter += 0.000375
	}
	require.NotEqual(t, 15.0, counter, "the float sum is not exact, or this test proves nothing")
	plan := totalPlan(t, "litellm")
	data, err := dataOf(plan, []prommodel.Vector{
		byModel("model", map[string]float64{"m": counter}),
		byModel("model", map[string]float64{"m": 0}),
		byModel("model", map[string]float64{"m": 0}),
	}, nil)
	require.NoError(t, err)
	u, err := source.ParseValue(data["total"])
	require.NoError(t, err)
	assert.Equal(t, mustParse("15"), u.CostUSD)
}

func TestTokenOnlySourcesArePricedExactlyFromThePriceTable(t *testing.T) {
	prices := mustPrices(t, `
models:
  llama-3.1-70b: {input: 0.000000001, output: "0.123456789"}   # unquoted keeps its digits too
  gpt-4o: {input: "2.50", output: "10"}
`)
	plan := totalPlan(t, "vllm")
	data, err := dataOf(plan, []prommodel.Vector{
		byModel("model_name", map[string]float64{"llama-3.1-70b": 2_000_000, "gpt-4o": 1_000_000}),
		byModel("model_name", map[string]float64{"llama-3.1-70b": 3, "gpt-4o": 250_000}),
	}, prices)
	require.NoError(t, err)
	// 2e6 × 1e-9/1e6 = 2e-9; 3 × 0.123456789/1e6 = 3.70370367e-7 → 0.000000370 (half up);
	// gpt-4o: 2.50 + 2.50.
	assert.JSONEq(t, `{"costUSD": "5.000000372", "inputTokens": 3000000, "outputTokens": 250003, "models": {
		"llama-3.1-70b": {"costUSD": "0.000000372", "inputTokens": 2000000, "outputTokens": 3},
		"gpt-4o": {"costUSD": "5.00", "inputTokens": 1000000, "outputTokens": 250000}}}`, data["total"])
}

func TestAModelWithoutAPriceIsAnErrorUnlessThereIsADefault(t *testing.T) {
	plan := totalPlan(t, "otel-genai")
	answers := []prommodel.Vector{
		byModel("gen_ai_request_model", map[string]float64{"gpt-4o": 100, "mistral-large": 10, "qwen": 1}),
		byModel("gen_ai_request_model", map[string]float64{"gpt-4o": 100}),
	}
	_, err := dataOf(plan, answers, mustPrices(t, `models: {gpt-4o: {input: "1", output: "1"}}`))
	assert.EqualError(t, err, `key "total": no price for model "mistral-large", "qwen" and no default price`)

	data, err := dataOf(plan, answers,
		mustPrices(t, `{models: {gpt-4o: {input: "1", output: "1"}}, default: {input: "1000", output: "0"}}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"costUSD": "0.0112", "inputTokens": 111, "outputTokens": 100, "models": {
		"gpt-4o": {"costUSD": "0.0002", "inputTokens": 100, "outputTokens": 100},
		"mistral-large": {"costUSD": "0.01", "inputTokens": 10, "outputTokens": 0},
		"qwen": {"costUSD": "0.001", "inputTokens": 1, "outputTokens": 0}}}`, data["total"])

	_, err = dataOf(plan, answers, nil)
	assert.EqualError(t, err, "this source counts tokens only: a price table is required")
}

func TestSeriesWithoutAModelLabelCountInTheTotalOnly(t *testing.T) {
	plan := totalPlan(t, "litellm")
	data, err := dataOf(plan, []prommodel.Vector{
		byModel("model", map[string]float64{"": 1.5, "gpt-4o": 2}),
		byModel("model", map[string]float64{"": 10, "gpt-4o": 20}),
		byModel("model", map[string]float64{"": 1, "gpt-4o": 2}),
	}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"costUSD": "3.50", "inputTokens": 30, "outputTokens": 3, "models": {
		"gpt-4o": {"costUSD": "2.00", "inputTokens": 20, "outputTokens": 2}}}`, data["total"])
}

func TestDataRefusesWhatWouldBeAWrongNumber(t *testing.T) {
	plan := totalPlan(t, "litellm")
	ok := byModel("model", map[string]float64{"m": 1})
	tests := map[string]struct {
		answers []prommodel.Vector
		wantErr string
	}{
		"no series for a query": {[]prommodel.Vector{ok, {}, ok}, `key "total", input: no series matched: sum_over_time(`},
		"a model name the hooks cannot read": {[]prommodel.Vector{byModel("model", map[string]float64{"gpt 4o": 1}), ok, ok},
			`key "total": model "gpt 4o" is not a valid model name`},
		"a token count beyond float64's exact integers": {
			[]prommodel.Vector{ok, byModel("model", map[string]float64{"m": math.Pow(2, 54)}), ok},
			`key "total": model "m": input tokens: 1.8014398509481984e+16 is not a token count between 0 and 2^53`,
		},
		"a negative cost": {[]prommodel.Vector{byModel("model", map[string]float64{"m": -1}), ok, ok},
			`key "total": model "m": cost: -1 is not a non-negative amount`},
		"NaN tokens": {[]prommodel.Vector{ok, ok, byModel("model", map[string]float64{"m": math.NaN()})},
			`key "total": model "m": output tokens: NaN is not a token count between 0 and 2^53`},
		"answers missing": {[]prommodel.Vector{ok}, "1 answers for 3 queries"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := dataOf(plan, tc.answers, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestParsePricesRefusesAmbiguousTables(t *testing.T) {
	tests := map[string]struct {
		doc     string
		wantErr string
	}{
		"a price that is not a decimal": {
			`models: {m: {input: 1e-9, output: "1"}}`,
			`price table: line 1: "1e-9": exponents are not allowed`,
		},
		"an empty price":         {`models: {m: {input: , output: "1"}}`, "models.m: input is missing"},
		"a direction is missing": {`models: {m: {input: "1"}}`, "models.m: output is missing"},
		"ten decimals": {
			`models: {m: {input: "0.0000000001", output: "1"}}`,
			`line 1: "0.0000000001" has more than 9 decimals`,
		},
		"an unknown field": {`models: {m: {input: "1", output: "1", cached: "1"}}`,
			`price table: line 1: unknown field cached: a price table has models and default, a price input and output`},
		"a ConfigMap, read as a table": {"apiVersion: v1\nkind: ConfigMap\n",
			"price table: line 1: unknown field apiVersion: a price table has models and default"},
		"a model that is not a mapping": {"models: {m: 1}\n",
			"price table: line 1: a mapping is expected, got !!int `1`"},
		"a second document": {"models: {}\n---\nmodels: {m: {input: \"1\", output: \"1\"}}\n",
			"price table: a second YAML document: a table is one document"},
		"a bad model name":   {`models: {"a b": {input: "1", output: "1"}}`, `"a b" is not a valid model name`},
		"a negative default": {`default: {input: "-1", output: "1"}`, `line 1: "-1" is negative`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := promspend.ParsePrices([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), "promspend.", "no Go type is named")
		})
	}
}

func TestAFinishedDayWithoutSeriesIsLeftAsItIsButTodayMustHaveThem(t *testing.T) {
	src, err := promspend.Preset("vllm", promspend.Selection{Namespace: "ns"})
	require.NoError(t, err)
	// Daily in UTC: yesterday (finished) and today (open), input and output each.
	plan, err := promspend.NewPlan(budget(api.Daily, "UTC", 1, api.DailyLedger),
		at("2026-11-20T12:00:00Z"), src, 15*time.Second)
	require.NoError(t, err)
	require.Len(t, plan.Queries, 4)
	prices := mustPrices(t, `default: {input: "1", output: "1"}`)
	some := byModel("model_name", map[string]float64{"m": 1_000_000})

	data, err := dataOf(plan, []prommodel.Vector{{}, {}, some, some}, prices)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"spend-2026-11-20": `{"costUSD":"2.00","inputTokens":1000000,"outputTokens":1000000,` +
			`"models":{"m":{"costUSD":"2.00","inputTokens":1000000,"outputTokens":1000000}}}`,
	}, data)

	_, err = dataOf(plan, []prommodel.Vector{{}, some, some, some}, prices)
	assert.ErrorContains(t, err, `key "spend-2026-11-19", input: no series matched`)
	_, err = dataOf(plan, []prommodel.Vector{some, some, some, {}}, prices)
	assert.ErrorIs(t, err, promspend.ErrEmpty)
	assert.ErrorContains(t, err, `key "spend-2026-11-20", output`)
}

// dataOf is the ConfigMap data of the answers, as the spend writer and llmbudget spend write it.
func dataOf(plan promspend.Plan, answers []prommodel.Vector, prices *promspend.Prices) (map[string]string, error) {
	figures, err := plan.Figures(answers, prices)
	if err != nil {
		return nil, err
	}
	return promspend.Encode(figures), nil
}
