package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/clusterbudget"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/workload"
)

// routes lists every endpoint of the service.
func (s *server) routes() *httprouter.Router {
	r := httprouter.New()
	r.POST("/budget/customize", s.hook("budget/customize", customize(budget.Customize)))
	r.POST("/budget/sync", s.hook("budget/sync", lenient(budgetSync)))
	r.POST("/budget/finalize", s.hook("budget/finalize", lenient(budgetSync)))
	r.POST("/clusterbudget/customize", s.hook("clusterbudget/customize", customize(clusterbudget.Customize)))
	r.POST("/clusterbudget/sync", s.hook("clusterbudget/sync", lenient(clusterSync)))
	r.POST("/clusterbudget/finalize", s.hook("clusterbudget/finalize", lenient(clusterSync)))
	r.POST("/workload/customize", s.hook("workload/customize", customize(workload.Customize)))
	r.POST("/workload/sync", s.hook("workload/sync", lenient(workloadSync)))
	r.POST("/workload/finalize", s.hook("workload/finalize", lenient(workloadSync)))
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.HandleMethodNotAllowed = true
	return r
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

func (s *server) readyz(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	if !s.cfg.Ready() {
		writeError(w, http.StatusServiceUnavailable, "not ready")
		return
	}
	s.healthz(w, r, p)
}

// lenient decodes a hook request as Metacontroller wrote it before answer
// sees it: field names match case-sensitively, and the members a request
// type does not model are ignored (Metacontroller adds fields across
// versions). Every error, the decoder's or the hook's, is answered 400.
func lenient[Req any](answer func(Req, time.Time) (any, logFields, error)) hookFunc {
	return func(body []byte, now time.Time) (any, logFields, error) {
		var req Req
		if err := decode.Lenient(body, &req, "request"); err != nil {
			return nil, logFields{}, err
		}
		return answer(req, now)
	}
}

// customize serves a customize hook: the request is the same for every
// controller kind (the object is under parent).
func customize(hook func(hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error)) hookFunc {
	return lenient(func(req hookwire.CustomizeRequest, _ time.Time) (any, logFields, error) {
		resp, err := hook(req)
		return resp, logFields{}, err
	})
}

// budgetSync serves sync and finalize alike: Metacontroller's finalizing flag,
// not the URL, decides between Apply and Cleanup, so a finalize URL that
// receives finalizing=false (a misconfigured controller) still only applies.
func budgetSync(req hookwire.CompositeRequest, now time.Time) (any, logFields, error) {
	resp, sum, err := budget.Sync(req, now)
	return resp, logFields{budget: sum.Namespace + "/" + sum.Name, state: string(sum.State), reason: sum.Reason}, err
}

// clusterSync serves sync and finalize; the finalizing flag decides.
func clusterSync(req hookwire.CompositeRequest, now time.Time) (any, logFields, error) {
	resp, sum, err := clusterbudget.Sync(req, now)
	return resp, logFields{budget: sum.Name, state: string(sum.State), reason: sum.Reason}, err
}

// workloadSync serves the decorator's sync and finalize hooks; as for budgets,
// the finalizing flag decides.
func workloadSync(req hookwire.DecoratorRequest, now time.Time) (any, logFields, error) {
	resp, sum, err := workload.Sync(req, now)
	f := logFields{
		budget: qualified(sum.Namespace, sum.Budget),
		state:  sum.State,
		extra:  []slog.Attr{slog.String("workload", sum.Kind+" "+sum.Namespace+"/"+sum.Name)},
	}
	return resp, f, err
}

// qualified is namespace/name, or nothing for an object without a budget.
func qualified(namespace, name string) string {
	if name == "" {
		return ""
	}
	return namespace + "/" + name
}
