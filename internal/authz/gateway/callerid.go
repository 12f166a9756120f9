// Caller identity: a Resolver tells who is calling an LLM through a gateway, from the external-authorization call that
// the gateway makes to llmbudget authz: which gateway makes the call (by the address and the client certificate of the
// connection), and which namespace the gateway vouches for, read the one way that gateway is configured for.
//
// Expected Flow:
//  1. Match the peer of the authorization call (its address, its certificate's URI SANs) to a configured Gateway.
//     A peer that is no gateway is Untrusted: nothing it sends is believed.
//  2. Read the caller as the gateway's mode says: the rightmost X-Forwarded-For hop (source), the URI of the
//     rightmost x-forwarded-client-cert element (spiffe), or one header (header).
//
// Guarantees:
//   - Only the part of a header that the gateway itself writes is read: the hop it appends to X-Forwarded-For,
//     the element it appends (or sets) in x-forwarded-client-cert, read on its own from the end of the line. What
//     a client put before them can neither change the result nor make it an error.
//   - A gateway's call without the header its mode reads is ErrNoIdentity: the gateway vouches for no one. A
//     header that is there but cannot be read (a hop that is no address, an element or SPIFFE ID that does not
//     parse, a header mode header sent twice, in any spelling, or empty, or with a comma) is ErrBadIdentity.
//   - A Claim's namespace is a valid DNS-1123 label and its address a valid IP; anything else is an error that
//     names the header.
//   - Resolve reads only the request's headers and the peer: it allocates little and never blocks, so the caller
//     bounds the bytes (the server's header limit) and nothing else.
//
// Assumptions:
//   - A gateway in source mode appends the address of the connection it received to X-Forwarded-For (or sets the
//     header to it); one in spiffe mode sanitises or appends x-forwarded-client-cert; one in header mode removes
//     the header from what clients send and sets it after authenticating them. docs/enforcement.md says how each
//     gateway is configured so.

package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Mode is how a gateway tells who its caller is.
type Mode string

// The modes a gateway may be configured with.
const (
	// ModeSource: the caller's address, the rightmost X-Forwarded-For hop, is a Pod's IP.
	ModeSource Mode = "source"
	// ModeSPIFFE: the caller's mesh identity, spiffe://<trust domain>/ns/<namespace>/sa/<service account>.
	ModeSPIFFE Mode = "spiffe"
	// ModeHeader: a header the gateway sets after authenticating the caller holds its namespace.
	ModeHeader Mode = "header"
)

// Headers read in source and spiffe modes.
const (
	HeaderForwardedFor = "X-Forwarded-For"
	HeaderClientCert   = "X-Forwarded-Client-Cert"
)

// Gateway is one gateway allowed to call, as configured.
type Gateway struct {
	// Name names the gateway in metrics and logs.
	Name string `json:"name"`
	// Addresses are the CIDRs the gateway's connections come from.
	Addresses []string `json:"addresses,omitempty"`
	// Identities are URI SANs (spiffe://...) of the client certificate the gateway presents, when authz serves TLS
	// with client certificates.
	Identities []string `json:"identities,omitempty"`
	// Mode is how the gateway tells who its caller is.
	Mode Mode `json:"mode"`
	// Header is the header of ModeHeader.
	Header string `json:"header,omitempty"`
	// TrustDomain is the SPIFFE trust domain of ModeSPIFFE; empty means cluster.local.
	TrustDomain string `json:"trustDomain,omitempty"`
}

// DefaultTrustDomain is the trust domain of a Kubernetes cluster's mesh unless configured otherwise.
const DefaultTrustDomain = "cluster.local"

// Peer is the other end of the authorization call's connection.
type Peer struct {
	Addr netip.Addr
	URIs []string // of its verified client certificate, if any
}

// Claim is who a gateway says is calling.
type Claim struct {
	Gateway        string
	Mode           Mode
	Namespace      string     // spiffe and header modes
	ServiceAccount string     // spiffe mode
	Source         netip.Addr // source mode: the Pod's IP
}

// Errors Resolve wraps.
var (
	// ErrUntrusted is a peer that is no configured gateway.
	ErrUntrusted = errors.New("the peer is no configured gateway")
	// ErrNoIdentity is a gateway's call without the header that says who calls: the gateway vouches for no one.
	ErrNoIdentity = errors.New("the gateway named no caller")
	// ErrBadIdentity is a gateway's call whose caller identity is there but cannot be read or believed.
	ErrBadIdentity = errors.New("the gateway sent a caller identity that cannot be read")
)

// errMissing is a header a mode reads that is not in the call at all.
var errMissing = errors.New("missing")

// Resolver matches peers to gateways and reads their claims.
type Resolver struct {
	gateways []gateway
}

