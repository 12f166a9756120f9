package gateway_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

// The threat model of docs/enforcement.md, "Who can get past a gateway's refusal": everything a client of team-ml,
// which its own budget, a cluster budget or only the namespace label blocks, can send through a gateway, each
// attempt sent over TCP to the real server behind a gateway in each identity mode, under either unknownCaller
// policy. None is answered 200.
func TestNoAttemptGetsPastAGatewaysRefusal(t *testing.T) {
	var (
		refusedByBudget = answer{http.StatusTooManyRequests, "budget_exceeded"}
		unreadable      = answer{http.StatusForbidden, "unreadable_identity"}
		untrusted       = answer{http.StatusForbidden, "untrusted_peer"}
		tooLarge        = answer{http.StatusRequestHeaderFieldsTooLarge, ""}
	)
	other := "spiffe://cluster.local/ns/team-support/sa/desk"
	attempts := []attempt{
		{name: "send X-Forwarded-For naming another namespace's Pod, before the gateway's hop",
			client: []wireHeader{{"X-Forwarded-For", "10.1.0.3"}}, want: refusedByBudget},
		{name: "send X-Real-IP naming another namespace's Pod",
			client: []wireHeader{{"X-Real-IP", "10.1.0.3"}}, want: refusedByBudget},
		{name: "send X-Forwarded-For lines and hops that do not parse, before the gateway's hop",
			client: []wireHeader{{"X-Forwarded-For", "10.1.0.3"}, {"X-Forwarded-For", "unknown, [::1]:80,,, "}},
			want:   refusedByBudget},
		{name: "send a well-formed x-forwarded-client-cert element of another namespace before the gateway's",
			client: []wireHeader{{"X-Forwarded-Client-Cert", `By=spiffe://cluster.local/ns/llm/sa/gateway;Hash=abc;` +
				`Subject="";URI=` + other}}, want: refusedByBudget},
		{name: "send an x-forwarded-client-cert prefix with an unterminated quote",
			client: []wireHeader{{"X-Forwarded-Client-Cert", `Subject="CN=desk;URI=` + other}}, want: refusedByBudget},
		{name: `send an x-forwarded-client-cert prefix URI="a,`,
			client: []wireHeader{{"X-Forwarded-Client-Cert", `URI="a,`}}, want: refusedByBudget},
		{name: "send an x-forwarded-client-cert prefix with a trailing comma",
			client: []wireHeader{{"X-Forwarded-Client-Cert", "URI=" + other + ","}}, want: refusedByBudget},
		{name: "send an x-forwarded-client-cert prefix that is a bare word",
			client: []wireHeader{{"X-Forwarded-Client-Cert", "team-support"}}, want: refusedByBudget},
		{name: "send an x-forwarded-client-cert prefix of more than 32 elements",
			client: []wireHeader{{"X-Forwarded-Client-Cert",
				strings.TrimSuffix(strings.Repeat("URI="+other+",", 40), ",")}}, want: refusedByBudget},
		{name: "send an x-forwarded-client-cert prefix ending in an escaped quote",
			client: []wireHeader{{"X-Forwarded-Client-Cert", `Subject="a\"`}}, want: refusedByBudget},
		{name: "send the header mode header naming another namespace, which the gateway passes on",
			client: []wireHeader{{"X-Team", "team-support"}},
			want:   refusedByBudget, wantByMode: map[gateway.Mode]answer{gateway.ModeHeader: unreadable}},
		{name: "send the header mode header in another spelling",
			client: []wireHeader{{"x-team", "team-support"}},
			want:   refusedByBudget, wantByMode: map[gateway.Mode]answer{gateway.ModeHeader: unreadable}},
		{name: "send the header mode header in two spellings",
			client: []wireHeader{{"x-team", "team-support"}, {"X-TEAM", "team-support"}},
			want:   refusedByBudget, wantByMode: map[gateway.Mode]answer{gateway.ModeHeader: unreadable}},
		{name: "send the header mode header with a comma, which the gateway joins to its own",
			client: []wireHeader{{"X-Team", "team-support, team-ml"}},
			call:   map[gateway.Mode][]wireHeader{gateway.ModeHeader: {{"X-Team", "team-support, team-ml"}}},
			want:   refusedByBudget, wantByMode: map[gateway.Mode]answer{gateway.ModeHeader: unreadable}},
		{name: "send the header mode header empty, which the gateway passes on",
			client: []wireHeader{{"X-Team", ""}},
			call:   map[gateway.Mode][]wireHeader{gateway.ModeHeader: {{"X-Team", ""}}},
			want:   refusedByBudget, wantByMode: map[gateway.Mode]answer{gateway.ModeHeader: unreadable}},
		{name: "call authz directly, bypassing the gateway, saying anything",
			client: []wireHeader{{"X-Forwarded-For", "10.1.0.3"}, {"X-Forwarded-Client-Cert", "URI=" + other},
				{"X-Team", "team-support"}},
			notFromGW: true, want: untrusted},
		{name: "make the API server unreachable for authz, so that its cache goes stale",
			stale: true, want: refusedByBudget},
		{name: "exhaust authz with headers past --max-header-bytes",
			client: []wireHeader{{"X-Pad", strings.Repeat("a", 32<<10)}}, want: tooLarge},
	}
	for _, st := range settings {
		addr := threatServer(t, blocks[st.block], st.mode, st.policy, current, gatewayAddresses)
		got := send(t, addr, forwarded(st.mode, "team-support", nil))
		require.Equal(t, http.StatusOK, got.status, "%+v: a caller of an admitted namespace is let through: %s",
			st, got.body)
		got = send(t, addr, forwarded(st.mode, "team-ml", nil))
		require.Equal(t, refusedByBudget, got.answer, "%+v: a caller of team-ml is refused: %s", st, got.body)
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			for _, st := range settings {
				got := send(t, threatServer(t, blocks[st.block], st.mode, st.policy, a.cache(), a.addresses()),
					a.callIn(st.mode))
				assert.NotEqual(t, http.StatusOK, got.status, "%+v", st)
				assert.Equal(t, a.wantIn(st.mode), got.answer, "%+v: %s", st, got.body)
			}
		})
	}
}

