package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/promspend"
	"github.com/llmbudget/llmbudget/internal/spendwriter"
)

type spendFlags struct {
	files, queries      fileList
	budget, prometheus  string
	source, modelLabel  string
	sel                 promspend.Selection
	prices, now, output string
	step, timeout       time.Duration
	printQuery, stepSet bool
	src                 promspend.Source // of --source or --query
	clock               func() time.Time // of --now

	// --all: every budget of the cluster (or of -n) that declares spec.costSource.prometheus.
	all, forceConflicts      bool
	namespace                string
	kubeconfig               string
	requestTimeout, deadline time.Duration
	settle                   time.Duration
	checkpoints              string
	concurrency, burst       int
	qps                      float64

	// --loop: the long-running, leader-elected writer.
	loop                                   bool
	interval                               time.Duration
	leaseName, leaseNamespace, identity    string
	leaseDuration, renewDeadline, retryFor time.Duration
	metricsAddr                            string
	burnWindow                             time.Duration
}

// allOnly are the flags only --all takes.
var allOnly = []string{"n", "kubeconfig", "force-conflicts", "request-timeout", "deadline", "concurrency", "qps",
	"burst", "checkpoints-namespace", "settle", "loop", "interval", "lease-name", "lease-namespace", "identity",
	"lease-duration", "renew-deadline", "retry-period", "metrics-addr", "burn-window"}

// loopOnly are the flags only --loop takes.
var loopOnly = []string{"interval", "lease-name", "lease-namespace", "identity", "lease-duration", "renew-deadline",
	"retry-period", "metrics-addr"}

