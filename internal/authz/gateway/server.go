// The handler answers LLM gateways' external-authorization calls over HTTP: Envoy's ext_authz HTTP service (Envoy
// Gateway's SecurityPolicy extAuth.http, Istio's envoyExtAuthzHttp provider), Traefik's ForwardAuth, Caddy's
// forward_auth and nginx's auth_request. All call the same way: any method and path, with (some of) the original
// request's headers, and forward the request only on a 2xx answer; any other answer goes back to the client as it is.
//
// Guarantees:
//   - Every method and path is an authorization call: the path is the original request's (Envoy), or a fixed one
//     with X-Forwarded-Uri (Traefik, Caddy), or an internal location (nginx), and none of it decides anything.
//   - Allowed: 200 with x-llmbudget-budget, x-llmbudget-remaining-usd and x-llmbudget-state for the gateway to pass
//     on, and x-llmbudget-warning while a Warn-mode budget would refuse.
//   - Refused by a budget: 429 with Retry-After and a body in the OpenAI error shape, type insufficient_quota and
//     code budget_exceeded, whose message is the admission policy's sentence.
//   - An answer from a cache that is not current carries x-llmbudget-cache-stale and is counted.
//   - The handler reads no request body and keeps nothing per request: the server's bounds on header bytes,
//     connections and time are all a caller controls. A peer that is no gateway is answered 403 with
//     Connection: close, and its connection is closed.

package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/text"
)

// The headers of an answer.
const (
	HeaderBudget     = "X-Llmbudget-Budget"
	HeaderRemaining  = "X-Llmbudget-Remaining-Usd"
	HeaderState      = "X-Llmbudget-State"
	HeaderWarning    = "X-Llmbudget-Warning"
	HeaderCacheStale = "X-Llmbudget-Cache-Stale"
)

// maxHeaderValue bounds a sentence put in a header: gateways limit response headers (Envoy to 60 KiB in all).
const maxHeaderValue = 1024

// View is what the server reads per call: the Store of package authz.
type View interface {
	View(namespace string) (authz.Namespace, bool, []*authz.Budget)
	PodByIP(ip netip.Addr) (authz.Pod, bool)
}

// HandlerConfig is what New needs.
type HandlerConfig struct {
	Resolver      *Resolver
	View          View
	Cache         func() authz.Cache
	UnknownCaller authz.UnknownCaller
	Now           func() time.Time
	Metrics       *Metrics
	Logger        *slog.Logger
}

type handler struct{ HandlerConfig }

// NewHandler returns the authorization handler.
func NewHandler(c HandlerConfig) (http.Handler, error) {
	switch {
	case c.Resolver == nil || c.View == nil || c.Cache == nil || c.Now == nil || c.Metrics == nil || c.Logger == nil:
		return nil, errors.New("gateway: Resolver, View, Cache, Now, Metrics and Logger are required")
	case c.UnknownCaller != authz.AdmitUnknown && c.UnknownCaller != authz.RefuseUnknown:
		return nil, fmt.Errorf("unknownCaller: %q is neither %s nor %s", c.UnknownCaller, authz.AdmitUnknown,
			authz.RefuseUnknown)
	}
	return &handler{c}, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	claim, err := h.Resolver.Resolve(peerOf(r), r.Header)
	if errors.Is(err, ErrUntrusted) {
		h.Logger.Warn("authorization call from a peer that is no gateway", "peer", r.RemoteAddr)
		h.Metrics.untrusted.Inc()
		// A peer that is no gateway gets one answer per connection, so that it holds none of the slots that
		// --max-connections keeps for gateways between its calls.
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusForbidden, "llmbudget answers configured gateways only", "permission_error",
			"untrusted_peer")
		return
	}
	caller := h.caller(claim, err)
	ns, _, budgets := h.View.View(caller.Namespace)
	d := authz.Decide(authz.Input{Now: h.Now(), Caller: caller, UnknownCaller: h.UnknownCaller, Namespace: ns,
		Budgets: budgets, Cache: h.Cache()})
	write(w, d)
	h.Metrics.observe(claim.Gateway, d, time.Since(start))
	if d.Reason == authz.ReasonUnknownCaller || d.Reason == authz.ReasonUnreadable {
		h.Logger.Debug(string(d.Reason), "gateway", claim.Gateway, "why", caller.Why)
	}
}

// caller is who the claim says calls; in source mode, the Pod with the claimed address.
func (h *handler) caller(c Claim, err error) authz.Caller {
	switch {
	case errors.Is(err, ErrBadIdentity):
		return authz.Caller{Unreadable: true, Why: err.Error()}
	case err != nil:
		return authz.Caller{Why: err.Error()}
	case c.Mode != ModeSource:
		return authz.Caller{Known: true, Namespace: c.Namespace}
	}
	pod, ok := h.View.PodByIP(c.Source)
	if !ok {
		return authz.Caller{Why: "no one Pod has address " + c.Source.String()}
	}
	return authz.Caller{Known: true, Namespace: pod.Namespace, Budget: pod.Budget}
}

// peerOf is the connection's address and, when its client certificate was verified, the certificate's URIs.
func peerOf(r *http.Request) Peer {
	var p Peer
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		p.Addr = ap.Addr().Unmap()
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		for _, u := range r.TLS.VerifiedChains[0][0].URIs {
			p.URIs = append(p.URIs, u.String())
		}
	}
	return p
}

func write(w http.ResponseWriter, d authz.Decision) {
	hd := w.Header()
	if d.Budget != "" {
		hd.Set(HeaderBudget, d.Budget)
		hd.Set(HeaderState, d.State)
		if d.RemainingUSD != "" {
			hd.Set(HeaderRemaining, d.RemainingUSD)
		}
	}
	if d.Stale != "" {
		hd.Set(HeaderCacheStale, d.Stale)
	}
	if d.RetryAfter > 0 {
		hd.Set("Retry-After", strconv.Itoa(d.RetryAfter))
	}
	switch {
	case d.Result == authz.Allowed && d.Reason == authz.ReasonWarn:
		hd.Set(HeaderWarning, text.Abbreviate(d.Message, maxHeaderValue))
		w.WriteHeader(http.StatusOK)
	case d.Result == authz.Allowed:
		w.WriteHeader(http.StatusOK)
	case d.Result == authz.Unavailable:
		writeError(w, http.StatusServiceUnavailable, d.Message, "service_unavailable", "budget_unavailable")
	case d.Reason == authz.ReasonUnknownCaller:
		writeError(w, http.StatusForbidden, d.Message, "permission_error", "unknown_caller")
	case d.Reason == authz.ReasonUnreadable:
		writeError(w, http.StatusForbidden, d.Message, "permission_error", "unreadable_identity")
	default:
		writeError(w, http.StatusTooManyRequests, d.Message, "insufficient_quota", "budget_exceeded")
	}
}

// ErrorBody is the OpenAI API's error shape, which LLM clients already show their users.
type ErrorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, message, typ, code string) {
	var b ErrorBody
	b.Error.Message, b.Error.Type, b.Error.Code = message, typ, code
	body, _ := json.Marshal(b) // strings only: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
