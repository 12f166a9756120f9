package gateway

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmbudget/llmbudget/internal/authz"
)

// Metrics are the authorization server's collectors, on a registry of their own, named llmbudget_authz_*.
type Metrics struct {
	handler   http.Handler
	decisions *prometheus.CounterVec
	duration  prometheus.Histogram
	unknown   *prometheus.CounterVec
	stale     *prometheus.CounterVec
	untrusted prometheus.Counter
}

// CacheGauges is what the cache reports to the metrics: its age, whether it is synced, what it holds.
type CacheGauges struct {
	Cache  func() authz.Cache
	Counts func() (namespaces, budgets, pods int)
}

// NewMetrics registers every collector, with build info for version.
func NewMetrics(version string, g CacheGauges) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(prometheus.WrapRegistererWithPrefix("llmbudget_authz_", reg))
	f.NewGaugeVec(prometheus.GaugeOpts{Name: "build_info", Help: "Build information; the value is always 1."},
		[]string{"version", "goversion"}).WithLabelValues(version, runtime.Version()).Set(1)
	f.NewGaugeFunc(prometheus.GaugeOpts{Name: "cache_age_seconds",
		Help: "Seconds since the API server was last heard from; " +
			"decisions past the config's maxCacheAge say they are stale."},
		func() float64 { return g.Cache().Age.Seconds() })
	f.NewGaugeFunc(prometheus.GaugeOpts{Name: "cache_synced",
		Help: "1 once every informer has synced (and the server is ready), else 0."},
		func() float64 {
			if g.Cache().Synced {
				return 1
			}
			return 0
		})
	objects := func(pick func(n, b, p int) int) func() float64 {
		return func() float64 { n, b, p := g.Counts(); return float64(pick(n, b, p)) }
	}
	const objectsHelp = "Objects in the decision cache, by kind."
	f.NewGaugeFunc(prometheus.GaugeOpts{Name: "cached_objects", Help: objectsHelp,
		ConstLabels: prometheus.Labels{"kind": "namespace"}}, objects(func(n, _, _ int) int { return n }))
	f.NewGaugeFunc(prometheus.GaugeOpts{Name: "cached_objects", Help: objectsHelp,
		ConstLabels: prometheus.Labels{"kind": "budget"}}, objects(func(_, b, _ int) int { return b }))
	f.NewGaugeFunc(prometheus.GaugeOpts{Name: "cached_objects", Help: objectsHelp,
		ConstLabels: prometheus.Labels{"kind": "pod"}}, objects(func(_, _, p int) int { return p }))
	return &Metrics{
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		decisions: f.NewCounterVec(prometheus.CounterOpts{Name: "decisions_total",
			Help: "Authorization decisions, by gateway, result (allowed, refused, unavailable) and reason."},
			[]string{"gateway", "result", "reason"}),
		duration: f.NewHistogram(prometheus.HistogramOpts{Name: "decision_duration_seconds",
			Help:    "Time from an authorization call's headers to its answer.",
			Buckets: []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, .025}}),
		unknown: f.NewCounterVec(prometheus.CounterOpts{Name: "unknown_callers_total",
			Help: "Calls whose caller could not be told, by gateway; the unknownCaller policy decided them."},
			[]string{"gateway"}),
		stale: f.NewCounterVec(prometheus.CounterOpts{Name: "stale_decisions_total",
			Help: "Decisions made while the cache was unsynced or older than the config's maxCacheAge, by gateway."},
			[]string{"gateway"}),
		untrusted: f.NewCounter(prometheus.CounterOpts{Name: "untrusted_calls_total",
			Help: "Calls refused because their peer is no configured gateway."}),
	}
}

func (m *Metrics) observe(gateway string, d authz.Decision, took time.Duration) {
	m.decisions.WithLabelValues(gateway, string(d.Result), string(d.Reason)).Inc()
	m.duration.Observe(took.Seconds())
	if d.Reason == authz.ReasonUnknownCaller {
		m.unknown.WithLabelValues(gateway).Inc()
	}
	if d.Stale != "" {
		m.stale.WithLabelValues(gateway).Inc()
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler { return m.handler }