var spendCommand = command{
	name: "spend",
	synopsis: "-f FILE [--budget NS/NAME] --prometheus URL " +
		"[--source litellm|vllm|otel-genai | --query MEASURE=SELECTOR]\n" +
		"       llmbudget spend --all --prometheus URL [-n NAMESPACE] [--kubeconfig FILE] [--now RFC3339] [--timeout D]\n" +
		"         [--request-timeout D] [--deadline D] [--concurrency N] [--qps N] [--burst N]\n" +
		"         [--checkpoints-namespace NAMESPACE [--settle D]] [--burn-window D]\n" +
		"         [--loop [--interval D] [--lease-name NAME] [--lease-namespace NAMESPACE] [--identity NAME]\n" +
		"          [--lease-duration D] [--renew-deadline D] [--retry-period D] [--metrics-addr ADDR]]",
	summary: "compute budgets' spend from Prometheus: print a spend ConfigMap, or write them all",
	about: `Computes the spend of a budget's current period, in its own time zone, from the
Prometheus counters of LiteLLM, vLLM or OpenTelemetry GenAI (or your own).

With -f it prints the budget's spend ConfigMap in its costSource format, labelled
llmbudget.dev/spend-source (a budget reads no other), with the annotations
llmbudget.dev/spend-as-of (the evaluation time) and, for Total, llmbudget.dev/period-start.
Without --source or --query it reads the budget's spec.costSource.prometheus (with
--prices for a token-only source). Prints nothing and exits 1 when Prometheus cannot be
reached, refuses a query, or has no series for the period, so a failed run leaves the
ConfigMap as it was. --print-query shows the PromQL without querying. All of a budget's
answers together hold at most 20,000 series and 16 MiB; a ConfigMap of more than 1 MiB
(what the API server stores) is refused.

With --all it is the cluster's spend writer: it reads every LLMCostBudget with
spec.costSource.prometheus from the API server (of namespace -n only, when given; the
kubeconfig of --kubeconfig or $KUBECONFIG, else the Pod's service account), computes
each one's spend (its price table read from the ConfigMap
spec.costSource.prometheus.prices names, which must be labelled
llmbudget.dev/spend-source) and writes it into the budget's ConfigMap by server-side
apply as field manager llmbudget-spend: creating the ConfigMap if missing, labelling it
llmbudget.dev/spend-source (a label already there keeps its value), never touching keys
it does not own, never deleting one. It logs one JSON line per budget on stderr with the
figures written. A budget that fails is logged with its reason, gets a Warning Event
SpendWriteFailed, keeps its ConfigMap as it was, and stops no other. --timeout then
bounds each budget. A key another field manager owns is a conflict that fails the
budget; --force-conflicts takes such keys over (once, to hand a ConfigMap over from an
earlier writer).

Bounds of --all: each call to the API server (a page of 500 budgets, a Get, an apply,
an Event) ends within --request-timeout; --concurrency budgets (at most 64) are computed
at once, so a hung Prometheus holds one worker for at most --timeout, and their answers
share an eighth of GOMEMLIMIT (32 MiB without it): a budget whose answers find it taken
asks again once its own 16 MiB are free, and one refused by either cap fails with its
Event; the run ends within --deadline (with --loop, each run does),
computing until 10s before it and failing, with its Event, each budget not written by
then; --qps and --burst pace the API calls (about ceil(N/500) + 2N for N budgets, and 2
per budget namespace with --checkpoints-namespace: 10,000 in 200 namespaces take 102s at
200 qps).

With --checkpoints-namespace, a Total budget's growth up to --settle (10m) before the
run is kept, one ConfigMap per budget namespace (llmbudget-spend-checkpoints.<namespace>)
in that namespace, which no budgeted team may write: the next run of the period asks
Prometheus only for what came after it, so a run's queries no longer grow with the days
the period has run. A checkpoint that cannot be read or written, or whose growth no
counter makes (negative, not finite, fractional tokens), only costs that budget its
whole period again. The figures are those of a query over the whole period, but
for samples that reach Prometheus more than --settle late.

While a budget's spend grows, --all writes beside its figures the burn rate
(llmbudget.dev/burn-rate): the growth over the last --burn-window (1m) in USD per hour,
for the budget and each model it limits in USD, and when the latest sample counted was
taken. A budget blocks where that rate takes its spend to a USD limit
(spec.enforcement.blockOn Projected); a rate that cannot be computed is logged, and the
figures are written without it.

With --loop it runs until stopped, as the replicas of a Deployment: the one that holds
the coordination.k8s.io Lease --lease-name in --lease-namespace (default $POD_NAMESPACE)
runs the writer every --interval (15s), the others wait to take the Lease over. Each run
goes on from the checkpoints the last one kept in memory (stored at most every 5m), and
writes only the budgets whose figures changed, or whose llmbudget.dev/spend-as-of is a
third of their maxAge old. --deadline bounds each run. A leader that cannot renew the
Lease within --renew-deadline stops writing and exits 1, so that its Pod restarts as a
follower; on SIGTERM it hands the Lease back and exits 0. Its identity in the Lease is
--identity (default $POD_NAME, else the host name). It serves its metrics on
--metrics-addr (/metrics; /healthz answers while it runs).

exit status:
  0  the ConfigMap was printed (or, with --print-query, the PromQL); with --all, every
     budget's spend was written
  1  failure: with -f, nothing printed: a budget or price table that cannot be read,
     Prometheus unreachable or refusing a query, no series for the current period, a
     model without price, a ConfigMap over 1 MiB; with --all, any budget whose spend was
     not written for those reasons, a conflict or the deadline, or budgets that cannot
     be listed
  2  usage: an unknown flag, neither -f nor --all (or both), both --source and --query, a
     --match that is not a PromQL label matcher, a --step that does not divide 15m, a
     --now that is not RFC 3339, a flag of -f given with --all, a --timeout,
     --request-timeout, --deadline, --settle, --concurrency, --qps or --burst of 0 or less,
     a --concurrency above 64, a --loop flag without --loop, an --interval,
     --lease-duration, --renew-deadline or --retry-period of 0 or less, a --renew-deadline
     not below --lease-duration, a --retry-period not below --renew-deadline, or --loop
     without --lease-namespace or $POD_NAMESPACE`,
	run: spendCmd,
}

func parseSpendFlags(args []string) (spendFlags, error) {
	var f spendFlags
	fs := newFlagSet("spend")
	f.defineOne(fs)
	f.defineAll(fs)
	if err := parseFlags(fs, args); err != nil {
		return f, err
	}
	if err := f.checkBounds(fs); err != nil {
		return f, err
	}
	if f.all {
		return f, f.checkAll(fs)
	}
	return f, f.checkOne(fs)
}

