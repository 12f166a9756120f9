package authzconfig_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authzconfig"
)

func TestParseReadsAFileWithItsDefaults(t *testing.T) {
	c, err := authzconfig.Parse([]byte(`
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
	tests := map[string]struct{ file, says string }{
		"a misspelt key":            {gw + "unknownCallers: Refuse", `unknown field "unknownCallers"`},
		"a misspelt gateway key":    {"gateways: [{name: g, address: [10.0.0.0/8], mode: source}]", `"gateways[0].address"`},
		"an unknown policy":         {gw + "unknownCaller: Maybe", `unknownCaller: "Maybe" is neither`},
		"a bad age":                 {gw + "maxCacheAge: soon", `maxCacheAge: "soon"`},
		"a negative age":            {gw + "maxCacheAge: -1s", `maxCacheAge: "-1s"`},
		"no gateway":                {"unknownCaller: Refuse", "at least one gateway"},
		"a gateway trusting anyone": {"gateways: [{name: g, mode: source}]", "every peer would be trusted"},
		"not YAML":                  {"gateways: [", "not YAML"},
		"too large":                 {strings.Repeat("#", authzconfig.MaxBytes+1), "more than the 1048576 allowed"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := authzconfig.Parse([]byte(tt.file))
			assert.ErrorContains(t, err, tt.says)
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("gateways: [{name: g, addresses: [10.0.0.0/8], mode: source}]\nmaxCacheAge: 1m\n")
	f.Add("gateways: [{name: g, identities: [spiffe://td/ns/a/sa/b], mode: spiffe, trustDomain: td}]")
	f.Add("{gateways: [{name: g, addresses: ['::/0'], mode: header, header: x}], unknownCaller: Refuse}")
	f.Fuzz(func(t *testing.T, file string) {
		c, err := authzconfig.Parse([]byte(file))
		if err != nil {
			return
		}
		assert.NotNil(t, c.Resolver)
		assert.Positive(t, c.MaxCacheAge)
		assert.Contains(t, []authz.UnknownCaller{authz.AdmitUnknown, authz.RefuseUnknown}, c.UnknownCaller)
	})
}

// The configuration docs/enforcement.md shows is one Parse accepts.
func TestTheDocumentedConfigurationParses(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "enforcement.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "## Refusing each request at the gateway")
	require.True(t, ok)
	_, block, ok := strings.Cut(section, "```yaml\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	c, err := authzconfig.Parse([]byte(block))
	require.NoError(t, err)
	assert.True(t, c.SourceMode)
	assert.Equal(t, authz.AdmitUnknown, c.UnknownCaller)
}
