package gateway_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

func TestMayBeGatewayIsWhetherAnAddressCouldResolveToAGateway(t *testing.T) {
	byAddress, err := gateway.NewResolver([]gateway.Gateway{{Name: "envoy", Addresses: []string{"10.1.0.0/16"},
		Mode: gateway.ModeSource}})
	require.NoError(t, err)
	byCertificate, err := gateway.NewResolver([]gateway.Gateway{{Name: "mesh",
		Identities: []string{"spiffe://x/ns/gw/sa/gw"}, Mode: gateway.ModeSPIFFE}})
	require.NoError(t, err)
	tests := map[string]struct {
		r    *gateway.Resolver
		addr string
		want bool
	}{
		"an address in a gateway's CIDR":            {byAddress, "10.1.2.3", true},
		"the same address mapped to IPv6":           {byAddress, "::ffff:10.1.2.3", true},
		"an address outside every gateway's CIDR":   {byAddress, "10.2.0.1", false},
		"any address, when a certificate tells one": {byCertificate, "192.0.2.1", true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.r.MayBeGateway(netip.MustParseAddr(tt.addr)))
		})
	}
}
