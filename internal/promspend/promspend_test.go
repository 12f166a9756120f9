package promspend_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	prommodel "github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/promspend"
)

func budget(kind api.PeriodType, zone string, startDay int32, format api.SourceFormat) api.Spec {
	limit := "100"
	s := api.Spec{
		LimitUSD:   &limit,
		Period:     api.Period{Type: kind, TimeZone: zone, StartDay: &startDay},
		CostSource: api.CostSource{ConfigMapName: "spend", Format: format},
	}
	if format == api.Total {
		s.CostSource.Key = "total"
	} else {
		s.CostSource.KeyPrefix = "spend-"
	}
	return s
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// growthOf is the documented shape of every query, written out once here so
// the tests below read as the windows they check: one name's changes summed by
// model, or several names' by model and process, the first name's kept by `or`.
func growthOf(sels []string, label, rangeDur, step string, atMillis int64) string {
	change := func(sel string) string {
		cur := fmt.Sprintf("last_over_time(%s[1h])", sel)
		prev := fmt.Sprintf("last_over_time(%s[1h] offset %s)", sel, step)
		return fmt.Sprintf("(%s - %s) >= 0 or %s", cur, prev, cur)
	}
	expr := change(sels[0])
	if len(sels) > 1 {
		var names []string
		for _, sel := range sels {
			names = append(names, fmt.Sprintf("sum by (%s, job, instance) (%s)", label, change(sel)))
		}
		expr = strings.Join(names, " or ")
	}
	return fmt.Sprintf("sum_over_time((sum by (%s) (%s))[%s:%s] @ %d.%03d)",
		label, expr, rangeDur, step, atMillis/1000, atMillis%1000)
}

func TestEachPresetQueriesItsExportersCountersForTheSelectedSeries(t *testing.T) {
	const hashedKey = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"
	tests := map[string]struct {
		preset string
		sel    promspend.Selection
		label  string
		series map[promspend.Measure][]string
	}{
		"litellm by team": {
			"litellm",
			promspend.Selection{Team: "team-a"},
			"model",
			map[promspend.Measure][]string{
				promspend.Cost: {`litellm_spend_metric_total{team="team-a"}`},
				promspend.Input: {`litellm_input_tokens_metric_total{team="team-a"}`,
					`litellm_input_tokens_total{team="team-a"}`},
				promspend.Output: {`litellm_output_tokens_metric_total{team="team-a"}`,
					`litellm_output_tokens_total{team="team-a"}`},
			},
		},
		"litellm by key": {
			"litellm",
			promspend.Selection{Key: hashedKey},
			"model",
			map[promspend.Measure][]string{
				promspend.Cost: {`litellm_spend_metric_total{hashed_api_key="` + hashedKey + `"}`},
				promspend.Input: {`litellm_input_tokens_metric_total{hashed_api_key="` + hashedKey + `"}`,
					`litellm_input_tokens_total{hashed_api_key="` + hashedKey + `"}`},
				promspend.Output: {`litellm_output_tokens_metric_total{hashed_api_key="` + hashedKey + `"}`,
					`litellm_output_tokens_total{hashed_api_key="` + hashedKey + `"}`},
			},
		},
		"vllm by namespace and pod label": {
			"vllm",
			promspend.Selection{Namespace: "team-ml", PodLabels: []string{"app=chat"}},
			"model_name",
			map[promspend.Measure][]string{
				promspend.Input:  {`vllm:prompt_tokens_total{app="chat",namespace="team-ml"}`},
				promspend.Output: {`vllm:generation_tokens_total{app="chat",namespace="team-ml"}`},
			},
		},
		"otel-genai by service with an extra matcher": {
			"otel-genai",
			promspend.Selection{Service: "support-bot", Match: []string{`env="prod"`}},
			"gen_ai_request_model",
			map[promspend.Measure][]string{
				promspend.Input: {`gen_ai_client_inference_usage_input_tokens_total{job="support-bot",env="prod"}`,
					`gen_ai_client_token_usage_sum{gen_ai_token_type="input",job="support-bot",env="prod"}`},
				promspend.Output: {`gen_ai_client_inference_usage_output_tokens_total{job="support-bot",env="prod"}`,
					`gen_ai_client_token_usage_sum{gen_ai_token_type="output",job="support-bot",env="prod"}`},
			},
		},
		"a label value is quoted as a PromQL string": {
			"litellm",
			promspend.Selection{Team: `a"b\c`},
			"model",
			map[promspend.Measure][]string{
				promspend.Cost: {`litellm_spend_metric_total{team="a\"b\\c"}`},
				promspend.Input: {`litellm_input_tokens_metric_total{team="a\"b\\c"}`,
					`litellm_input_tokens_total{team="a\"b\\c"}`},
				promspend.Output: {`litellm_output_tokens_metric_total{team="a\"b\\c"}`,
					`litellm_output_tokens_total{team="a\"b\\c"}`},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src, err := promspend.Preset(tc.preset, tc.sel)
			require.NoError(t, err)
			assert.Equal(t, tc.label, src.ModelLabel)
			assert.Equal(t, tc.series, src.Series)
		})
	}
}

func TestPresetRefusesAnUnknownSourceOrABadPodLabel(t *testing.T) {
	_, err := promspend.Preset("openai", promspend.Selection{})
	assert.EqualError(t, err, `source "openai" is not one of litellm, vllm, otel-genai`)
	_, err = promspend.Preset("vllm", promspend.Selection{PodLabels: []string{"app"}})
	assert.EqualError(t, err, `--pod-label "app": want label=value with a Prometheus label name`)
}

type wantQuery struct {
	key      string
	measure  promspend.Measure
	rangeDur string
	at       string // RFC 3339
}

func TestPlanMeasuresTheCurrentPeriodInTheBudgetsZone(t *testing.T) {
	litellm, err := promspend.Preset("litellm", promspend.Selection{Team: "t"})
	require.NoError(t, err)
	vllm, err := promspend.Preset("vllm", promspend.Selection{Namespace: "ns"})
	require.NoError(t, err)
	otel, err := promspend.Preset("otel-genai", promspend.Selection{Service: "bot"})
	require.NoError(t, err)
	tests := map[string]struct {
		spec api.Spec
		src  promspend.Source
		now  string
		want []wantQuery
	}{
		"a monthly Total in UTC runs from the 1st to now, rounded down to the step": {
			budget(api.Monthly, "UTC", 1, api.Total), litellm, "2026-11-20T12:00:07Z", []wantQuery{
				{"total", promspend.Cost, "19d11h59m59s999ms", "2026-11-20T12:00:00Z"},
				{"total", promspend.Input, "19d11h59m59s999ms", "2026-11-20T12:00:00Z"},
				{"total", promspend.Output, "19d11h59m59s999ms", "2026-11-20T12:00:00Z"},
			}},
		"a weekly Total in New York across the end of DST is an hour longer": {
			// Monday 26 October 00:00 EDT (04:00Z) to Sunday 1 November 12:00 EST (17:00Z).
			budget(api.Weekly, "America/New_York", 1, api.Total), vllm, "2026-11-01T17:00:00Z", []wantQuery{
				{"total", promspend.Input, "6d12h59m59s999ms", "2026-11-01T17:00:00Z"},
				{"total", promspend.Output, "6d12h59m59s999ms", "2026-11-01T17:00:00Z"},
			}},
		"a daily ledger in New York ends each finished day at its own midnight, 25 hours on the fall-back day": {
			budget(api.Weekly, "America/New_York", 7, api.DailyLedger), vllm, "2026-11-02T15:00:00Z", []wantQuery{
				// Saturday 31 October, the day before the period, is written once more.
				{"spend-2026-10-31", promspend.Input, "23h59m59s999ms", "2026-11-01T04:00:00Z"},
				{"spend-2026-10-31", promspend.Output, "23h59m59s999ms", "2026-11-01T04:00:00Z"},
				{"spend-2026-11-01", promspend.Input, "1d59m59s999ms", "2026-11-02T05:00:00Z"},
				{"spend-2026-11-01", promspend.Output, "1d59m59s999ms", "2026-11-02T05:00:00Z"},
				{"spend-2026-11-02", promspend.Input, "9h59m59s999ms", "2026-11-02T15:00:00Z"},
				{"spend-2026-11-02", promspend.Output, "9h59m59s999ms", "2026-11-02T15:00:00Z"},
			}},
		"a daily ledger in Auckland starts the day 13 hours before UTC": {
			budget(api.Daily, "Pacific/Auckland", 1, api.DailyLedger), litellm, "2026-11-20T01:30:00Z", []wantQuery{
				// 20 November 14:30 NZDT; yesterday ended at 11:00Z.
				{"spend-2026-11-19", promspend.Cost, "23h59m59s999ms", "2026-11-19T11:00:00Z"},
				{"spend-2026-11-19", promspend.Input, "23h59m59s999ms", "2026-11-19T11:00:00Z"},
				{"spend-2026-11-19", promspend.Output, "23h59m59s999ms", "2026-11-19T11:00:00Z"},
				{"spend-2026-11-20", promspend.Cost, "14h29m59s999ms", "2026-11-20T01:30:00Z"},
				{"spend-2026-11-20", promspend.Input, "14h29m59s999ms", "2026-11-20T01:30:00Z"},
				{"spend-2026-11-20", promspend.Output, "14h29m59s999ms", "2026-11-20T01:30:00Z"},
			}},
		"an otel-genai daily ledger in UTC on the 1st also writes the last day of the month before": {
			budget(api.Daily, "UTC", 1, api.DailyLedger), otel, "2026-12-01T00:30:00Z", []wantQuery{
				{"spend-2026-11-30", promspend.Input, "23h59m59s999ms", "2026-12-01T00:00:00Z"},
				{"spend-2026-11-30", promspend.Output, "23h59m59s999ms", "2026-12-01T00:00:00Z"},
				{"spend-2026-12-01", promspend.Input, "29m59s999ms", "2026-12-01T00:30:00Z"},
				{"spend-2026-12-01", promspend.Output, "29m59s999ms", "2026-12-01T00:30:00Z"},
			}},
		"an otel-genai weekly Total in Auckland starts on Monday in NZDT": {
			// Monday 16 November 00:00 NZDT is 11:00Z on the 15th.
			budget(api.Weekly, "Pacific/Auckland", 1, api.Total), otel, "2026-11-20T01:30:00Z", []wantQuery{
				{"total", promspend.Input, "4d14h29m59s999ms", "2026-11-20T01:30:00Z"},
				{"total", promspend.Output, "4d14h29m59s999ms", "2026-11-20T01:30:00Z"},
			}},
		"a monthly Total in Auckland across the start of DST is an hour shorter": {
			// 1 September 00:00 NZST (12:00Z on 31 August) to 1 October 00:00 NZDT.
			budget(api.Monthly, "Pacific/Auckland", 1, api.Total), vllm, "2026-09-30T10:59:45Z", []wantQuery{
				{"total", promspend.Input, "29d22h59m44s999ms", "2026-09-30T10:59:45Z"},
				{"total", promspend.Output, "29d22h59m44s999ms", "2026-09-30T10:59:45Z"},
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan, err := promspend.NewPlan(tc.spec, at(tc.now), tc.src, 15*time.Second)
			require.NoError(t, err)
			var got []wantQuery
			for _, q := range plan.Queries {
				w := plan.Windows[q.Window]
				want := growthOf(tc.src.Series[q.Measure], tc.src.ModelLabel, dur(w.End.Sub(w.Start)-time.Millisecond),
					"15s", w.End.UnixMilli())
				assert.Equal(t, want, q.PromQL)
				got = append(got, wantQuery{w.Key, q.Measure, dur(w.End.Sub(w.Start) - time.Millisecond),
					w.End.UTC().Format(time.RFC3339)})
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAQueryIsExactlyTheDocumentedPromQL(t *testing.T) {
	src, err := promspend.Preset("vllm", promspend.Selection{Namespace: "team-ml"})
	require.NoError(t, err)
	plan, err := promspend.NewPlan(budget(api.Daily, "UTC", 1, api.Total), at("2026-11-20T06:00:00Z"), src, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, plan.Queries, 2)
	const want = `sum_over_time((sum by (model_name) (` +
		`(last_over_time(vllm:prompt_tokens_total{namespace="team-ml"}[1h]) - ` +
		`last_over_time(vllm:prompt_tokens_total{namespace="team-ml"}[1h] offset 30s)) >= 0 ` +
		`or last_over_time(vllm:prompt_tokens_total{namespace="team-ml"}[1h])))[5h59m59s999ms:30s] @ 1795154400.000)`
	assert.Equal(t, want, plan.Queries[0].PromQL)
}

func TestAQueryOverTwoGenerationsOfNamesKeepsTheNewerPerModelAndProcess(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	plan, err := promspend.NewPlan(budget(api.Daily, "UTC", 1, api.Total), at("2026-11-20T06:00:00Z"), src, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, plan.Queries, 3)
	change := func(sel string) string {
		return `(last_over_time(` + sel + `[1h]) - last_over_time(` + sel + `[1h] offset 30s)) >= 0 ` +
			`or last_over_time(` + sel + `[1h])`
	}
	want := `sum_over_time((sum by (model) (` +
		`sum by (model, job, instance) (` + change(`litellm_input_tokens_metric_total{team="ml"}`) + `) or ` +
		`sum by (model, job, instance) (` + change(`litellm_input_tokens_total{team="ml"}`) + `)` +
		`))[5h59m59s999ms:30s] @ 1795154400.000)`
	assert.Equal(t, want, plan.Queries[1].PromQL)
}

func TestAPeriodThatJustStartedHasNoQueryAndZeroSpend(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "t"})
	require.NoError(t, err)
	plan, err := promspend.NewPlan(budget(api.Daily, "UTC", 1, api.Total), at("2026-11-20T00:00:09Z"), src, 15*time.Second)
	require.NoError(t, err)
	assert.Empty(t, plan.Queries)
	data, err := dataOf(plan, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"total": `{"costUSD":"0.00","inputTokens":0,"outputTokens":0}`}, data)
}

func TestPlanRefusesAStepThatDoesNotDivideThePeriodOrAnInvalidBudget(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "t"})
	require.NoError(t, err)
	_, err = promspend.NewPlan(budget(api.Daily, "Asia/Kathmandu", 1, api.Total),
		at("2026-11-20T12:00:00Z"), src, 7*time.Minute)
	assert.ErrorContains(t, err, "is not a multiple of the step 7m0s")
	_, err = promspend.NewPlan(budget(api.Daily, "UTC", 1, api.Total), at("2026-11-20T12:00:00Z"), src, time.Millisecond)
	assert.ErrorContains(t, err, "at least 10ms")
	_, err = promspend.NewPlan(budget(api.Daily, "Mars/Olympus", 1, api.Total),
		at("2026-11-20T12:00:00Z"), src, 15*time.Second)
	assert.ErrorContains(t, err, `spec.period.timeZone: Invalid value: "Mars/Olympus"`)
}

func dur(d time.Duration) string { return prommodel.Duration(d).String() }

func TestTheBudgetsPrometheusStanzaGivesTheSourceTheFlagsWould(t *testing.T) {
	flags, err := promspend.Preset("vllm", promspend.Selection{Namespace: "team-ml",
		PodLabels: []string{"app=chat", "tier=gpu"}, Match: []string{`env="prod"`}})
	require.NoError(t, err)
	stanza, err := promspend.FromSpec(&api.PrometheusSource{Source: api.PresetVLLM, Selector: &api.PrometheusSelector{
		Namespace: "team-ml", PodLabels: map[string]string{"tier": "gpu", "app": "chat"}, Match: []string{`env="prod"`},
	}})
	require.NoError(t, err)
	assert.Equal(t, flags, stanza)

	own, err := promspend.FromSpec(&api.PrometheusSource{Series: &api.PrometheusSeries{Cost: `c_total{team="ml"}`}})
	require.NoError(t, err)
	want := map[promspend.Measure][]string{promspend.Cost: {`c_total{team="ml"}`}}
	assert.Equal(t, promspend.Source{ModelLabel: "model", Series: want}, own)
}

func TestAnnotationsSayWhenTheFiguresAreForAndWhichPeriodATotalCovers(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "t"})
	require.NoError(t, err)
	now := at("2026-11-20T12:00:07Z").Add(300 * time.Millisecond)
	tests := map[string]struct {
		spec api.Spec
		want map[string]string
	}{
		"a Total: the period's start in the budget's zone": {budget(api.Monthly, "Europe/Berlin", 1, api.Total),
			map[string]string{api.AnnotationSpendAsOf: "2026-11-20T12:00:07Z",
				api.AnnotationPeriodStart: "2026-11-01T00:00:00+01:00"}},
		"a weekly Total in New York starts on Monday": {budget(api.Weekly, "America/New_York", 1, api.Total),
			map[string]string{api.AnnotationSpendAsOf: "2026-11-20T12:00:07Z",
				api.AnnotationPeriodStart: "2026-11-16T00:00:00-05:00"}},
		"a DailyLedger: each key names its day, no period-start": {
			budget(api.Monthly, "Europe/Berlin", 1, api.DailyLedger),
			map[string]string{api.AnnotationSpendAsOf: "2026-11-20T12:00:07Z"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan, err := promspend.NewPlan(tc.spec, now, src, 15*time.Second)
			require.NoError(t, err)
			assert.Equal(t, tc.want, plan.Annotations())
		})
	}
}