// attempt is one row of the threat model.
type attempt struct {
	name string
	// client is what the client sends; the gateway adds its own part to it (forwarded).
	client []wireHeader
	// call, where set, is the whole call of a gateway of that mode, for a gateway that writes what it should not.
	call map[gateway.Mode][]wireHeader
	want answer
	// wantByMode, where set, is the answer behind a gateway of that mode.
	wantByMode map[gateway.Mode]answer
	notFromGW  bool // the call comes from a peer that is no gateway
	stale      bool // the API server is unreachable: the cache is past maxCacheAge
}

func (a attempt) callIn(m gateway.Mode) []wireHeader {
	if a.notFromGW {
		return a.client
	}
	if call, ok := a.call[m]; ok {
		return call
	}
	return forwarded(m, "team-ml", a.client)
}

func (a attempt) wantIn(m gateway.Mode) answer {
	if want, ok := a.wantByMode[m]; ok {
		return want
	}
	return a.want
}

func (a attempt) addresses() []string {
	if a.notFromGW {
		return []string{"192.0.2.0/24"}
	}
	return gatewayAddresses
}

func (a attempt) cache() authz.Cache {
	if a.stale {
		return authz.Cache{Synced: true, Age: time.Hour, MaxAge: 30 * time.Second}
	}
	return current
}

// setting is a gateway's mode, the unknownCaller policy and how team-ml is blocked.
type setting struct {
	mode   gateway.Mode
	policy authz.UnknownCaller
	block  string
}

var settings = func() []setting {
	var all []setting
	for _, m := range []gateway.Mode{gateway.ModeSource, gateway.ModeSPIFFE, gateway.ModeHeader} {
		for _, policy := range []authz.UnknownCaller{authz.AdmitUnknown, authz.RefuseUnknown} {
			for _, block := range slices.Sorted(maps.Keys(blocks)) {
				all = append(all, setting{m, policy, block})
			}
		}
	}
	return all
}()

// gatewayAddresses are where the test's calls come from.
var gatewayAddresses = []string{"127.0.0.0/8", "::1/128"}

