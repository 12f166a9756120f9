package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/clusterbudget"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/workload"
)

var _ http.Handler = (*httprouter.Router)(nil)

// routes lists every endpoint of the service.
func (s *server) routes() *httprouter.Router {
	r := httprouter.New()
	r.POST("/budget/customize", s.hook("budget/customize", customize(budget.Customize)))
	r.POST("/budget/sync", s.hook("budget/sync", budgetSync))
	r.POST("/budget/finalize", s.hook("budget/finalize", budgetSync))
	r.POST("/clusterbudget/customize", s.hook("clusterbudget/customize", customize(clusterbudget.Customize)))
	r.POST("/clusterbudget/sync", s.hook("clusterbudget/sync", clusterSync))
	r.POST("/clusterbudget/finalize", s.hook("clusterbudget/finalize", clusterSync))
	r.POST("/workload/customize", s.hook("workload/customize", customize(workload.Customize)))
	r.POST("/workload/sync", s.hook("workload/sync", workloadSync))
	r.POST("/workload/finalize", s.hook("workload/finalize", workloadSync))
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.HandleMethodNotAllowed = true
	return r
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	if !s.cfg.Ready() {
		writeError(w, http.StatusServiceUnavailable, "not ready")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// customize serves a customize hook: the request is the same for every
// controller kind (the object is under parent).
func customize(hook func(hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error)) hookFunc {
	return func(body []byte, _ time.Time) (any, logFields, error) {
		req, err := decodeRequest[hookwire.CustomizeRequest](body)
		if err != nil {
			return nil, logFields{}, err
		}
		resp, err := hook(req)
		return resp, logFields{}, hookErr(err)
	}
}

// budgetSync serves sync and finalize alike: Metacontroller's finalizing flag,
// not the URL, decides between Apply and Cleanup, so a finalize URL that
// receives finalizing=false (a misconfigured controller) still only applies.
func budgetSync(body []byte, now time.Time) (any, logFields, error) {
	req, err := decodeRequest[hookwire.CompositeRequest](body)
	if err != nil {
		return nil, logFields{}, err
	}
	resp, sum, err := budget.Sync(req, now)
	f := logFields{budget: sum.Namespace + "/" + sum.Name, state: string(sum.State), reason: sum.Reason}
	return resp, f, hookErr(err)
}

// clusterSync serves sync and finalize; the finalizing flag decides.
func clusterSync(body []byte, now time.Time) (any, logFields, error) {
	req, err := decodeRequest[hookwire.CompositeRequest](body)
	if err != nil {
		return nil, logFields{}, err
	}
	resp, sum, err := clusterbudget.Sync(req, now)
	return resp, logFields{budget: sum.Name, state: string(sum.State), reason: sum.Reason}, hookErr(err)
}

// workloadSync serves the decorator's sync and finalize hooks; as for budgets,
// the finalizing flag decides.
func workloadSync(body []byte, now time.Time) (any, logFields, error) {
	req, err := decodeRequest[hookwire.DecoratorRequest](body)
	if err != nil {
		return nil, logFields{}, err
	}
	resp, sum, err := workload.Sync(req, now)
	f := logFields{
		budget: qualified(sum.Namespace, sum.Budget),
		state:  sum.State,
		extra:  []slog.Attr{slog.String("workload", sum.Kind+" "+sum.Namespace+"/"+sum.Name)},
	}
	return resp, f, hookErr(err)
}

// qualified is namespace/name, or nothing for an object without a budget.
func qualified(namespace, name string) string {
	if name == "" {
		return ""
	}
	return namespace + "/" + name
}

// hookErr turns a hook's refusal into 400 with its one-line reason.
func hookErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, hookwire.ErrBadRequest) {
		return badRequest("%v", err)
	}
	return err
}
