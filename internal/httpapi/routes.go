package httpapi

import (
	"io"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/clusterbudget"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/workload"
)

// Sync and finalize share a hook: Metacontroller's finalizing flag, not the
// URL, decides between Apply and Cleanup, so a finalize URL that receives
// finalizing=false (a misconfigured controller) still only applies.
func (s *server) routes() *httprouter.Router {
	router := httprouter.New()
	s.handle(router, "budget/customize", customize(budget.Customize))
	s.handle(router, "budget/sync", composite(budget.Sync))
	s.handle(router, "budget/finalize", composite(budget.Sync))
	s.handle(router, "clusterbudget/customize", customize(clusterbudget.Customize))
	s.handle(router, "clusterbudget/sync", composite(clusterbudget.Sync))
	s.handle(router, "clusterbudget/finalize", composite(clusterbudget.Sync))
	s.handle(router, "workload/customize", customize(workload.Customize))
	s.handle(router, "workload/sync", lenient(workloadSync))
	s.handle(router, "workload/finalize", lenient(workloadSync))
	router.GET("/healthz", healthz)
	router.GET("/readyz", func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if s.cfg.Ready != nil && !s.cfg.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		healthz(w, r, p)
	})
	return router
}

// healthz answers "ok", which net/http sniffs as text/plain; charset=utf-8.
func healthz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	_, _ = io.WriteString(w, "ok\n")
}

// lenient ignores members the request type does not model: Metacontroller adds
// fields across versions. Field names match case-sensitively.
func lenient[Req any](answer func(Req, time.Time) (any, HookCall, error)) hookFunc {
	return func(body []byte, now time.Time) (any, HookCall, error) {
		var req Req
		if err := decode.Lenient(body, &req, "request"); err != nil {
			return nil, HookCall{}, err
		}
		return answer(req, now)
	}
}

func customize(hook func(hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error)) hookFunc {
	return lenient(func(req hookwire.CustomizeRequest, _ time.Time) (any, HookCall, error) {
		resp, err := hook(req)
		return resp, HookCall{}, err
	})
}

func composite(sync func(hookwire.CompositeRequest, time.Time) (hookwire.CompositeResponse, budget.Summary, error)) hookFunc {
	return lenient(func(req hookwire.CompositeRequest, now time.Time) (any, HookCall, error) {
		resp, sum, err := sync(req, now)
		return resp, HookCall{Budget: qualified(sum.Namespace, sum.Name), State: string(sum.State), Reason: sum.Reason}, err
	})
}

func workloadSync(req hookwire.DecoratorRequest, now time.Time) (any, HookCall, error) {
	resp, sum, err := workload.Sync(req, now)
	c := HookCall{
		Budget:   qualified(sum.Namespace, sum.Budget),
		State:    sum.State,
		Workload: sum.Kind + " " + sum.Namespace + "/" + sum.Name,
	}
	return resp, c, err
}

func qualified(namespace, name string) string {
	if namespace == "" || name == "" {
		return name
	}
	return namespace + "/" + name
}
