// The hook service's Prometheus metrics about hook calls, budget evaluations and the build. Budget gauges (spend,
// limit, percent used) are deliberately not here: this stateless service sees a budget only while answering for
// it; kube-state-metrics exposes them from status (see deploy/monitoring/).

package controller

import (
	"net/http"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// Metrics holds the collectors, on a registry of their own.
type Metrics struct {
	handler  http.Handler
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	rejected *prometheus.CounterVec
	outcomes *prometheus.CounterVec
}

// NewMetrics registers every collector, with build info for version.
func NewMetrics(version string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(prometheus.WrapRegistererWithPrefix("llmbudget_", reg))
	buildInfo := prometheus.GaugeOpts{Name: "build_info", Help: "Build information; the value is always 1."}
	f.NewGaugeVec(buildInfo, []string{"version", "goversion"}).
		WithLabelValues(version, runtime.Version()).Set(1)
	return &Metrics{
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hook_requests_total", Help: "Hook requests answered, by hook and HTTP status code.",
		}, []string{"hook", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hook_duration_seconds", Help: "Time to answer a hook request, by hook.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"hook"}),
		rejected: f.NewCounterVec(prometheus.CounterOpts{
			Name: "hook_rejected_total",
			Help: "Hook requests refused with 429 because the request bytes in flight were at their bound " +
				"(--max-in-flight-bytes), by hook.",
		}, []string{"hook"}),
		outcomes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "evaluations_total", Help: "Budget evaluations by resulting state and BudgetEvaluated reason.",
		}, []string{"state", "reason"}),
	}
}

// ObserveHook records one hook call.
func (m *Metrics) ObserveHook(c metacontroller.Call) {
	m.requests.WithLabelValues(c.Hook, strconv.Itoa(c.Status)).Inc()
	if c.Status == http.StatusTooManyRequests {
		// A refusal is not an answer: its time (reading the body it refuses) stays out of the latency the alerts watch.
		m.rejected.WithLabelValues(c.Hook).Inc()
		return
	}
	m.duration.WithLabelValues(c.Hook).Observe(c.Duration.Seconds())
	if c.State != "" && c.Hook == "budget/sync" {
		m.outcomes.WithLabelValues(c.State, c.Reason).Inc()
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler { return m.handler }
