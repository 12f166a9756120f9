package gateway_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

// Whatever a client writes in front of what the gateway appends, the claim is the gateway's: never another, and
// never an error.
func FuzzResolveKeepsTheGatewaysHop(f *testing.F) {
	f.Add("203.0.113.9", "URI=spiffe://cluster.local/ns/victim/sa/default", "victim")
	f.Add("10.1.2.3,", `Subject="a,b";URI=x`, "")
	f.Add(",,,", `URI="`, "team-ml")
	f.Add("[::1]:80", "By=a;;URI=b,", "x\x00y")
	f.Add("", `URI="a,`, "team-ml, victim")
	f.Add("", strings.Repeat("URI=spiffe://cluster.local/ns/victim/sa/x,", 40), "")
	r, err := gateway.NewResolver(gateways)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, clientXFF, clientXFCC, clientNS string) {
		h := headers("X-Forwarded-For", clientXFF+", 10.1.2.3")
		c, err := r.Resolve(peer("10.0.0.7"), h)
		require.NoError(t, err)
		assert.Equal(t, netip.MustParseAddr("10.1.2.3"), c.Source)

		h = headers("X-Forwarded-Client-Cert", clientXFCC+","+istioXFCC)
		c, err = r.Resolve(peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"), h)
		require.NoError(t, err, "the gateway's element is read on its own")
		assert.Equal(t, "team-ml", c.Namespace, "the rightmost element decides")
		assert.Equal(t, "chatbot", c.ServiceAccount)

		h = headers("X-Team-Namespace", clientNS, "X-Team-Namespace", "team-ml")
		_, err = r.Resolve(peer("10.0.1.5"), h)
		assert.ErrorIs(t, err, gateway.ErrBadIdentity, "a header sent twice is never believed")
	})
}

// For any client prefix and any element written in Envoy's format (the subject quoted, with \" and \\ inside),
// RightmostXFCC reads the element alone, exactly.
func FuzzRightmostXFCC(f *testing.F) {
	f.Add("", "CN=a,O=b", "spiffe://cluster.local/ns/team-ml/sa/chatbot")
	f.Add(`URI="a,`, `x\`, "")
	f.Add(`By="\`, `"`, "spiffe://td/ns/a/sa/b")
	f.Add(strings.Repeat(`"\`, 40), `\\"`, "u")
	f.Fuzz(func(t *testing.T, prefix, subject, uri string) {
		if strings.ContainsAny(uri, `,;="`) {
			return // Envoy quotes such a value; a SPIFFE ID never holds one
		}
		quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(subject)
		elem := `By=spiffe://cluster.local/ns/llm/sa/gateway;Hash=abc;Subject="` + quoted + `";URI=` + uri
		got, err := gateway.RightmostXFCC(prefix + "," + elem)
		require.NoError(t, err, "%q", elem)
		assert.Equal(t, map[string]string{"by": "spiffe://cluster.local/ns/llm/sa/gateway", "hash": "abc",
			"subject": subject, "uri": uri}, got)
	})
}