type gateway struct {
	Gateway
	prefixes []netip.Prefix
	header   string // canonical
}

// NewResolver checks the gateways and returns their resolver. Its error is a field.ErrorList's aggregate: every
// problem, at its path under gateways, in the API server's words.
func NewResolver(gateways []Gateway) (*Resolver, error) {
	root := field.NewPath("gateways")
	if len(gateways) == 0 {
		return nil, field.Required(root, "at least one gateway must be configured")
	}
	r := &Resolver{}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, g := range gateways {
		parsed, gerrs := check(g, root.Index(i))
		errs = append(errs, gerrs...)
		if g.Name != "" && names[g.Name] {
			errs = append(errs, field.Duplicate(root.Index(i).Child("name"), g.Name))
		}
		names[g.Name] = true
		r.gateways = append(r.gateways, parsed)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return r, nil
}

var modes = []string{string(ModeSource), string(ModeSPIFFE), string(ModeHeader)}

func check(g Gateway, at *field.Path) (gateway, field.ErrorList) {
	out := gateway{Gateway: g}
	var errs field.ErrorList
	if g.Name == "" {
		errs = append(errs, field.Required(at.Child("name"), ""))
	}
	if len(g.Addresses) == 0 && len(g.Identities) == 0 {
		errs = append(errs, field.Required(at.Child("addresses"),
			"give addresses or identities, or every peer would be trusted"))
	}
	for j, a := range g.Addresses {
		p, why := checkPrefix(a)
		if why != "" {
			errs = append(errs, field.Invalid(at.Child("addresses").Index(j), a, why))
			continue
		}
		out.prefixes = append(out.prefixes, p)
	}
	if g.Header != "" && g.Mode != ModeHeader {
		errs = append(errs, field.Forbidden(at.Child("header"), "only in mode header"))
	}
	if g.TrustDomain != "" && g.Mode != ModeSPIFFE {
		errs = append(errs, field.Forbidden(at.Child("trustDomain"), "only in mode spiffe"))
	}
	switch g.Mode {
	case ModeSource:
	case ModeSPIFFE:
		if out.TrustDomain == "" {
			out.TrustDomain = DefaultTrustDomain
		}
	case ModeHeader:
		errs = append(errs, checkHeader(g.Header, at.Child("header"))...)
		out.header = http.CanonicalHeaderKey(g.Header)
	default:
		errs = append(errs, field.NotSupported(at.Child("mode"), g.Mode, modes))
	}
	return out, errs
}

// checkPrefix reads a gateway's CIDR, or says why it refuses it: one that would trust every peer or, being
// IPv4-mapped, none, as IPv4 peers are matched by their IPv4 address.
func checkPrefix(a string) (netip.Prefix, string) {
	p, err := netip.ParsePrefix(a)
	switch {
	case err != nil:
		return p, "must be a CIDR such as 10.0.0.0/8 or fd00::/64"
	case p.Bits() == 0 || p.Addr().Is4In6() && p.Bits() == 96:
		return p, "trusts every peer: give the gateways' own addresses"
	case p.Addr().Is4In6() && p.Bits() > 96:
		return p, fmt.Sprintf("an IPv4-mapped prefix never matches, as IPv4 peers are matched as IPv4: write %s",
			netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96).Masked())
	case p.Addr().Is4In6():
		return p, "an IPv4-mapped prefix never matches, as IPv4 peers are matched as IPv4"
	}
	return p.Masked(), ""
}

func checkHeader(name string, at *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(at, "in mode header")}
	}
	if msgs := validation.IsHTTPHeaderName(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(at, name, msgs[0])}
	}
	switch http.CanonicalHeaderKey(name) {
	case HeaderForwardedFor, HeaderClientCert:
		return field.ErrorList{field.Invalid(at, name, "read by modes source and spiffe, not as a namespace")}
	case "Host":
		return field.ErrorList{field.Invalid(at, name, "the request's host, never a header a gateway sets")}
	}
	return nil
}

// Resolve returns the claim of the gateway that peer is. Its error wraps ErrUntrusted, ErrNoIdentity or
// ErrBadIdentity.
func (r *Resolver) Resolve(peer Peer, h http.Header) (Claim, error) {
	g, ok := r.match(peer)
	if !ok {
		return Claim{}, fmt.Errorf("%w: %s", ErrUntrusted, peer.Addr)
	}
	c := Claim{Gateway: g.Name, Mode: g.Mode}
	var err error
	switch g.Mode {
	case ModeSource:
		c.Source, err = RightmostHop(h.Values(HeaderForwardedFor))
	case ModeSPIFFE:
		c.Namespace, c.ServiceAccount, err = spiffeCaller(h.Values(HeaderClientCert), g.TrustDomain)
	case ModeHeader:
		c.Namespace, err = namespaceHeader(valuesFold(h, g.header), g.header)
	}
	switch {
	case errors.Is(err, errMissing):
		return c, fmt.Errorf("%w: gateway %s: %w", ErrNoIdentity, g.Name, err)
	case err != nil:
		return c, fmt.Errorf("%w: gateway %s: %w", ErrBadIdentity, g.Name, err)
	}
	return c, nil
}