// defineOne defines the flags of one budget's spend, and those both forms take.
func (f *spendFlags) defineOne(fs *flag.FlagSet) {
	fs.Var(&f.files, "f", "YAML or JSON file with the budget (repeatable; - for stdin)")
	fs.StringVar(&f.budget, "budget", "", "namespace/name of the budget, when the files hold several")
	fs.StringVar(&f.prometheus, "prometheus", "", "Prometheus (or Thanos, Mimir) query URL, like http://prometheus:9090")
	fs.StringVar(&f.source, "source", "", "litellm, vllm or otel-genai")
	fs.Var(&f.queries, "query",
		"measure=SELECTOR for your own counters: cost=, input=, output= (repeatable; instead of --source)")
	fs.StringVar(&f.modelLabel, "model-label", "model", "label naming the model, with --query")
	fs.StringVar(&f.sel.Team, "team", "", "litellm: the LiteLLM team id (label team)")
	fs.StringVar(&f.sel.Key, "key", "", "litellm: the hashed API key (label hashed_api_key)")
	fs.StringVar(&f.sel.Namespace, "namespace", "", "vllm: the namespace of the vLLM pods (label namespace)")
	fs.Var((*fileList)(&f.sel.PodLabels), "pod-label",
		"vllm: label=value copied from the pods onto the series (repeatable)")
	fs.StringVar(&f.sel.Service, "service", "", "otel-genai: the service.name (label job)")
	fs.Var((*fileList)(&f.sel.Match), "match", `extra matcher for every series, like env="prod" (repeatable)`)
	fs.StringVar(&f.prices, "prices", "", "price table (YAML, at most 1 MiB) for sources that count tokens only, "+
		"or the ConfigMap holding it")
	fs.DurationVar(&f.step, "step", api.DefaultStep, "evaluation step: at most the scrape interval, dividing 15m")
	fs.StringVar(&f.now, "now", "", "evaluation time, RFC 3339 (default: the current time)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "time allowed for all queries (with --all: for each budget)")
	fs.BoolVar(&f.printQuery, "print-query", false, "print the PromQL and exit without querying")
	fs.StringVar(&f.output, "o", "", "write the ConfigMap to this file instead of stdout")
	fs.BoolVar(&f.all, "all", false, "write the spend of every budget with spec.costSource.prometheus into its ConfigMap")
}

// defineAll defines the flags only --all takes.
func (f *spendFlags) defineAll(fs *flag.FlagSet) {
	fs.StringVar(&f.namespace, "n", "", "with --all: only the budgets of this namespace")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "",
		"with --all: kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)")
	fs.BoolVar(&f.forceConflicts, "force-conflicts", false,
		"with --all: take over the keys another field manager owns")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 20*time.Second,
		"with --all: time allowed for each call to the API server")
	fs.DurationVar(&f.deadline, "deadline", 200*time.Second,
		"with --all: time allowed for the whole run (with --loop, for each run)")
	fs.IntVar(&f.concurrency, "concurrency", 8, "with --all: budgets computed at once, at most 64")
	fs.Float64Var(&f.qps, "qps", 200, "with --all: API calls per second, on average")
	fs.IntVar(&f.burst, "burst", 400, "with --all: API calls in a burst above --qps")
	fs.StringVar(&f.checkpoints, "checkpoints-namespace", "",
		"with --all: namespace of the checkpoints of Total budgets (none when empty)")
	fs.DurationVar(&f.settle, "settle", 10*time.Minute,
		"with --all: how far behind the run a checkpoint lies, for samples that arrive late")
	fs.DurationVar(&f.burnWindow, "burn-window", promspend.DefaultRateWindow, "with --all: how far back the burn "+
		"rate written with the figures looks, a whole number of each budget's step up to 1h; 0 writes none")
	fs.BoolVar(&f.loop, "loop", false, "with --all: run until stopped, leader-elected, every --interval")
	fs.DurationVar(&f.interval, "interval", 15*time.Second, "with --loop: from one run's start to the next")
	fs.StringVar(&f.leaseName, "lease-name", "llmbudget-spend-writer", "with --loop: the Lease the replicas elect by")
	fs.StringVar(&f.leaseNamespace, "lease-namespace", os.Getenv("POD_NAMESPACE"),
		"with --loop: the Lease's namespace (default $POD_NAMESPACE)")
	fs.StringVar(&f.identity, "identity", "", "with --loop: this replica's name in the Lease "+
		"(default $POD_NAME, else the host name)")
	fs.DurationVar(&f.leaseDuration, "lease-duration", 15*time.Second,
		"with --loop: how long followers wait, after the last renewal, to take the Lease")
	fs.DurationVar(&f.renewDeadline, "renew-deadline", 10*time.Second,
		"with --loop: how long the leader tries to renew before it stops writing and exits")
	fs.DurationVar(&f.retryFor, "retry-period", 2*time.Second, "with --loop: the wait between tries at the Lease")
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":9090", "with --loop: address of /metrics; empty for none")
}

