package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

// Whatever a client adds to the call, the answer is one the gateways understand: 200, or an error with a body in
// the OpenAI shape; the caller the gateway appended decides it, and a header mode header the client added too is
// refused.
func FuzzHandler(f *testing.F) {
	f.Add("POST", "/v1/chat/completions", "10.1.0.3", "URI=spiffe://cluster.local/ns/team-ml/sa/x", "team-ml")
	f.Add("GET", "/", "", "", "")
	f.Add("PATCH", "/%zz", "1.2.3.4, ", `By="`, "a\x7f")
	h := handler(f, authz.AdmitUnknown, current)
	f.Fuzz(func(t *testing.T, method, path, clientXFF, xfcc, team string) {
		if !validMethod(method) || len(path) == 0 || path[0] != '/' {
			return
		}
		resp := call(h, method, "/check", "192.0.2.9:41000", "X-Forwarded-For", clientXFF,
			"X-Forwarded-For", "10.1.0.2", "X-Forwarded-Client-Cert", xfcc, "X-Team", team, "X-Forwarded-Uri", path)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the gateway's hop is team-ml's chatbot")
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var e gateway.ErrorBody
		require.NoError(t, json.Unmarshal(body, &e))
		assert.Equal(t, "budget_exceeded", e.Error.Code)

		resp = call(h, method, "/check", "203.0.113.5:41000", "X-Forwarded-Client-Cert",
			xfcc+",Hash=abc;URI=spiffe://cluster.local/ns/team-ml/sa/chatbot", "X-Team", team)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the gateway's element is team-ml's chatbot")

		resp = call(h, method, "/check", "198.51.100.7:3000", "X-Team", team, "X-Team", "team-support")
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		assert.Equal(t, "unreadable_identity", e.Error.Code, "a header sent twice is refused")
	})
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}
