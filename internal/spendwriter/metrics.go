package spendwriter

import (
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the long-running writer's Prometheus metrics, on a registry of their own. The figure age has one
// series per budget with a Prometheus source that the leader lists (a budget's series goes when the budget does):
// 10,000 budgets are 10,000 series, and a follower exports none.
type Metrics struct {
	handler  http.Handler
	duration prometheus.Histogram
	written  prometheus.Counter
	failed   prometheus.Counter
	age      *prometheus.GaugeVec
	leader   prometheus.Gauge
	runs     *prometheus.CounterVec
	exported map[[2]string]bool // the age series set, by namespace and name
}

// NewMetrics registers every collector, with build info for version.
func NewMetrics(version string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(prometheus.WrapRegistererWithPrefix("llmbudget_spend_", reg))
	buildInfo := prometheus.GaugeOpts{Name: "build_info", Help: "Build information; the value is always 1."}
	f.NewGaugeVec(buildInfo, []string{"version", "goversion"}).WithLabelValues(version, runtime.Version()).Set(1)
	return &Metrics{
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Name: "run_duration_seconds", Help: "Time one run of the writer took, listing to last write.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 30, 60, 120, 240},
		}),
		runs: f.NewCounterVec(prometheus.CounterOpts{
			Name: "runs_total", Help: "Runs of the writer, by result: ok, or error when the budgets could not be listed.",
		}, []string{"result"}),
		written: f.NewCounter(prometheus.CounterOpts{
			Name: "budgets_written_total", Help: "Budgets whose spend ConfigMap a run wrote (figures that changed).",
		}),
		failed: f.NewCounter(prometheus.CounterOpts{
			Name: "budgets_failed_total", Help: "Budgets whose spend a run could not compute or write.",
		}),
		age: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "figure_age_seconds",
			Help: "Per budget: seconds from the evaluation time of the latest figures known true (written, or " +
				"found unchanged) to the end of the last run; it grows while the budget fails.",
		}, []string{"namespace", "name"}),
		leader: f.NewGauge(prometheus.GaugeOpts{
			Name: "leader", Help: "1 while this replica holds the writer's Lease and writes, else 0.",
		}),
		exported: map[[2]string]bool{},
	}
}

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler { return m.handler }

// SetLeader records whether this replica leads.
func (m *Metrics) SetLeader(leads bool) {
	if m == nil {
		return
	}
	v := 0.0
	if leads {
		v = 1
	}
	m.leader.Set(v)
}

// observe records a run that went from start to end. Runs are one at a time.
func (m *Metrics) observe(res Result, err error, kept *Kept, start, end time.Time) {
	if m == nil {
		return
	}
	m.duration.Observe(end.Sub(start).Seconds())
	if err != nil {
		m.runs.WithLabelValues("error").Inc()
		return
	}
	m.runs.WithLabelValues("ok").Inc()
	m.written.Add(float64(len(res.Written)))
	m.failed.Add(float64(len(res.Failed)))
	listed := map[[2]string]bool{}
	for _, group := range [][]string{res.Written, res.Unchanged, res.Failed} {
		for _, budget := range group {
			ns, name, _ := strings.Cut(budget, "/")
			listed[[2]string{ns, name}] = true
			if at, ok := kept.Confirmed(budget); ok {
				m.age.WithLabelValues(ns, name).Set(end.Sub(at).Seconds())
				m.exported[[2]string{ns, name}] = true
			}
		}
	}
	for key := range m.exported {
		if !listed[key] {
			m.age.DeleteLabelValues(key[0], key[1])
			delete(m.exported, key)
		}
	}
}
