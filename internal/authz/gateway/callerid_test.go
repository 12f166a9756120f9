package gateway_test

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

var gateways = []gateway.Gateway{
	{Name: "caddy", Addresses: []string{"10.0.0.0/24"}, Mode: gateway.ModeSource},
	{Name: "istio", Identities: []string{"spiffe://cluster.local/ns/istio-system/sa/ingress"},
		Mode: gateway.ModeSPIFFE},
	{Name: "litellm", Addresses: []string{"10.0.1.5/32", "fd00::/64"}, Mode: gateway.ModeHeader,
		Header: "x-team-namespace"},
}

func resolver(t *testing.T) *gateway.Resolver {
	t.Helper()
	r, err := gateway.NewResolver(gateways)
	require.NoError(t, err)
	return r
}

func peer(addr string, uris ...string) gateway.Peer {
	return gateway.Peer{Addr: netip.MustParseAddr(addr), URIs: uris}
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
		peer    gateway.Peer
		headers http.Header
		want    gateway.Claim
	}{
		"source mode reads the rightmost X-Forwarded-For hop": {
			peer:    peer("10.0.0.7"),
			headers: headers("X-Forwarded-For", "203.0.113.9, 10.1.2.3"),
			want:    gateway.Claim{Gateway: "caddy", Mode: gateway.ModeSource, Source: netip.MustParseAddr("10.1.2.3")},
		},
		"source mode reads the last line of a repeated X-Forwarded-For": {
			peer:    peer("10.0.0.7"),
			headers: headers("X-Forwarded-For", "10.9.9.9", "X-Forwarded-For", "198.51.100.1,10.1.2.4"),
			want:    gateway.Claim{Gateway: "caddy", Mode: gateway.ModeSource, Source: netip.MustParseAddr("10.1.2.4")},
		},
		"source mode drops a port and unmaps an IPv4-mapped address": {
			peer:    peer("::ffff:10.0.0.7"),
			headers: headers("X-Forwarded-For", "[::ffff:10.1.2.5]:4312"),
			want:    gateway.Claim{Gateway: "caddy", Mode: gateway.ModeSource, Source: netip.MustParseAddr("10.1.2.5")},
		},
		"spiffe mode reads the URI of the rightmost element": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert",
				`URI=spiffe://cluster.local/ns/victim/sa/default,`+istioXFCC),
			want: gateway.Claim{Gateway: "istio", Mode: gateway.ModeSPIFFE, Namespace: "team-ml",
				ServiceAccount: "chatbot"},
		},
		"spiffe mode reads the gateway's element after any client prefix that does not parse": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert",
				`URI="spiffe://cluster.local/ns/victim/sa/default,`+istioXFCC),
			want: gateway.Claim{Gateway: "istio", Mode: gateway.ModeSPIFFE, Namespace: "team-ml",
				ServiceAccount: "chatbot"},
		},
		"spiffe mode reads the last x-forwarded-client-cert line": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert", "URI=spiffe://cluster.local/ns/victim/sa/default",
				"X-Forwarded-Client-Cert", `Subject="`, "X-Forwarded-Client-Cert", "bare,"+istioXFCC),
			want: gateway.Claim{Gateway: "istio", Mode: gateway.ModeSPIFFE, Namespace: "team-ml",
				ServiceAccount: "chatbot"},
		},
		"header mode reads the configured header": {
			peer:    peer("10.0.1.5"),
			headers: headers("X-Team-Namespace", "team-ml"),
			want:    gateway.Claim{Gateway: "litellm", Mode: gateway.ModeHeader, Namespace: "team-ml"},
		},
		"header mode gateways may be IPv6": {
			peer:    peer("fd00::12"),
			headers: headers("X-Team-Namespace", " team-ml "),
			want:    gateway.Claim{Gateway: "litellm", Mode: gateway.ModeHeader, Namespace: "team-ml"},
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
		peer    gateway.Peer
		headers http.Header
		want    error
		says    string
	}{
		"a peer outside every gateway's addresses": {
			peer: peer("10.0.2.1"), headers: headers("X-Forwarded-For", "10.1.2.3"),
			want: gateway.ErrUntrusted, says: "10.0.2.1",
		},
		"a peer without the gateway's certificate": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/team-ml/sa/chatbot"), headers: headers(
				"X-Forwarded-Client-Cert", istioXFCC),
			want: gateway.ErrUntrusted, says: "192.0.2.1",
		},
		"a header mode header sent twice, the client's and the gateway's": {
			peer: peer("10.0.1.5"), headers: headers("X-Team-Namespace", "victim", "X-Team-Namespace", "team-ml"),
			want: gateway.ErrBadIdentity, says: "sent 2 times",
		},
		"a header mode header sent in two spellings": {
			peer: peer("10.0.1.5"), headers: http.Header{"x-team-namespace": {"victim"}, "X-Team-Namespace": {"team-ml"}},
			want: gateway.ErrBadIdentity, says: "sent 2 times",
		},
		"a header mode header sent only in another spelling than Go's": {
			peer: peer("10.0.1.5"), headers: http.Header{"x-team-namespace": {"victim"}, "X-TEAM-NAMESPACE": {"team-ml"}},
			want: gateway.ErrBadIdentity, says: "sent 2 times",
		},
		"a header mode value with a comma": {
			peer: peer("10.0.1.5"), headers: headers("X-Team-Namespace", "victim, team-ml"),
			want: gateway.ErrBadIdentity, says: "no namespace name",
		},
		"an empty header mode header": {
			peer: peer("10.0.1.5"), headers: headers("X-Team-Namespace", " "),
			want: gateway.ErrBadIdentity, says: "X-Team-Namespace: empty",
		},
		"a header mode value that is no namespace name": {
			peer: peer("10.0.1.5"), headers: headers("X-Team-Namespace", "team/ml"),
			want: gateway.ErrBadIdentity, says: "no namespace name",
		},
		"no header mode header: the gateway names no caller": {
			peer: peer("10.0.1.5"), headers: headers("X-Team", "team-ml"),
			want: gateway.ErrNoIdentity, says: "X-Team-Namespace: missing",
		},
		"no X-Forwarded-For from a source mode gateway": {
			peer: peer("10.0.0.7"), headers: headers(), want: gateway.ErrNoIdentity, says: "X-Forwarded-For: missing",
		},
		"a rightmost hop that is no address": {
			peer: peer("10.0.0.7"), headers: headers("X-Forwarded-For", "10.1.2.3, unknown"),
			want: gateway.ErrBadIdentity, says: `"unknown" is no IP address`,
		},
		"no x-forwarded-client-cert from a spiffe mode gateway": {
			peer:    peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers(), want: gateway.ErrNoIdentity, says: "X-Forwarded-Client-Cert: missing",
		},
		"an x-forwarded-client-cert of another trust domain": {
			peer:    peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert", "URI=spiffe://evil.example/ns/team-ml/sa/chatbot"),
			want:    gateway.ErrBadIdentity, says: "no SPIFFE ID of trust domain cluster.local",
		},
		"a rightmost element without URI, after the client's": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert",
				"URI=spiffe://cluster.local/ns/victim/sa/default,Hash=abc"),
			want: gateway.ErrBadIdentity, says: "the rightmost element has no URI",
		},
		"a rightmost element with two URIs": {
			peer: peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert",
				"URI=spiffe://cluster.local/ns/victim/sa/default;URI=spiffe://cluster.local/ns/team-ml/sa/x"),
			want: gateway.ErrBadIdentity, says: "has 2 URIs, want one",
		},
		"a rightmost element that does not parse": {
			peer:    peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert", istioXFCC+`;Subject="a`),
			want:    gateway.ErrBadIdentity, says: "a quote inside an unquoted value",
		},
		"an empty x-forwarded-client-cert": {
			peer:    peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert", ""),
			want:    gateway.ErrBadIdentity, says: "X-Forwarded-Client-Cert: empty",
		},
		"a SPIFFE ID that is no workload's": {
			peer:    peer("192.0.2.1", "spiffe://cluster.local/ns/istio-system/sa/ingress"),
			headers: headers("X-Forwarded-Client-Cert", "URI=spiffe://cluster.local/ns/team-ml/sa/a/b"),
			want:    gateway.ErrBadIdentity, says: "want spiffe://cluster.local/ns/<namespace>/sa/<service account>",
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
	source := func(addresses ...string) []gateway.Gateway {
		return []gateway.Gateway{{Name: "g", Addresses: addresses, Mode: "source"}}
	}
	tests := map[string]struct {
		gateways []gateway.Gateway
		says     string
	}{
		"none": {nil, "gateways: Required value: at least one gateway"},
		"no name": {[]gateway.Gateway{{Addresses: []string{"10.0.0.0/8"}, Mode: "source"}},
			"gateways[0].name: Required value"},
		"no peer bound": {[]gateway.Gateway{{Name: "g", Mode: "source"}},
			"gateways[0].addresses: Required value: give addresses or identities, or every peer would be trusted"},
		"a bad CIDR": {source("10.0.0.0/8", "10.0.0.1"),
			`gateways[0].addresses[1]: Invalid value: "10.0.0.1": must be a CIDR`},
		"every IPv4 peer": {source("10.0.0.0/8", "0.0.0.0/0"),
			`gateways[0].addresses[1]: Invalid value: "0.0.0.0/0": trusts every peer`},
		"every IPv6 peer": {source("::/0"), `gateways[0].addresses[0]: Invalid value: "::/0": trusts every peer`},
		"an IPv4-mapped prefix, which never matches": {source("::ffff:10.0.0.0/104"),
			`gateways[0].addresses[0]: Invalid value: "::ffff:10.0.0.0/104": an IPv4-mapped prefix never matches, ` +
				`as IPv4 peers are matched as IPv4: write 10.0.0.0/8`},
		"a short IPv4-mapped prefix": {source("::ffff:0:0/95"), `"::ffff:0:0/95": an IPv4-mapped prefix never`},
		"an unknown mode": {[]gateway.Gateway{{Name: "g", Addresses: []string{"10.0.0.0/8"}, Mode: "jwt"}},
			`gateways[0].mode: Unsupported value: "jwt": supported values: "source", "spiffe", "header"`},
		"header mode without header": {[]gateway.Gateway{{Name: "g", Addresses: []string{"10.0.0.0/8"},
			Mode: "header"}}, "gateways[0].header: Required value: in mode header"},
		"header mode reading X-Forwarded-For": {[]gateway.Gateway{{Name: "g", Addresses: []string{"10.0.0.0/8"},
			Mode: "header", Header: "x-forwarded-for"}}, "read by modes source and spiffe"},
		"header mode with an invalid header name": {[]gateway.Gateway{{Name: "g", Addresses: []string{"10.0.0.0/8"},
			Mode: "header", Header: "x_team"}}, `gateways[0].header: Invalid value: "x_team": a valid HTTP header`},
		"a name given twice": {[]gateway.Gateway{
			{Name: "g", Addresses: []string{"10.0.0.0/8"}, Mode: "source"},
			{Name: "g", Addresses: []string{"10.1.0.0/16"}, Mode: "source"},
		}, `gateways[1].name: Duplicate value: "g"`},
		"every problem, each at its path": {[]gateway.Gateway{
			{Name: "g", Addresses: []string{"0.0.0.0/0"}, Mode: "source", Header: "x"},
			{Name: "h", Addresses: []string{"::/0"}, Mode: "spiffe"},
		}, `[gateways[0].addresses[0]: Invalid value: "0.0.0.0/0": trusts every peer: give the gateways' own ` +
			`addresses, gateways[0].header: Forbidden: only in mode header, gateways[1].addresses[0]: Invalid value: ` +
			`"::/0": trusts every peer: give the gateways' own addresses]`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := gateway.NewResolver(tt.gateways)
			assert.ErrorContains(t, err, tt.says)
		})
	}
}

