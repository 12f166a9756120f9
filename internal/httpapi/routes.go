package httpapi

import (
	"encoding/json"
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
	r.POST("/budget/customize", s.hook("budget/customize", budgetCustomize))
	r.POST("/budget/sync", s.hook("budget/sync", budgetSync))
	r.POST("/budget/finalize", s.hook("budget/finalize", budgetSync))
	r.POST("/clusterbudget/customize", s.hook("clusterbudget/customize", clusterCustomize))
	r.POST("/clusterbudget/sync", s.hook("clusterbudget/sync", clusterSync))
	r.POST("/clusterbudget/finalize", s.hook("clusterbudget/finalize", clusterSync))
	r.POST("/workload/customize", s.hook("workload/customize", workloadCustomize))
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

func budgetCustomize(body []byte, _ time.Time) (any, logFields, error) {
	var req hookwire.CustomizeRequest
	if err := decodeCustomize(body, &req); err != nil {
		return nil, logFields{}, err
	}
	resp, err := budget.Customize(req)
	return resp, logFields{}, hookErr(err)
}

// budgetSync serves sync and finalize alike: Metacontroller's finalizing flag,
// not the URL, decides between Apply and Cleanup, so a finalize URL that
// receives finalizing=false (a misconfigured controller) still only applies.
func budgetSync(body []byte, now time.Time) (any, logFields, error) {
	var req hookwire.CompositeRequest
	if err := decodeComposite(body, &req); err != nil {
		return nil, logFields{}, err
	}
	resp, sum, err := budget.Sync(req, now)
	f := logFields{budget: sum.Namespace + "/" + sum.Name, state: string(sum.State), reason: sum.Reason}
	return resp, f, hookErr(err)
}

// clusterCustomize and clusterSync decode with encoding/json: the cluster
// kind is not on the hot path the namespaced decoders are tuned for.
func clusterCustomize(body []byte, _ time.Time) (any, logFields, error) {
	var req hookwire.CustomizeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, logFields{}, badRequest("request: %v", err)
	}
	resp, err := clusterbudget.Customize(req)
	return resp, logFields{}, hookErr(err)
}

// clusterSync serves sync and finalize; the finalizing flag decides.
func clusterSync(body []byte, now time.Time) (any, logFields, error) {
	var req hookwire.CompositeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, logFields{}, badRequest("request: %v", err)
	}
	resp, sum, err := clusterbudget.Sync(req, now)
	return resp, logFields{budget: sum.Name, state: string(sum.State), reason: sum.Reason}, hookErr(err)
}

func workloadCustomize(body []byte, _ time.Time) (any, logFields, error) {
	var req hookwire.CustomizeRequest
	if err := decodeCustomize(body, &req); err != nil {
		return nil, logFields{}, err
	}
	resp, err := workload.Customize(req)
	return resp, logFields{}, hookErr(err)
}

// workloadSync serves the decorator's sync and finalize hooks; as for budgets,
// the finalizing flag decides.
func workloadSync(body []byte, now time.Time) (any, logFields, error) {
	var req hookwire.DecoratorRequest
	if err := decodeDecorator(body, &req); err != nil {
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
	if errors.Is(err, budget.ErrBadRequest) || errors.Is(err, workload.ErrBadRequest) || errors.Is(err, clusterbudget.ErrBadRequest) {
		return badRequest("%v", err)
	}
	return err
}