// checkOne refuses what one budget's spend cannot take, and reads --source or --query and --now.
func (f *spendFlags) checkOne(fs *flag.FlagSet) error {
	var onlyAll []string
	fs.Visit(func(fl *flag.Flag) {
		if slices.Contains(allOnly, fl.Name) {
			onlyAll = append(onlyAll, "-"+fl.Name)
		}
	})
	switch {
	case fs.NArg() > 0:
		return badUsage(fs, "unexpected argument %q", fs.Arg(0))
	case len(onlyAll) > 0:
		return badUsage(fs, "%s: only with --all", strings.Join(onlyAll, ", "))
	case len(f.files) == 0:
		return badUsage(fs, "no budget: give -f FILE, or --all for every budget of the cluster")
	case stdinTwice(f.files):
		return badUsage(fs, "-f - given twice: stdin can be read only once")
	case f.source != "" && len(f.queries) > 0:
		return badUsage(fs, "give either --source or --query, not both")
	case f.prometheus == "" && !f.printQuery:
		return badUsage(fs, "no --prometheus URL")
	}
	fs.Visit(func(fl *flag.Flag) { f.stepSet = f.stepSet || fl.Name == "step" })
	for _, m := range f.sel.Match {
		if !api.ValidMatcher(m) {
			return badUsage(fs, "--match %q: want a PromQL label matcher, like env=\"prod\" or region=~\"eu-.*\"", m)
		}
	}
	if f.step <= 0 || api.StepDivides%f.step != 0 {
		return badUsage(fs, "--step %s: want a step that divides 15m, like 15s or 1m", f.step)
	}
	// What the flags say is checked here, so that a misspelt --source is a usage error like a missing one.
	// Without either flag the budget's spec.costSource.prometheus says, read once the budget is.
	var err error
	if f.source != "" || len(f.queries) > 0 {
		if f.src, err = f.sourceOf(); err != nil {
			return &usageError{fs: fs, err: err}
		}
	}
	if f.clock, err = parseClock(f.now, "2026-11-20T12:00:00Z"); err != nil {
		return &usageError{fs: fs, err: err}
	}
	return nil
}

// checkBounds refuses a bound of 0 or less, which would remove it (a --timeout of 0 once meant no timeout) or
// stop everything.
func (f *spendFlags) checkBounds(fs *flag.FlagSet) error {
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"timeout", f.timeout}, {"request-timeout", f.requestTimeout}, {"deadline", f.deadline},
		{"settle", f.settle}, {"interval", f.interval}, {"lease-duration", f.leaseDuration},
		{"renew-deadline", f.renewDeadline}, {"retry-period", f.retryFor}} {
		if d.value <= 0 {
			return badUsage(fs, "--%s %s: want a duration above 0, like 20s", d.name, d.value)
		}
	}
	for _, n := range []struct {
		name  string
		value float64
	}{{"concurrency", float64(f.concurrency)}, {"qps", f.qps}, {"burst", float64(f.burst)}} {
		if !(n.value > 0) { // NaN too
			return badUsage(fs, "--%s %v: want a number above 0", n.name, n.value)
		}
	}
	if f.concurrency > spendwriter.MaxConcurrency {
		return badUsage(fs, "--concurrency %d: want at most %d budgets computed at once "+
			"(their answers share the run's memory, so more only hold more connections)",
			f.concurrency, spendwriter.MaxConcurrency)
	}
	return nil
}

