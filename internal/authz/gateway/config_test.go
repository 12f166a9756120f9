package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

func TestParseReadsAFileWithItsDefaults(t *testing.T) {
	c, err := gateway.ParseConfig([]byte(`
gateways:
- name: caddy
  addresses: [10.0.0.0/8]
  mode: source
- name: istio
  identities: [spiffe://cluster.local/ns/istio-system/sa/ingress]
  mode: spiffe
`))
	require.NoError(t, err)
	assert.Equal(t, authz.AdmitUnknown, c.UnknownCaller)
	assert.Equal(t, 30*time.Second, c.MaxCacheAge)
	assert.True(t, c.SourceMode)
	assert.NotNil(t, c.Resolver)
}

func TestParseRefusesWhatItCannotHonour(t *testing.T) {
	gw := "gateways: [{name: g, addresses: [10.0.0.0/8], mode: header, header: x-ns}]\n"
	source := func(addresses string) string {
		return "gateways: [{name: g, addresses: [10.0.0.0/8, '" + addresses + "'], mode: source}]\n"
	}
	tests := map[string]struct{ file, says string }{
		"a misspelt key":         {gw + "unknownCallers: Refuse", `unknown field "unknownCallers"`},
		"a misspelt gateway key": {"gateways: [{name: g, address: [10.0.0.0/8], mode: source}]", `"gateways[0].address"`},
		"an unknown policy": {gw + "unknownCaller: Maybe",
			`unknownCaller: Unsupported value: "Maybe": supported values: "Admit", "Refuse"`},
		"a bad age":      {gw + "maxCacheAge: soon", `maxCacheAge: Invalid value: "soon": must be a positive duration`},
		"a negative age": {gw + "maxCacheAge: -1s", `maxCacheAge: Invalid value: "-1s"`},
		"every problem at once": {"gateways: [{name: g, mode: source}]\nunknownCaller: Maybe\nmaxCacheAge: 0s",
			`[gateways[0].addresses: Required value: give addresses or identities, or every peer would be trusted, ` +
				`unknownCaller: Unsupported value: "Maybe": supported values: "Admit", "Refuse", ` +
				`maxCacheAge: Invalid value: "0s": must be a positive duration such as 30s]`},
		"no gateway":                {"unknownCaller: Refuse", "gateways: Required value: at least one gateway"},
		"nothing":                   {"# nothing\n", "gateways: Required value: at least one gateway"},
		"a gateway trusting anyone": {"gateways: [{name: g, mode: source}]", "every peer would be trusted"},
		"not YAML":                  {"gateways: [", "line 1: not valid YAML"},
		"too large":                 {strings.Repeat("#", gateway.MaxConfigBytes+1), "more than the 1048576 allowed"},
		"a repeated key, the last one loosening": {gw + "unknownCaller: Refuse\nunknownCaller: Admit\n",
			`line 3: not valid YAML: unmarshal errors: key "unknownCaller" already set in map`},
		"a repeated gateway key": {"gateways:\n- name: g\n  addresses: [10.0.0.0/8]\n  mode: source\n" +
			"  addresses: [0.0.0.0/1]\n", `line 5: not valid YAML: unmarshal errors: key "addresses" already set`},
		"a repeated key in JSON": {`{"gateways": [], "unknownCaller": "Refuse", "unknownCaller": "Admit"}`,
			`key "unknownCaller" already set in map`},
		"a second YAML document": {gw + "---\nunknownCaller: Refuse\n",
			"line 3: a second YAML document: the configuration is one"},
		"a header name with a space": {"gateways: [{name: g, addresses: [10.0.0.0/8], mode: header, " +
			"header: 'x team'}]", `gateways[0].header: Invalid value: "x team": a valid HTTP header must consist of`},
		"a header name with a colon": {"gateways: [{name: g, addresses: [10.0.0.0/8], mode: header, " +
			"header: 'x-team:'}]", `gateways[0].header: Invalid value: "x-team:"`},
		"the Host header": {"gateways: [{name: g, addresses: [10.0.0.0/8], mode: header, header: host}]",
			`gateways[0].header: Invalid value: "host": the request's host`},
		"a header outside header mode": {"gateways: [{name: g, addresses: [10.0.0.0/8], mode: source, " +
			"header: x-ns}]", "gateways[0].header: Forbidden: only in mode header"},
		"a trust domain outside spiffe mode": {"gateways: [{name: g, addresses: [10.0.0.0/8], mode: source, " +
			"trustDomain: td}]", "gateways[0].trustDomain: Forbidden: only in mode spiffe"},
		"every IPv4 address": {source("0.0.0.0/0"),
			`gateways[0].addresses[1]: Invalid value: "0.0.0.0/0": trusts every peer`},
		"every IPv6 address": {source("::/0"), `gateways[0].addresses[1]: Invalid value: "::/0": trusts every peer`},
		"every IPv4 address, mapped": {source("::ffff:0.0.0.0/96"),
			`gateways[0].addresses[1]: Invalid value: "::ffff:0.0.0.0/96": trusts every peer`},
		"an IPv4-mapped CIDR": {source("::ffff:10.0.0.0/104"), `gateways[0].addresses[1]: Invalid value: ` +
			`"::ffff:10.0.0.0/104": an IPv4-mapped prefix never matches, as IPv4 peers are matched as IPv4: ` +
			`write 10.0.0.0/8`},
		"an address that is no CIDR": {source("10.0.0.1"),
			`gateways[0].addresses[1]: Invalid value: "10.0.0.1": must be a CIDR`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := gateway.ParseConfig([]byte(tt.file))
			assert.ErrorContains(t, err, tt.says)
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("gateways: [{name: g, addresses: [10.0.0.0/8], mode: source}]\nmaxCacheAge: 1m\n")
	f.Add("gateways: [{name: g, identities: [spiffe://td/ns/a/sa/b], mode: spiffe, trustDomain: td}]")
	f.Add("{gateways: [{name: g, addresses: ['::/0'], mode: header, header: x}], unknownCaller: Refuse}")
	f.Add("gateways: [{name: g, addresses: ['::ffff:10.0.0.0/104'], mode: source}]\nunknownCaller: Refuse\n" +
		"unknownCaller: Admit\n---\nmaxCacheAge: 1s\n")
	f.Fuzz(func(t *testing.T, file string) {
		c, err := gateway.ParseConfig([]byte(file))
		if err != nil {
			return
		}
		assert.NotNil(t, c.Resolver)
		assert.Positive(t, c.MaxCacheAge)
		assert.Contains(t, []authz.UnknownCaller{authz.AdmitUnknown, authz.RefuseUnknown}, c.UnknownCaller)
		assert.Equal(t, c.Identities != nil, c.CheckClientCA(false) != nil)
		assert.NoError(t, c.CheckClientCA(true))
	})
}

// The configuration docs/enforcement.md shows is one Parse accepts.
func TestTheDocumentedConfigurationParses(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "enforcement.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "## Refusing each request at the gateway")
	require.True(t, ok)
	_, block, ok := strings.Cut(section, "```yaml\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	c, err := gateway.ParseConfig([]byte(block))
	require.NoError(t, err)
	assert.True(t, c.SourceMode)
	assert.Equal(t, authz.AdmitUnknown, c.UnknownCaller)
}

func TestIdentitiesAreRefusedWithoutAClientCA(t *testing.T) {
	c, err := gateway.ParseConfig([]byte("gateways:\n- {name: a, addresses: [10.0.0.0/8], mode: source}\n" +
		"- {name: b, identities: [spiffe://cluster.local/ns/gw/sa/gw], mode: spiffe}\n"))
	require.NoError(t, err)
	assert.EqualError(t, c.CheckClientCA(false), "gateways[1].identities: Forbidden: matches only a client "+
		"certificate verified against --tls-client-ca-file, which is not given")
	assert.NoError(t, c.CheckClientCA(true))
}
