package callerid_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/callerid"
)

var gateways = []callerid.Gateway{
	{Name: "caddy", Addresses: []string{"10.0.0.0/24"}, Mode: callerid.ModeSource},
	{Name: "istio", Identities: []string{"spiffe://cluster.local/ns/istio-system/sa/ingress"},
		Mode: callerid.ModeSPIFFE},
	{Name: "litellm", Addresses: []string{"10.0.1.5/32", "fd00::/64"}, Mode: callerid.ModeHeader,
		Header: "x-team-namespace"},
}

func resolver(t *testing.T) *callerid.Resolver {
	t.Helper()
	r, err := callerid.New(gateways)
	require.NoError(t, err)
	return r
}

func peer(addr string, uris ...string) callerid.Peer {
	return callerid.Peer{Addr: netip.MustParseAddr(addr), URIs: uris}
}

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

const istioXFCC = `By=spiffe://cluster.local/ns/llm/sa/gateway;Hash=abc;Subject="";` +
	`URI=spiffe://cluster.local/ns/team-ml/sa/chatbot`

func TestResolveReadsTheCallerTheWayItsGatewayIsConfigured(t *testing.T) {
	tests := map[string]struct {
		peer    callerid.Peer
		headers http.Header
		want    callerid.Claim
	}{
		"source mode reads the rightmost X-Forwarded-For hop": {
			peer:    peer("10.0.0.7"),
			headers: headers("X-Forwarded-For", "203.0.113.9, 10.1.2.3"),
			want:    callerid.Claim{Gateway: "caddy", Mode: callerid.ModeSource, Source: netip.MustParseAddr("10.1.2.3")},
		},
		"source mode reads the last line of a repeated X-Forwarded-For": {
			peer:    peer("10.0.0.7"),
			headers: headers("X-Forwarded-For", "10.9.9.9", "X-Forwarded-For", "198.51.100.1,10.1.2.4"),
			want:    callerid.Claim{Gateway: "caddy", Mode: callerid.ModeSource, Source: netip.MustParseAddr("10.1.2.4")},
		},
		"source mode drops a port and unmaps an IPv4-mapped address": {
			peer:    peer("::ffff:10.0.0.7"),
			headers: headers("X-Forwarded-For", "[::ffff:10.1.2.5]:4312"),
			want:    callerid.Claim{Gateway: "caddy", Mode: callerid.ModeSource, Source: netip.MustParseAddr("10.1.2.5")},
		},
		"spiffe mode reads the URI of the rightmost element": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert",
				`URI=spiffe://cluster.local/ns/victim/sa/default,`+istioXFCC),
			want: callerid.Claim{Gateway: "istio", Mode: callerid.ModeSPIFFE, Namespace: "team-ml",
				ServiceAccount: "chatbot"},
		},
		"header mode reads the configured header": {
			peer:    peer("10.0.1.5"),
			headers: headers("X-Team-Namespace", "team-ml"),
			want:    callerid.Claim{Gateway: "litellm", Mode: callerid.ModeHeader, Namespace: "team-ml"},
		},
		"header mode gateways may be IPv6": {
			peer:    peer("fd00::12"),
			headers: headers("X-Team-Namespace", " team-ml "),
			want:    callerid.Claim{Gateway: "litellm", Mode: callerid.ModeHeader, Namespace: "team-ml"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := resolver(t).Resolve(tt.peer, tt.headers)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestResolveBelievesNothingAClientCouldHaveWritten(t *testing.T) {
	tests := map[string]struct {
		peer    callerid.Peer
		headers http.Header
		want    error
		says    string
	}{
		"a peer outside every gateway's addresses": {
			peer: peer("10.0.2.1"), headers: headers("X-Forwarded-For", "10.1.2.3"),
			want: callerid.ErrUntrusted, says: "10.0.2.1",
		},
		"a peer without the gateway's certificate": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/team-ml/sa/chatbot"), headers: headers(
				"X-Forwarded-Client-Cert", istioXFCC),
			want: callerid.ErrUntrusted, says: "192.0.2.1",
		},
		"a header mode header sent twice, the client's and the gateway's": {
			peer: peer("10.0.1.5"), headers: headers("X-Team-Namespace", "victim", "X-Team-Namespace", "team-ml"),
			want: callerid.ErrNoIdentity, says: "sent 2 times",
		},
		"a header mode value that is no namespace name": {
			peer: peer("10.0.1.5"), headers: headers("X-Team-Namespace", "team/ml"),
			want: callerid.ErrNoIdentity, says: "no namespace name",
		},
		"no X-Forwarded-For from a source mode gateway": {
			peer: peer("10.0.0.7"), headers: headers(), want: callerid.ErrNoIdentity, says: "X-Forwarded-For: missing",
		},
		"a rightmost hop that is no address": {
			peer: peer("10.0.0.7"), headers: headers("X-Forwarded-For", "10.1.2.3, unknown"),
			want: callerid.ErrNoIdentity, says: `"unknown" is no IP address`,
		},
		"an x-forwarded-client-cert of another trust domain": {
			peer:    peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert", "URI=spiffe://evil.example/ns/team-ml/sa/chatbot"),
			want:    callerid.ErrNoIdentity, says: "no SPIFFE ID of trust domain cluster.local",
		},
		"a rightmost element without URI, after the client's": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert",
				"URI=spiffe://cluster.local/ns/victim/sa/default,Hash=abc"),
			want: callerid.ErrNoIdentity, says: "the rightmost element has no URI",
		},
		"a SPIFFE ID that is no workload's": {
			peer:    peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert", "URI=spiffe://cluster.local/ns/team-ml/sa/a/b"),
			want:    callerid.ErrNoIdentity, says: "want spiffe://cluster.local/ns/<namespace>/sa/<service account>",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := resolver(t).Resolve(tt.peer, tt.headers)
			require.ErrorIs(t, err, tt.want)
			assert.ErrorContains(t, err, tt.says)
		})
	}
}

