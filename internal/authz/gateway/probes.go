package gateway

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmbudget/llmbudget/internal/authz"
)

// Probes serves /healthz, /readyz and metrics at /metrics, apart from the gateways' calls so that no gateway path
// is mistaken for them. /readyz fails while draining, and while the cache is not fit to answer from (notReady).
func Probes(metrics http.Handler, cache func() authz.Cache, draining *atomic.Bool) http.Handler {
	probes := http.NewServeMux()
	probes.Handle("GET /metrics", metrics)
	probes.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	probes.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := notReady(draining.Load(), cache()); why != "" {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return probes
}

// notReady is why a replica should get no calls, or empty: it is stopping, its informers have not synced, or its
// cache is past maxCacheAge, when a replica whose informers still list and watch answers better.
func notReady(draining bool, st authz.Cache) string {
	switch {
	case draining:
		return "the server is stopping"
	case !st.Synced:
		return "the informers have not synced"
	case st.MaxAge > 0 && st.Age > st.MaxAge:
		return fmt.Sprintf("the cache is stale: the informers last listed or watched %s ago (maxCacheAge %s)",
			st.Age.Round(time.Second), st.MaxAge)
	}
	return ""
}
