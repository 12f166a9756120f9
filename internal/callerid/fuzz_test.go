package callerid_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/callerid"
)

// Whatever a client writes in front of what the gateway appends, the claim is the gateway's.
func FuzzResolveKeepsTheGatewaysHop(f *testing.F) {
	f.Add("203.0.113.9", "URI=spiffe://cluster.local/ns/victim/sa/default", "victim")
	f.Add("10.1.2.3,", `Subject="a,b";URI=x`, "")
	f.Add(",,,", `URI="`, "team-ml")
	f.Add("[::1]:80", "By=a;;URI=b,", "x\x00y")
	r, err := callerid.New(gateways)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, clientXFF, clientXFCC, clientNS string) {
		h := headers("X-Forwarded-For", clientXFF+", 10.1.2.3")
		c, err := r.Resolve(peer("10.0.0.7"), h)
		require.NoError(t, err)
		assert.Equal(t, netip.MustParseAddr("10.1.2.3"), c.Source)

		h = headers("X-Forwarded-Client-Cert", clientXFCC+","+istioXFCC)
		c, err = r.Resolve(peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"), h)
		if strings.Count(clientXFCC, `"`)%2 == 0 && err == nil {
			assert.Equal(t, "team-ml", c.Namespace, "the rightmost element decides")
		}

		h = headers("X-Team-Namespace", clientNS, "X-Team-Namespace", "team-ml")
		_, err = r.Resolve(peer("10.0.1.5"), h)
		assert.ErrorIs(t, err, callerid.ErrNoIdentity, "a header sent twice is never believed")
	})
}

// SplitXFCC never panics, and what it accepts it splits into at most maxXFCCElements elements.
func FuzzSplitXFCC(f *testing.F) {
	f.Add(istioXFCC)
	f.Add(`By=a;Subject="x\"y,z";URI=b,Hash=c`)
	f.Add(`URI="\`)
	f.Fuzz(func(t *testing.T, v string) {
		elems, err := callerid.SplitXFCC(v)
		if err != nil {
			return
		}
		assert.NotEmpty(t, elems)
		assert.LessOrEqual(t, len(elems), 32)
	})
}