// checkAll refuses, with --all, what only a single budget's run takes: each budget's own stanza says.
func (f *spendFlags) checkAll(fs *flag.FlagSet) error {
	var single []string
	fs.Visit(func(fl *flag.Flag) {
		if !slices.Contains(allOnly, fl.Name) && !slices.Contains([]string{"all", "prometheus", "now", "timeout"},
			fl.Name) {
			single = append(single, "-"+fl.Name)
		}
	})
	switch {
	case fs.NArg() > 0:
		return badUsage(fs, "unexpected argument %q", fs.Arg(0))
	case len(single) > 0:
		return badUsage(fs, "%s with --all: each budget's spec.costSource.prometheus says what to read",
			strings.Join(single, ", "))
	case f.prometheus == "":
		return badUsage(fs, "no --prometheus URL")
	case f.burnWindow < 0 || f.burnWindow > time.Hour:
		return badUsage(fs, "--burn-window %s: want a duration from 0 to 1h", f.burnWindow)
	}
	if f.namespace != "" {
		if msgs := validation.IsDNS1123Label(f.namespace); len(msgs) > 0 {
			return badUsage(fs, "-n %q: not a namespace name: %s", f.namespace, strings.Join(msgs, "; "))
		}
	}
	if err := f.checkLoop(fs); err != nil {
		return err
	}
	var err error
	if f.clock, err = parseClock(f.now, "2026-11-20T12:00:00Z"); err != nil {
		return &usageError{fs: fs, err: err}
	}
	return nil
}

