package promspend

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// Measure is one of the counters a source has.
type Measure string

// The measures, in the order their queries run.
const (
	Cost   Measure = "cost"
	Input  Measure = "input"
	Output Measure = "output"
)

// Source is, per measure, the series selectors of its counter (no Cost is priced from tokens) and the label naming
// the model. A measure with several selectors is one counter under the names of several exporter releases, the
// newest first: for each model, process (labels job and instance) and evaluation step, the first name that has
// series is counted and the others are not, so an exporter emitting both generations is counted once, and one
// upgraded in the period is counted under its old name before and its new name after.
type Source struct {
	Series     map[Measure][]string
	ModelLabel string
}

// Selection picks the budget's series: each set field adds a label matcher, Match raw ones such as `env="prod"`.
type Selection struct {
	Team, Key, Namespace, Service string
	PodLabels                     []string // "label=value"
	Match                         []string
}

// Preset returns the source of a known exporter: litellm, vllm or otel-genai. Metric and label names are the
// exporters' own, as Prometheus stores them, each generation of names there has been:
//   - litellm: the proxy's Prometheus callback. Spend is litellm_spend_metric_total in every release; the token
//     counters are litellm_input_tokens_metric_total and litellm_output_tokens_metric_total since LiteLLM appended
//     _metric to their names (BerriAI/litellm#13271), litellm_input_tokens_total and litellm_output_tokens_total
//     before.
//   - vllm: vLLM's /metrics, one generation.
//   - otel-genai: the OpenTelemetry GenAI counters gen_ai.client.inference.usage.input_tokens and .output_tokens,
//     which replaced the histogram gen_ai.client.token.usage (its sum by gen_ai.token.type, read where they are not).
//     Prometheus' OTLP translation (the default UnderscoreEscapingWithSuffixes) turns dots into underscores, drops
//     the {token} unit (an annotation in braces) and appends _total to a monotonic sum:
//     gen_ai_client_inference_usage_input_tokens_total; the histogram's sum is gen_ai_client_token_usage_sum.
func Preset(name string, sel Selection) (Source, error) {
	var m []string
	add := func(label, value string) {
		if value != "" {
			m = append(m, label+"="+strconv.Quote(value))
		}
	}
	for _, pl := range sel.PodLabels {
		k, v, ok := strings.Cut(pl, "=")
		if !ok || !model.UTF8Validation.IsValidLabelName(k) {
			return Source{}, fmt.Errorf("--pod-label %q: want label=value with a Prometheus label name", pl)
		}
		add(k, v)
	}
	add("namespace", sel.Namespace)
	add("team", sel.Team)
	add("hashed_api_key", sel.Key)
	add("job", sel.Service)
	m = append(m, sel.Match...)
	series := func(metric string, extra ...string) string {
		return metric + "{" + strings.Join(append(extra, m...), ",") + "}"
	}
	switch name {
	case "litellm":
		return Source{ModelLabel: "model", Series: map[Measure][]string{
			Cost:   {series("litellm_spend_metric_total")},
			Input:  {series("litellm_input_tokens_metric_total"), series("litellm_input_tokens_total")},
			Output: {series("litellm_output_tokens_metric_total"), series("litellm_output_tokens_total")},
		}}, nil
	case "vllm":
		return Source{ModelLabel: "model_name", Series: map[Measure][]string{
			Input:  {series("vllm:prompt_tokens_total")},
			Output: {series("vllm:generation_tokens_total")},
		}}, nil
	case "otel-genai":
		return Source{ModelLabel: "gen_ai_request_model", Series: map[Measure][]string{
			Input: {series("gen_ai_client_inference_usage_input_tokens_total"),
				series("gen_ai_client_token_usage_sum", `gen_ai_token_type="input"`)},
			Output: {series("gen_ai_client_inference_usage_output_tokens_total"),
				series("gen_ai_client_token_usage_sum", `gen_ai_token_type="output"`)},
		}}, nil
	}
	return Source{}, fmt.Errorf("source %q is not one of litellm, vllm, otel-genai", name)
}

// TokensOnly reports whether the source has no cost counter, so that its tokens are priced from a table.
func (s Source) TokensOnly() bool { return len(s.Series[Cost]) == 0 }

// FromSpec returns the source a budget's spec.costSource.prometheus declares: its preset narrowed by its
// selector, or its own series. The stanza is assumed valid (api.Spec.Validate).
func FromSpec(p *api.PrometheusSource) (Source, error) {
	if p.Series != nil {
		src := Source{ModelLabel: cmp.Or(p.Series.ModelLabel, "model"), Series: map[Measure][]string{}}
		for m, sel := range map[Measure]string{Cost: p.Series.Cost, Input: p.Series.Input, Output: p.Series.Output} {
			if sel != "" {
				src.Series[m] = []string{sel}
			}
		}
		return src, nil
	}
	var sel Selection
	if s := p.Selector; s != nil {
		sel = Selection{Team: s.Team, Key: s.Key, Namespace: s.Namespace, Service: s.Service, Match: s.Match}
		for _, k := range slices.Sorted(maps.Keys(s.PodLabels)) {
			sel.PodLabels = append(sel.PodLabels, k+"="+s.PodLabels[k])
		}
	}
	return Preset(string(p.Source), sel)
}
