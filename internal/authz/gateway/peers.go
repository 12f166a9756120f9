package gateway

import (
	"net/netip"
	"slices"
)

// MayBeGateway is whether a connection from addr may be a gateway's, before anything of it is read: addr is in a
// gateway's CIDRs, or a gateway is told by its certificate alone. A connection from any other address is answered
// as untrusted whatever it sends.
func (r *Resolver) MayBeGateway(addr netip.Addr) bool {
	addr = addr.Unmap()
	return slices.ContainsFunc(r.gateways, func(g gateway) bool {
		return len(g.prefixes) == 0 || slices.ContainsFunc(g.prefixes, func(p netip.Prefix) bool {
			return p.Contains(addr)
		})
	})
}
