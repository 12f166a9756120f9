package spendwriter_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// sampling is a LiteLLM whose latest sample was taken at at, and whose counters grow by cost in every window.
func sampling(cost float64, at time.Time) prometheus {
	sample := model.Vector{{Value: model.SampleValue(float64(at.UnixMilli()) / 1000)}}
	return prometheus{{"max(timestamp(", sample},
		{"litellm_spend_metric_total", models("model", map[string]float64{"gpt-4o": cost})},
		litellm[1], litellm[2]}
}

func TestTheWriterWritesTheBurnRateBesideTheFiguresItWasMeasuredWith(t *testing.T) {
	sampled := now.Add(-3 * time.Second).Truncate(time.Millisecond)
	r := newRun(t, sampling(2, sampled), []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1",
		litellmTotal)})
	r.w.RateWindow = time.Minute
	_, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	cm := r.configMap(t, "team-a", "llm-spend")
	var br api.BurnRate
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[api.AnnotationBurnRate]), &br))
	assert.Equal(t, cm.Annotations[api.AnnotationSpendAsOf], br.AsOf, "the rate names the figures it goes with")
	assert.Equal(t, sampled.UTC().Format(time.RFC3339Nano), br.SampledAt)
	assert.Equal(t, "1m0s", br.Window)
	assert.Equal(t, "120.00", br.USDPerHour, "2 USD in a minute")
}

func TestTheWriterWritesNoBurnRateWhileNothingBurns(t *testing.T) {
	r := newRun(t, sampling(0, now.Add(-3*time.Second)), []*unstructured.Unstructured{budget(t, "team-a",
		"chatbot", "uid-1", litellmTotal)})
	r.w.RateWindow = time.Minute
	_, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.NotContains(t, r.configMap(t, "team-a", "llm-spend").Annotations, api.AnnotationBurnRate,
		"its sample time moves with every scrape: a zero rate would rewrite the ConfigMap every run")
}

// noTimestamps is a Prometheus that refuses the query of the latest sample's time.
type noTimestamps struct{ prometheus }

func (p noTimestamps) Query(ctx context.Context, promql string, at time.Time) (model.Vector, []string, error) {
	if strings.Contains(promql, "timestamp(") {
		return nil, nil, errors.New("bad_data: parse error")
	}
	return p.prometheus.Query(ctx, promql, at)
}

func TestAFigureIsWrittenWhenItsBurnRateCannotBe(t *testing.T) {
	r := newRun(t, noTimestamps{sampling(2, now)}, []*unstructured.Unstructured{budget(t, "team-a", "chatbot",
		"uid-1", litellmTotal)})
	r.w.RateWindow = time.Minute
	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written)
	assert.NotContains(t, r.configMap(t, "team-a", "llm-spend").Annotations, api.AnnotationBurnRate)
	assert.Contains(t, r.line(t, "burn rate not written")["reason"], "bad_data: parse error")
}