func TestNewRefusesAGatewayThatWouldTrustTooMuchOrCannotWork(t *testing.T) {
	tests := map[string]struct {
		gateways []callerid.Gateway
		says     string
	}{
		"none":          {nil, "at least one gateway"},
		"no name":       {[]callerid.Gateway{{Addresses: []string{"10.0.0.0/8"}, Mode: "source"}}, "gateways[0]: name"},
		"no peer bound": {[]callerid.Gateway{{Name: "g", Mode: "source"}}, "every peer would be trusted"},
		"a bad CIDR":    {[]callerid.Gateway{{Name: "g", Addresses: []string{"10.0.0.1"}, Mode: "source"}}, "no CIDR"},
		"an unknown mode": {[]callerid.Gateway{{Name: "g", Addresses: []string{"10.0.0.0/8"}, Mode: "jwt"}},
			`"jwt" is none of`},
		"header mode without header": {[]callerid.Gateway{{Name: "g", Addresses: []string{"10.0.0.0/8"},
			Mode: "header"}}, "header: required"},
		"header mode reading X-Forwarded-For": {[]callerid.Gateway{{Name: "g", Addresses: []string{"10.0.0.0/8"},
			Mode: "header", Header: "x-forwarded-for"}}, "read by modes source and spiffe"},
		"a name given twice": {[]callerid.Gateway{
			{Name: "g", Addresses: []string{"10.0.0.0/8"}, Mode: "source"},
			{Name: "g", Addresses: []string{"10.1.0.0/16"}, Mode: "source"},
		}, `gateways[1].name: "g" is given twice`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := callerid.New(tt.gateways)
			assert.ErrorContains(t, err, tt.says)
		})
	}
}

func TestSplitXFCCReadsEnvoysQuoting(t *testing.T) {
	got, err := callerid.SplitXFCC(`By=spiffe://td/ns/a/sa/b;Subject="CN=x,O=\"y\"";URI=spiffe://td/ns/c/sa/d,` +
		`Hash=1;URI=spiffe://td/ns/e/sa/f`)
	require.NoError(t, err)
	assert.Equal(t, []map[string]string{
		{"by": "spiffe://td/ns/a/sa/b", "subject": `CN=x,O="y"`, "uri": "spiffe://td/ns/c/sa/d"},
		{"hash": "1", "uri": "spiffe://td/ns/e/sa/f"},
	}, got)
	for _, bad := range []string{"", "URI", `URI="open`, `URI="a"b`, "URI=a,", `URI=a"b`} {
		_, err := callerid.SplitXFCC(bad)
		assert.Error(t, err, "%q", bad)
	}
}