// checkLoop refuses a --loop flag without --loop, and a Lease's timing that client-go's leader election refuses.
func (f *spendFlags) checkLoop(fs *flag.FlagSet) error {
	var given []string
	fs.Visit(func(fl *flag.Flag) {
		if slices.Contains(loopOnly, fl.Name) {
			given = append(given, "-"+fl.Name)
		}
	})
	switch {
	case !f.loop && len(given) > 0:
		return badUsage(fs, "%s: only with --loop", strings.Join(given, ", "))
	case !f.loop:
		return nil
	case f.leaseNamespace == "":
		return badUsage(fs, "--loop: no --lease-namespace, and no $POD_NAMESPACE to default it")
	case f.renewDeadline >= f.leaseDuration:
		return badUsage(fs, "--renew-deadline %s: want it below --lease-duration (%s), so that a leader stops "+
			"writing before another may take the Lease", f.renewDeadline, f.leaseDuration)
	case f.retryFor >= f.renewDeadline:
		return badUsage(fs, "--retry-period %s: want it below --renew-deadline (%s)", f.retryFor, f.renewDeadline)
	case f.now != "":
		return badUsage(fs, "--now with --loop: each run is at its own time")
	}
	if msgs := validation.IsDNS1123Label(f.leaseNamespace); len(msgs) > 0 {
		return badUsage(fs, "--lease-namespace %q: not a namespace name: %s", f.leaseNamespace,
			strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(f.leaseName); len(msgs) > 0 {
		return badUsage(fs, "--lease-name %q: not an object name: %s", f.leaseName, strings.Join(msgs, "; "))
	}
	return nil
}

func spendCmd(args []string, std stdio) error {
	f, err := parseSpendFlags(args)
	if err != nil {
		return err
	}
	if f.all {
		return spendAll(f, std)
	}
	return spendOne(f, std)
}

// spendOne is spend -f: one budget's spend ConfigMap, printed.
func spendOne(f spendFlags, std stdio) error {
	b, err := pickBudget(f.files, f.budget, std.in)
	if err != nil {
		return err
	}
	src, step, now := f.src, f.step, f.clock()
	if src.Series == nil {
		if src, step, err = f.declared(b); err != nil {
			return err
		}
	}
	plan, err := promspend.NewPlan(b.Spec, now, src, step)
	if err != nil {
		return fmt.Errorf("budget %s/%s: %w", b.Namespace, b.Name, err)
	}
	// A broken price table is refused before anything is printed, --print-query or not.
	var prices *promspend.Prices
	if f.prices != "" {
		if prices, err = readPrices(f.prices); err != nil {
			return err
		}
	}
	if f.printQuery {
		for _, q := range plan.Queries {
			fmt.Fprintf(std.out, "# %s %s\n%s\n", plan.Windows[q.Window].Key, q.Measure, q.PromQL)
		}
		return nil
	}
	if prices == nil && src.TokensOnly() {
		what := "source " + f.source
		switch {
		case len(f.queries) > 0:
			what = "--query without cost="
		case f.source == "":
			what = "the budget's spec.costSource.prometheus"
		}
		return fmt.Errorf("%s counts tokens only: give a price table with --prices", what)
	}
	computed, err := compute(f, plan, prices, std.err)
	if err != nil {
		return err
	}
	// A budget reads only a labelled ConfigMap, as the spend writer writes them.
	name := b.Spec.CostSource.ConfigMapName
	out, err := yaml.Marshal(spendwriter.ConfigMap(b.Namespace, name, name, promspend.Encode(computed.Figures),
		computed.Annotations))
	if err != nil {
		return err
	}
	if err := promspend.CheckConfigMapSize(b.Namespace+"/"+name, out); err != nil {
		return fmt.Errorf("budget %s/%s: %w", b.Namespace, b.Name, err)
	}
	if f.output != "" {
		return os.WriteFile(f.output, out, 0o644)
	}
	_, err = std.out.Write(out)
	return err
}

// declared is the source and step of the budget's spec.costSource.prometheus; --step, when given, wins.
func (f spendFlags) declared(b manifest.Budget) (promspend.Source, time.Duration, error) {
	p := b.Spec.CostSource.Prometheus
	if p == nil {
		return promspend.Source{}, 0, fmt.Errorf("budget %s/%s has no spec.costSource.prometheus: "+
			"declare one, or give --source or --query", b.Namespace, b.Name)
	}
	src, err := promspend.FromSpec(p)
	if err != nil {
		return src, 0, fmt.Errorf("budget %s/%s: spec.costSource.prometheus: %w", b.Namespace, b.Name, err)
	}
	if f.stepSet {
		return src, f.step, nil
	}
	return src, p.StepDuration(), nil
}

func (f spendFlags) sourceOf() (promspend.Source, error) {
	if f.source != "" {
		return promspend.Preset(f.source, f.sel)
	}
	src := promspend.Source{ModelLabel: f.modelLabel, Series: map[promspend.Measure][]string{}}
	for _, q := range f.queries {
		m, sel, _ := strings.Cut(q, "=")
		switch promspend.Measure(m) {
		case promspend.Cost, promspend.Input, promspend.Output:
			src.Series[promspend.Measure(m)] = []string{sel}
		default:
			return src, fmt.Errorf("--query %q: want cost=, input= or output= and a series selector", q)
		}
	}
	return src, nil
}

// pickBudget returns the one budget in files, or the one named ns/name.
func pickBudget(files []string, name string, stdin io.Reader) (manifest.Budget, error) {
	set, err := manifest.Read(files, stdin)
	if err != nil {
		return manifest.Budget{}, err
	}
	found := slices.DeleteFunc(set.Budgets, func(b manifest.Budget) bool {
		return name != "" && name != b.Namespace+"/"+b.Name
	})
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0 && name != "":
		return manifest.Budget{}, fmt.Errorf("no LLMCostBudget %s in %s", name, strings.Join(files, ", "))
	case len(found) == 0:
		return manifest.Budget{}, fmt.Errorf("no LLMCostBudget in %s", strings.Join(files, ", "))
	}
	return manifest.Budget{}, fmt.Errorf("%d budgets in %s: choose one with --budget namespace/name",
		len(found), strings.Join(files, ", "))
}

// compute is the budget's spend by the spend writer's own computation (promspend.Compute), asking --prometheus
// within --timeout and printing Prometheus' warnings; the burn rate is the writer's alone.
func compute(f spendFlags, plan promspend.Plan, prices *promspend.Prices, stderr io.Writer) (promspend.Spend, error) {
	prom, err := prometheus(f.prometheus)
	if err != nil {
		return promspend.Spend{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	ask := func(ctx context.Context, p promspend.Plan) ([]model.Vector, func(), error) {
		answers, err := p.Ask(ctx, prom, func(_ promspend.Query, warning string) {
			// Quoted: a Prometheus's text must not move the terminal's cursor or forge lines.
			fmt.Fprintf(stderr, "llmbudget spend: warning from Prometheus: %s\n", strconv.Quote(warning))
		})
		return answers, func() {}, err
	}
	s, err := promspend.Compute(ctx, plan, ask, prices, 0, nil)
	if err != nil {
		return s, causeFirst(f.prometheus, f.timeout, err)
	}
	return s, nil
}

// prometheus is the client of --prometheus, bounded as promspend.DefaultLimits says.
func prometheus(url string) (*promspend.Client, error) {
	prom, err := promspend.NewClient(url, promspend.DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("--prometheus %q: %w", url, err)
	}
	return prom, nil
}

// spendAll is spend --all: the cluster's spend writer.
func spendAll(f spendFlags, std stdio) error {
	cfg, err := kubeConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "llmbudget-spend/" + version
	// client-go's default of 5 calls a second took 79s for 200 budgets; --qps and --burst size it for thousands.
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	prom, err := prometheus(f.prometheus)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(std.err, nil))
	// The answers of the budgets computed at once share an eighth of the memory limit.
	w := spendwriter.Writer{Kube: kube, Dynamic: dyn, Prometheus: prom, Log: log, Timeout: f.timeout,
		RequestTimeout: f.requestTimeout, Concurrency: f.concurrency, Force: f.forceConflicts,
		Checkpoints: f.checkpoints, Settle: f.settle, RateWindow: f.burnWindow,
		Memory: spendwriter.MemoryFor(debug.SetMemoryLimit(-1))}
	if f.loop {
		return spendLoop(f, w, kube, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.deadline)
	defer cancel()
	res, err := w.Run(ctx, f.namespace, f.clock())
	if err != nil {
		return err
	}
	failed := append([]string{}, res.Failed...) // [] rather than null for a log reader's jq
	log.Info("spend writer done", "written", len(res.Written), "failed", len(failed), "failedBudgets", failed)
	if len(res.Failed) > 0 {
		return reported{fmt.Errorf("%d of %d budgets failed", len(res.Failed), len(res.Failed)+len(res.Written))}
	}
	return nil
}

// kubeConfig is the API server's client configuration: of the kubeconfig file named, or of $KUBECONFIG, else the
// Pod's service account.
func kubeConfig(file string) (*rest.Config, error) {
	if file == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig and no $KUBECONFIG, and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = file
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// causeFirst puts why Prometheus could not be asked (connection refused, no such host, no answer in time) on a
// short line of its own before the whole error, whose query would otherwise bury it at the end of a long line.
func causeFirst(prometheus string, timeout time.Duration, err error) error {
	cause := unreachable(err, timeout)
	if cause == "" {
		return err
	}
	if u, perr := url.Parse(prometheus); perr == nil {
		prometheus = u.Redacted()
	}
	return fmt.Errorf("cannot reach Prometheus at %s: %s\n%w", prometheus, cause, err)
}

// unreachable is, in a few words, why a request did not reach Prometheus or get its answer; "" when it did.
func unreachable(err error, timeout time.Duration) string {
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot look up " + dns.Name + ": " + dns.Err
	}
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		return errno.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within --timeout (%s)", timeout)
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if ue.Timeout() {
			return fmt.Sprintf("no answer within --timeout (%s)", timeout)
		}
		return ue.Err.Error()
	}
	return ""
}
