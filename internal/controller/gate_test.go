package controller_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

func budget(labels, status string) json.RawMessage {
	return json.RawMessage(`{"apiVersion":"llmbudget.dev/v1alpha1","kind":"LLMCostBudget",` +
		`"metadata":{"name":"chatbot","namespace":"team-ml","labels":` + labels + `},"status":` + status + `}`)
}

func TestABudgetIsLabelledWhileItsStatusSaysItBlocks(t *testing.T) {
	const labelled, blockingStatus = `{"llmbudget.dev/blocking":"true"}`,
		`{"enforcement":{"blocking":true,"scope":"Namespace"}}`
	cases := map[string]struct {
		labels, status string
		blocking       bool
		retry          bool
	}{
		"a blocking budget is labelled":                 {`{}`, blockingStatus, true, true},
		"a labelled blocking budget needs no retry":     {labelled, blockingStatus, true, false},
		"a budget that stopped blocking loses it":       {labelled, `{"enforcement":{"blocking":false}}`, false, true},
		"a new budget without status is not labelled":   {`{}`, `null`, false, false},
		"a status without enforcement is not labelled":  {`{}`, `{"state":"UnderBudget"}`, false, false},
		"a status it cannot read is left to the policy": {`{}`, `{"enforcement":{"blocking":"yes"}}`, true, true},
		"a warn-mode budget that would block too": {
			`{}`, `{"enforcement":{"blocking":true,"scope":"Labelled","mode":"Warn"}}`, true, true,
		},
		"a blocking status of no scope refuses no one, as in the policy": {
			labelled, `{"enforcement":{"blocking":true}}`, false, true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := metacontroller.DecoratorRequest{Object: budget(tc.labels, tc.status)}
			resp, sum, err := controller.Gate{}.Sync(req, time.Now())
			require.NoError(t, err)
			require.Len(t, resp.Labels, 1, "only llmbudget.dev/blocking")
			assert.Empty(t, resp.Annotations)
			assert.Empty(t, resp.Attachments)
			if tc.blocking {
				require.NotNil(t, resp.Labels[controller.LabelBlocking])
				assert.Equal(t, "true", *resp.Labels[controller.LabelBlocking])
				assert.Equal(t, "Blocking", sum.State)
			} else {
				assert.Nil(t, resp.Labels[controller.LabelBlocking], "removed")
				assert.Equal(t, "NotBlocking", sum.State)
			}
			assert.Equal(t, tc.retry, resp.ResyncAfterSeconds > 0, "retry while the label is not yet as answered")
		})
	}
}

func TestCustomizeRelatesNothing(t *testing.T) {
	resp, err := controller.Gate{}.Customize(metacontroller.CustomizeRequest{Parent: budget(`{}`, `null`)})
	require.NoError(t, err)
	assert.Empty(t, resp.RelatedResources)
	_, err = controller.Gate{}.Customize(metacontroller.CustomizeRequest{})
	assert.Error(t, err, "a request without its budget is refused")
}