// blocks are the ways team-ml is blocked, each a view with its Pod chatbot-0 at 10.1.0.2 and team-support's desk-0,
// admitted, at 10.1.0.3.
var blocks = map[string]func() *authz.Store{
	"its own budget blocks": store,
	"a cluster budget blocks": func() *authz.Store {
		s := pods()
		s.SetNamespace(authz.Namespace{Name: "team-ml", Labels: labels.Set{"dept": "ml"}})
		s.SetBudget(authz.Budget{Kind: api.ClusterKind, Name: "ml", State: api.OverBudget,
			Selector:    labels.SelectorFromSet(labels.Set{"dept": "ml"}),
			Enforcement: api.EnforcementStatus{Blocking: true, Namespaces: []string{"team-ml"}}})
		return s
	},
	"only the namespace label blocks": func() *authz.Store {
		s := pods()
		s.SetNamespace(authz.Namespace{Name: "team-ml", Blocked: true, BlockedBy: sentence})
		return s
	},
}

func pods() *authz.Store {
	s := authz.NewStore()
	s.SetNamespace(authz.Namespace{Name: "team-support"})
	s.SetPod(authz.Pod{Namespace: "team-ml", Name: "chatbot-0"}, []netip.Addr{netip.MustParseAddr("10.1.0.2")})
	s.SetPod(authz.Pod{Namespace: "team-support", Name: "desk-0"}, []netip.Addr{netip.MustParseAddr("10.1.0.3")})
	return s
}

type wireHeader struct{ name, value string }

type answer struct {
	status int
	code   string // of the OpenAI-shaped error body
}

type reply struct {
	answer
	body string
}

// forwarded is the call a gateway of mode m makes for a Pod of namespace ns that sent client: in source mode it
// appends the Pod's address to X-Forwarded-For, in spiffe mode its element to x-forwarded-client-cert (Envoy's
// APPEND_FORWARD), and in header mode it adds its header to whatever the client sent, as a gateway that does not
// remove the client's own would.
func forwarded(m gateway.Mode, ns string, client []wireHeader) []wireHeader {
	call := slices.Clone(client)
	switch m {
	case gateway.ModeSource:
		pods := map[string]string{"team-ml": "10.1.0.2", "team-support": "10.1.0.3"}
		return appendTo(call, gateway.HeaderForwardedFor, ", ", pods[ns])
	case gateway.ModeSPIFFE:
		return appendTo(call, gateway.HeaderClientCert, ",", `By=spiffe://cluster.local/ns/llm/sa/gateway;`+
			`Hash=abc;Subject="CN=pod,O=\"x\"";URI=spiffe://cluster.local/ns/`+ns+`/sa/default`)
	}
	return append(call, wireHeader{"X-Team", ns})
}

// appendTo appends value to the last line of the header name, in any spelling, as Envoy appends; or adds the line.
func appendTo(call []wireHeader, name, sep, value string) []wireHeader {
	for i := len(call) - 1; i >= 0; i-- {
		if strings.EqualFold(call[i].name, name) {
			call[i].value += sep + value
			return call
		}
	}
	return append(call, wireHeader{name, value})
}

// threatServer serves authz from the view for one gateway at addresses, in mode m, with the header bound of
// llmbudget authz's --max-header-bytes, and returns its address.
func threatServer(t *testing.T, view func() *authz.Store, m gateway.Mode, unknown authz.UnknownCaller,
	cache authz.Cache, addresses []string) string {
	t.Helper()
	g := gateway.Gateway{Name: "gateway", Addresses: addresses, Mode: m}
	if m == gateway.ModeHeader {
		g.Header = "x-team"
	}
	r, err := gateway.NewResolver([]gateway.Gateway{g})
	require.NoError(t, err)
	s := view()
	cacheOf := func() authz.Cache { return cache }
	h, err := gateway.NewHandler(gateway.HandlerConfig{Resolver: r, View: s, Cache: cacheOf, UnknownCaller: unknown,
		Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler),
		Metrics: gateway.NewMetrics("test", gateway.CacheGauges{Cache: cacheOf, Counts: s.Counts})})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.MaxHeaderBytes = 16 << 10
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// send writes the call to addr as it is, header names spelt as given and in order, and reads the answer.
func send(t *testing.T, addr string, call []wireHeader) reply {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	var b strings.Builder
	b.WriteString("POST /v1/chat/completions HTTP/1.1\r\nHost: llm.example\r\nContent-Length: 0\r\n")
	for _, h := range call {
		b.WriteString(h.name + ": " + h.value + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	_, err = io.WriteString(conn, b.String())
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	got := reply{answer: answer{status: resp.StatusCode}, body: string(body)}
	var e gateway.ErrorBody
	if json.Unmarshal(body, &e) == nil {
		got.code = e.Error.Code
	}
	return got
}