// match is the first gateway the peer is. A gateway configured with both addresses and identities needs both.
func (r *Resolver) match(peer Peer) (gateway, bool) {
	for _, g := range r.gateways {
		byAddr := len(g.prefixes) == 0 || slices.ContainsFunc(g.prefixes, func(p netip.Prefix) bool {
			return p.Contains(peer.Addr.Unmap())
		})
		byID := len(g.Identities) == 0 || slices.ContainsFunc(peer.URIs, func(u string) bool {
			return slices.Contains(g.Identities, u)
		})
		if byAddr && byID {
			return g, true
		}
	}
	return gateway{}, false
}

// RightmostHop is the last address of the last X-Forwarded-For line: the one the gateway appended. A port, as
// some proxies write, is dropped.
func RightmostHop(lines []string) (netip.Addr, error) {
	if len(lines) == 0 {
		return netip.Addr{}, fmt.Errorf("%s: %w", HeaderForwardedFor, errMissing)
	}
	last := lines[len(lines)-1]
	hop := strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])
	addr, err := netip.ParseAddr(hop)
	if err != nil {
		ap, perr := netip.ParseAddrPort(hop)
		if perr != nil {
			return netip.Addr{}, fmt.Errorf("%s: rightmost hop %q is no IP address", HeaderForwardedFor, clip(hop))
		}
		addr = ap.Addr()
	}
	return addr.Unmap().WithZone(""), nil
}

// valuesFold is the values of the header name under any spelling: Go's server files every spelling under the
// canonical one, and a Header built otherwise may hold several.
func valuesFold(h http.Header, name string) []string {
	values := h[name]
	for k, vs := range h {
		if k != name && strings.EqualFold(k, name) {
			values = append(slices.Clip(values), vs...)
		}
	}
	return values
}

// namespaceHeader reads a header mode header, which must be sent exactly once.
func namespaceHeader(values []string, name string) (string, error) {
	switch {
	case len(values) == 0:
		return "", fmt.Errorf("%s: %w", name, errMissing)
	case len(values) > 1:
		return "", fmt.Errorf("%s: sent %d times, want once", name, len(values))
	}
	ns := strings.TrimSpace(values[0])
	if ns == "" {
		return "", fmt.Errorf("%s: empty", name)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", fmt.Errorf("%s: %q is no namespace name: %s", name, clip(ns), errs[0])
	}
	return ns, nil
}

// spiffeCaller reads the namespace and service account of the rightmost x-forwarded-client-cert element's URI.
func spiffeCaller(lines []string, trustDomain string) (ns, sa string, err error) {
	if len(lines) == 0 {
		return "", "", fmt.Errorf("%s: %w", HeaderClientCert, errMissing)
	}
	elem, err := RightmostXFCC(lines[len(lines)-1])
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", HeaderClientCert, err)
	}
	uri, ok := elem["uri"]
	if !ok {
		return "", "", fmt.Errorf("%s: the rightmost element has no URI", HeaderClientCert)
	}
	ns, sa, err = ParseSPIFFE(uri, trustDomain)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", HeaderClientCert, err)
	}
	return ns, sa, nil
}

// ParseSPIFFE reads spiffe://<trustDomain>/ns/<namespace>/sa/<service account>, the identity Istio and other
// Kubernetes meshes give a workload.
func ParseSPIFFE(uri, trustDomain string) (ns, sa string, err error) {
	rest, ok := strings.CutPrefix(uri, "spiffe://"+trustDomain+"/")
	if !ok {
		return "", "", fmt.Errorf("URI %q is no SPIFFE ID of trust domain %s", clip(uri), trustDomain)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] != "ns" || parts[2] != "sa" {
		return "", "", fmt.Errorf("URI %q: want spiffe://%s/ns/<namespace>/sa/<service account>", clip(uri), trustDomain)
	}
	if errs := validation.IsDNS1123Label(parts[1]); len(errs) > 0 {
		return "", "", fmt.Errorf("URI %q: namespace: %s", clip(uri), errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(parts[3]); len(errs) > 0 {
		return "", "", fmt.Errorf("URI %q: service account: %s", clip(uri), errs[0])
	}
	return parts[1], parts[3], nil
}

// clip keeps a value quoted in an error short: the header may be as large as the server admits.
func clip(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	return s[:most] + "..."
}