func TestRightmostXFCCReadsEnvoysQuotingBackwards(t *testing.T) {
	got, err := gateway.RightmostXFCC(`By=spiffe://td/ns/a/sa/b;URI=spiffe://td/ns/c/sa/d,` +
		`Hash=1;Subject="CN=x,O=\"y\";z=\\";URI=spiffe://td/ns/e/sa/f;DNS=a;DNS=b`)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"hash": "1", "subject": `CN=x,O="y";z=\`, "uri": "spiffe://td/ns/e/sa/f",
		"dns": "a"}, got)
	for _, client := range []string{`URI="open`, `URI="a,`, "URI=a,", "bare", `URI=a"b`, `\"`, `"`, "=", ";", "",
		strings.Repeat("URI=spiffe://td/ns/x/sa/y,", 100)} {
		got, err := gateway.RightmostXFCC(client + `,Subject="";URI=spiffe://td/ns/e/sa/f`)
		require.NoError(t, err, "%q", client)
		assert.Equal(t, map[string]string{"subject": "", "uri": "spiffe://td/ns/e/sa/f"}, got, "%q", client)
	}
	for bad, says := range map[string]string{
		"":                   "empty",
		"URI":                `"URI": want key=value`,
		"URI=a,":             `"": want key=value`,
		`URI="open`:          "a quote inside an unquoted value",
		`URI="a"b`:           "a quote inside an unquoted value",
		`Subject="a\"`:       "a value ends in an escaped quote",
		`Subject=x"a"`:       "text before an opening quote",
		`Subject=a";URI=b`:   "unterminated quote",
		`a,Subject=b";URI=c`: "unterminated quote",
		`a,Subject="b;URI=c`: "a quote inside an unquoted value",
		`x,Subject=b"`:       "unterminated quote",
		`x,URI=a;;URI=b`:     `"": want key=value`,
		`x,U-RI=a`:           `"U-RI=a": want key=value`,
	} {
		_, err := gateway.RightmostXFCC(bad)
		assert.ErrorContains(t, err, says, "%q", bad)
	}
}
