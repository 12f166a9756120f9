package controller

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// recordsParent is a budget of the TaskRecords labelled team=ml, in a November of UTC days.
const recordsParent = `{"metadata": {"name": "agents", "namespace": "team-ml", "uid": "u-2"},
	"spec": {"limitUSD": "50", "costSource": {"format": "TaskRecords", "selector": {"matchLabels": {"team": "ml"}}}}}`

// record is a TaskRecord completed at the time given, costing cost; labels and namespace as given.
func record(ns, name, labels, completed, cost string) metacontroller.Raw {
	return metacontroller.Raw(`{"metadata": {"name": "` + name + `", "namespace": "` + ns + `", "labels": ` + labels +
		`}, "spec": {"model": "opus", "phase": "Succeeded", "completionTime": "` + completed +
		`", "usage": {"costUSD": "` + cost + `", "inputTokens": 10}}}`)
}

func TestCustomizeRelatesTheSelectedRecordsOfTheBudgetsNamespace(t *testing.T) {
	resp, err := Budget{}.Customize(metacontroller.CustomizeRequest{Parent: json.RawMessage(recordsParent)})
	require.NoError(t, err)
	require.Len(t, resp.RelatedResources, 1)
	rule := resp.RelatedResources[0]
	assert.Equal(t, "kelos.dev/v1alpha2", rule.APIVersion)
	assert.Equal(t, "taskrecords", rule.Resource)
	assert.Equal(t, "team-ml", rule.Namespace)
	assert.Equal(t, map[string]string{"team": "ml"}, rule.LabelSelector.MatchLabels)
}

func TestSpendIsSummedFromTheRecordsOfThePeriod(t *testing.T) {
	ml := `{"team": "ml"}`
	cases := map[string]struct {
		records map[string]metacontroller.Raw
		reason  string // empty: read
		message string
		spent   string
	}{
		"no records is no spend": {
			message: "spend summed from 0 of the TaskRecords labelled team=ml, those completed in the period",
			spent:   "0.00",
		},
		"records of the period, of another period, of another team and of another namespace": {
			records: map[string]metacontroller.Raw{
				"team-ml/a":   record("team-ml", "a", ml, "2026-11-20T10:00:00Z", "1.25"),
				"team-ml/b":   record("team-ml", "b", ml, "2026-11-01T00:00:00Z", "2500m"),
				"team-ml/old": record("team-ml", "old", ml, "2026-10-31T23:59:59Z", "100"),
				"team-ml/web": record("team-ml", "web", `{"team": "web"}`, "2026-11-20T10:00:00Z", "100"),
				"team-web/c":  record("team-web", "c", ml, "2026-11-20T10:00:00Z", "100"),
				"team-ml/none": metacontroller.Raw(`{"metadata": {"name": "none", "namespace": "team-ml", "labels": ` +
					ml + `}, "spec": {"completionTime": "2026-11-20T10:00:00Z"}}`),
			},
			message: "spend summed from 2 of the TaskRecords labelled team=ml, those completed in the period; " +
				"1 completed outside it; 1 without spec.usage count nothing, as in Kelos",
			spent: "3.75",
		},
		"a record whose cost does not parse makes the spend unknown, naming it": {
			records: map[string]metacontroller.Raw{
				"team-ml/a":   record("team-ml", "a", ml, "2026-11-20T10:00:00Z", "1.25"),
				"team-ml/bad": record("team-ml", "bad", ml, "2026-10-01T10:00:00Z", "1.5 USD"),
			},
			reason: api.ReasonInvalidCostData,
			message: `TaskRecord team-ml/bad: spec.usage.costUSD: "1.5 USD" is not a Kubernetes quantity like 50, ` +
				`12.5 or 12500m: quantities must match the regular expression ` +
				`'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		},
		"a broken record of another team is none of the budget's business": {
			records: map[string]metacontroller.Raw{
				"team-ml/bad": record("team-ml", "bad", `{"team": "web"}`, "2026-11-20T10:00:00Z", "x"),
			},
			message: "spend summed from 0 of the TaskRecords labelled team=ml, those completed in the period",
			spent:   "0.00",
		},
		"a record whose metadata does not decode is named by its key": {
			records: map[string]metacontroller.Raw{"team-ml/odd": metacontroller.Raw(`{"metadata": {"labels": {"team": 1}}}`)},
			reason:  api.ReasonInvalidCostData,
			message: `TaskRecord team-ml/odd: metadata.labels: Invalid value: "number": must be of type string`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := DecodeParent(json.RawMessage(recordsParent))
			require.NoError(t, err)
			in := budgetKind.Input(p, metacontroller.ObjectMap{source.TaskRecordGroup: tc.records}, now)
			require.NoError(t, in.Invalid)
			assert.Equal(t, tc.reason, in.Spend.Reason)
			assert.Equal(t, tc.message, in.Spend.Message)
			if tc.reason == "" {
				assert.Equal(t, tc.spent, in.Spend.Usage.CostUSD.String())
			}
		})
	}
}
