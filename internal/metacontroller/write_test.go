package metacontroller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestALongAnswerIsWrittenAsTheEncoderWouldWriteIt(t *testing.T) {
	kids := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"kind": "ResourceQuota", "metadata": map[string]string{"name": fmt.Sprint("q<&>", i)}}
		}
		return out
	}
	cases := map[string]CompositeResponse{
		"with a resync and the finalized flag": {
			Status: map[string]any{"message": "a <b> & c"}, Children: kids(streamedChildren + 1),
			Tail: Tail{ResyncAfterSeconds: 900, Finalized: true},
		},
		"with no tail": {Status: nil, Children: kids(streamedChildren * 3)},
		"short, encoded whole": {Status: map[string]string{"state": "OK"}, Children: kids(2),
			Tail: Tail{ResyncAfterSeconds: 1.5}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(r))
			w := httptest.NewRecorder()
			assert.Equal(t, http.StatusOK, writeJSON(w, r))
			assert.Equal(t, want.String(), w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
		})
	}
}
