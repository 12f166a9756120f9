package parent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCleanupKeepsAnObjectStatusOnly(t *testing.T) {
	cases := map[string]struct {
		status string
		kept   bool
	}{
		"an object is kept": {`{"state": "OverBudget"}`, true},
		"null is dropped":   {`null`, false},
		"a list is dropped": {`[1]`, false},
		"nothing is kept":   {``, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := cleanup(json.RawMessage(tc.status))
			assert.Equal(t, tc.kept, resp.Status != nil)
			assert.Equal(t, []any{}, resp.Children)
		})
	}
}
