// Package spendwriter is the cluster's spend writer (`llmbudget spend --all`): for every LLMCostBudget whose
// spec.costSource.prometheus says where its usage is, it computes the current period's spend (package promspend)
// and writes it into the budget's spend ConfigMap by server-side apply. It is the only package of llmbudget that
// talks to the API server; the hook service never imports it.
//
// Expected Flow:
//  1. List the LLMCostBudgets (of one namespace, or all) in pages of PageSize, and keep those with
//     spec.costSource.prometheus.
//  2. For each, Concurrency at a time, handed out in namespace/name order: plan its queries for its own period
//     and zone at the evaluation instant, going on, for Total, from its checkpoint when Checkpoints names where
//     they are kept (read once per budget namespace), read its price table when the source counts tokens only,
//     query Prometheus, compute the figures.
//  3. Read its spend ConfigMap, and apply, as field manager FieldManager, the figures, the keys this manager
//     already owns that the figures leave out (a finished ledger day Prometheus no longer holds), the label
//     api.LabelSpendSource, and the annotations api.AnnotationSpendAsOf and, for Total, api.AnnotationPeriodStart.
//  4. Log one JSON line per budget; on failure post a Warning Event SpendWriteFailed on the budget.
//  5. With Checkpoints, once a budget namespace's last budget is done, apply its checkpoints if they changed: the
//     written budgets' new ones, the others' as they were, none of a budget no longer listed.
//
// Guarantees:
//   - Keys of other managers are never touched and nothing is deleted: server-side apply removes only what this
//     manager applied before and omits now, and it re-applies every key it owns.
//   - Only a price table labelled api.LabelSpendSource is read: the admission policy lets only the spend writers
//     change one, and whoever could lower a price could lift the block.
//   - A budget's failure (an invalid spec, a price table missing, unlabelled or broken, Prometheus refusing a query or
//     finding no series, a model without price, a conflict with another manager over a key) leaves its ConfigMap
//     as it was and stops no other budget.
//   - An apply with the same figures at the same instant changes nothing (the resourceVersion stays).
//   - Every call to the API server ends within RequestTimeout, and the run within its context's deadline: the
//     budgets are computed until EventReserve before it, so that the budgets not written by then (one whose
//     Prometheus hangs, those never reached) still get their Event and log line. A hung Prometheus holds one of
//     the Concurrency workers for at most Timeout.
//   - One budget's answers hold at most Allowance (promspend.DefaultAllowance), and a ConfigMap past
//     promspend.MaxConfigMapBytes is never applied: the budget fails, naming the cap.
//   - The answers of all the budgets computed at once hold at most Memory bytes together (MemoryFor: an eighth of
//     the memory limit), however many there are (at most MaxConcurrency): a budget whose answers find it taken
//     asks again once its Allowance's bytes are free, waiting for them within Timeout, and one whose answers pass
//     it alone fails; either way a budget not written gets its Event.
//   - A checkpoint is read only from Checkpoints, the writer's own namespace, which no budgeted team may write: a
//     lowered checkpoint would lower spend. One that cannot be read, or is not of the budget's current period,
//     source and step, is not used, and a namespace's that cannot be written (past promspend.MaxConfigMapBytes:
//     some 3,000 budgets) is logged: either costs only the budget's whole period asked again.
//   - With Kept (Loop: `--loop`), a run goes on from the checkpoints the last run of the term kept in memory,
//     stores a namespace's that changed at most every CheckpointsEvery, and applies a budget's ConfigMap only when
//     its figures differ from those it holds or its spend-as-of is a third of the budget's maxAge old. A term
//     starts from nothing kept: it reads what is stored.
//
// Assumptions:
//   - One writer runs at a time (Loop's leader, by its Lease); two would only apply the same figures.
//
// Caveats:
//   - A key another manager owns is a conflict: the budget fails and says who owns it, unless Force takes the key
//     over (`--force-conflicts`, for the one run that hands a ConfigMap over from an earlier writer).
package spendwriter

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/promspend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// Names the writer uses on what it writes.
const (
	// FieldManager owns the keys, label and annotations the writer applies.
	FieldManager = "llmbudget-spend"
	// Component is its Events' source.component.
	Component = "llmbudget-spend"
	// ReasonSpendWriteFailed is the reason of the Warning Event on a budget whose spend was not written.
	ReasonSpendWriteFailed = "SpendWriteFailed"
)

// maxMessage bounds a reason in a log line or an Event message.
const maxMessage = 1024

// PageSize is how many budgets one page of the list holds: pages are decoded one at a time.
const PageSize = 500

// MaxConcurrency is the most budgets a run computes at once: more only hold more connections to Prometheus and the
// API server, since Memory bounds their answers together.
const MaxConcurrency = 64

// DefaultMemory is the bytes of answers that the budgets computed at once hold together, when Writer.Memory is 0:
// twice promspend.DefaultAllowance's 16 MiB, so that two budgets at their cap may be computed at once. An answer
// held takes about twice its bytes (its body and its decoded series), and the garbage collector lets the heap grow
// past what is live, so a run holds about 200 MiB with the largest answers: within the Deployment's 256Mi.
const DefaultMemory = 32 << 20

// MemoryFor is the Memory of a process whose memory limit (GOMEMLIMIT; math.MaxInt64 for none) is limit: an eighth
// of it, DefaultMemory for the Deployment's 256Mi, and at least one budget's promspend.DefaultAllowance.
func MemoryFor(limit int64) int64 {
	if limit == math.MaxInt64 {
		return DefaultMemory
	}
	return max(limit/8, promspend.DefaultAllowance.Body)
}

// shareStart is what a budget's answers take of the run's Memory before it asks Prometheus: far more than a
// budget's answers hold (a series per model and window, a few hundred bytes each), and 64 of them take an eighth
// of DefaultMemory.
const shareStart = 64 << 10

// EventReserve is how long before the run's deadline the computing stops, so that the budgets not written get
// their Events; a deadline under 5 times as far away keeps a fifth of it.
const EventReserve = 10 * time.Second

// budgets is the resource the writer lists.
var budgets = schema.GroupVersionResource{Group: api.Group, Version: api.Version, Resource: api.Resource}

// Writer writes the spend of the budgets with a Prometheus source.
type Writer struct {
	Kube           kubernetes.Interface // ConfigMaps and Events
	Dynamic        dynamic.Interface    // LLMCostBudgets
	Prometheus     promspend.Querier
	Log            *slog.Logger
	Timeout        time.Duration       // for one budget's reads, queries and writes; 0 is none
	RequestTimeout time.Duration       // for each call to the API server (a page, a Get, an Apply); 0 is none
	Concurrency    int                 // budgets computed at once; 0 is 1, and at most MaxConcurrency
	Allowance      promspend.Allowance // of one budget's answers; zero is promspend.DefaultAllowance
	// Memory is the bytes of answers (bodies, after decompression) the budgets computed at once hold together; 0 is
	// DefaultMemory. A budget that would pass it waits for its whole Allowance.Body instead.
	Memory int64
	Force  bool // take over keys another manager owns
	// Checkpoints is the namespace of the checkpoint ConfigMaps (CheckpointPrefix), where no budgeted team may
	// write; "" keeps none, and every run asks for each budget's whole period.
	Checkpoints string
	Settle      time.Duration // how far behind a run its checkpoint lies (promspend.Plan.Resume)
	// RateWindow is how far back the burn rate written with the figures looks (promspend.Plan.RatePlan); 0 writes
	// none.
	RateWindow time.Duration
	// Kept is what a long-running writer carries from one run to the next (Loop); nil for a single run.
	Kept *Kept
}

// Result is what a run did.
type Result struct {
	Written []string // namespace/name of each budget whose spend was written
	Failed  []string // and of each whose spend was not
	// Unchanged are the budgets whose figures, with Kept, were those their ConfigMap already held, recently
	// enough: they were not written again.
	Unchanged []string
}

// Run writes the spend at now of every budget of namespace ("" for all) with spec.costSource.prometheus, until
// ctx's deadline. Its error is for a run that could not start (the budgets cannot be listed); a budget's failure,
// and a budget not reached in time, is in Result.Failed.
func (w Writer) Run(ctx context.Context, namespace string, now time.Time) (Result, error) {
	work, cancel := computing(ctx)
	defer cancel()
	items, err := w.list(work, namespace)
	if err != nil {
		return Result{}, err
	}
	outcomes := make([]outcome, len(items))
	next := make(chan int)
	var wg sync.WaitGroup
	r := runState{tables: &priceTables{m: map[string]*priceTable{}},
		memory: promspend.NewMemory(cmp.Or(w.Memory, DefaultMemory))}
	if w.Checkpoints != "" {
		r.checkpoints = newCheckpoints(w, items, now)
	}
	for range min(max(w.Concurrency, 1), MaxConcurrency) {
		wg.Go(func() {
			for i := range next {
				outcomes[i] = w.one(ctx, work, items[i], now, r)
				r.checkpoints.done(ctx, items[i].namespace)
			}
		})
	}
	for i := range items {
		next <- i
	}
	close(next)
	wg.Wait()
	var res Result
	for i, it := range items {
		name := it.namespace + "/" + it.name
		switch outcomes[i] {
		case failed:
			res.Failed = append(res.Failed, name)
		case unchanged:
			res.Unchanged = append(res.Unchanged, name)
		default:
			res.Written = append(res.Written, name)
		}
	}
	w.Kept.keepOnly(items)
	return res, nil
}

// runState is what a run's budgets share: the price tables read, the checkpoints (nil without), and the memory their
// answers take.
type runState struct {
	tables      *priceTables
	checkpoints *checkpoints
	memory      *promspend.Memory
}

// computing is the part of ctx given to computing budgets: it ends EventReserve (or a fifth of the time left)
// before ctx's deadline, leaving the rest for the Events of the budgets not written.
func computing(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-min(EventReserve, time.Until(deadline)/5)))
}

// item is a listed budget: read, or why it could not be.
type item struct {
	namespace, name string
	b               api.LLMCostBudget
	err             error
}

// list reads the budgets with spec.costSource.prometheus (and those that cannot be read), in namespace/name order,
// a page at a time, each page within RequestTimeout.
func (w Writer) list(ctx context.Context, namespace string) ([]item, error) {
	pages := 0
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		pages++
		var l *unstructured.UnstructuredList
		err := w.call(ctx, func(ctx context.Context) (err error) {
			l, err = w.Dynamic.Resource(budgets).Namespace(namespace).List(ctx, opts)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", pages, err)
		}
		return l, nil
	})
	p.PageSize, p.FullListIfExpired, p.PageBufferSize = PageSize, false, 1
	var items []item
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("listed a %T, not an object", obj)
		}
		it := item{namespace: u.GetNamespace(), name: u.GetName()}
		js, err := u.MarshalJSON()
		if err == nil {
			err = decode.Lenient(js, &it.b, "")
		}
		if err != nil {
			it.err = fmt.Errorf("budget cannot be read: %w", err)
		} else if it.b.Spec.CostSource.Prometheus == nil {
			return nil
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", budgets.GroupResource(), err)
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
	})
	return items, nil
}

// outcome is what became of one budget in a run.
type outcome int

const (
	written outcome = iota
	unchanged
	failed
)

// one writes one budget's spend while work lasts, or logs and posts why not (within ctx).
func (w Writer) one(ctx, work context.Context, it item, now time.Time, r runState) outcome {
	err := it.err
	o := failed
	switch {
	case err != nil:
	case work.Err() != nil:
		err = errors.New("not reached before the run's deadline (--deadline, less the time kept for Events): " +
			"raise --concurrency or --deadline")
	default:
		o, err = w.write(work, it.b, now, r)
		if err != nil && work.Err() != nil {
			err = fmt.Errorf("%w (the run's deadline, --deadline, passed)", err)
		}
	}
	if err != nil {
		w.fail(ctx, it.b, it.namespace+"/"+it.name, err, now)
		return failed
	}
	return o
}

// call runs f with ctx bounded by RequestTimeout, for one call to the API server, naming the bound in f's error
// when the call ran out of it.
func (w Writer) call(ctx context.Context, f func(ctx context.Context) error) error {
	c, cancel := ctx, context.CancelFunc(func() {})
	if w.RequestTimeout > 0 {
		c, cancel = context.WithTimeout(ctx, w.RequestTimeout)
	}
	defer cancel()
	err := f(c)
	if err != nil && c.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("%w (no answer within %s, the bound of each call to the API server: --request-timeout)",
			err, w.RequestTimeout)
	}
	return err
}

// write computes and applies one budget's spend, and logs what it wrote.
func (w Writer) write(ctx context.Context, b api.LLMCostBudget, now time.Time, r runState) (outcome, error) {
	if w.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.Timeout)
		defer cancel()
	}
	p := b.Spec.CostSource.Prometheus
	src, err := promspend.FromSpec(p)
	if err != nil {
		return failed, fmt.Errorf("spec.costSource.prometheus: %w", err)
	}
	plan, err := promspend.NewPlan(b.Spec, now, src, p.StepDuration())
	if err != nil {
		return failed, err
	}
	if r.checkpoints != nil && cmp.Or(b.Spec.CostSource.Format, api.Total) == api.Total {
		// Only a Total budget keeps a checkpoint: a namespace of ledgers alone reads none.
		plan = plan.Resume(r.checkpoints.get(ctx, b.Metadata.Namespace, b.Metadata.Name), w.Settle)
	}
	var prices *promspend.Prices
	if src.TokensOnly() {
		if prices, err = w.prices(ctx, b.Metadata.Namespace, p.Prices, r.tables); err != nil {
			return failed, err
		}
	}
	name := b.Metadata.Namespace + "/" + b.Metadata.Name
	allowance := w.Allowance
	if allowance == (promspend.Allowance{}) {
		allowance = promspend.DefaultAllowance
	}
	asker := func(ctx context.Context, p promspend.Plan) ([]model.Vector, func(), error) {
		answers, share, err := w.ask(ctx, p, allowance, name, r.memory)
		if share == nil {
			return answers, func() {}, err
		}
		return answers, share.Release, err
	}
	s, err := promspend.Compute(ctx, plan, asker, prices, w.RateWindow, promspend.USDModels(b.Spec))
	if qe, ok := errors.AsType[*promspend.QueryError](err); ok {
		return failed, fmt.Errorf("key %q, %s: %w", plan.Windows[qe.Query.Window].Key, qe.Query.Measure, err)
	}
	if errors.Is(err, promspend.ErrOverAllowance) {
		return failed, fmt.Errorf("budget %s: %w", name, err)
	}
	if err != nil {
		return failed, err
	}
	if s.RateErr != nil {
		w.Log.Warn("burn rate not written", "budget", name, "reason", s.RateErr)
	}
	o, err := w.apply(ctx, b, plan, s.Figures, s.Annotations)
	if err != nil {
		return failed, err
	}
	r.checkpoints.put(b.Metadata.Namespace, b.Metadata.Name, s.Next)
	return o, nil
}

// ask asks the plan's queries, its answers holding a share of the run's memory, which the caller releases once it
// no longer holds them. A share starts at shareStart and grows while the memory has bytes free; a budget whose
// answers pass that asks again once it has its allowance's bytes to itself, waiting for them until ctx ends (Timeout).
func (w Writer) ask(ctx context.Context, plan promspend.Plan, allowance promspend.Allowance, name string,
	memory *promspend.Memory) ([]model.Vector, *promspend.Share, error) {
	warn := func(q promspend.Query, warning string) {
		w.Log.Warn("warning from Prometheus", "budget", name, "query", q.PromQL, "warning", warning)
	}
	share, err := memory.Take(ctx, shareStart, true)
	if err != nil {
		return nil, nil, fmt.Errorf("waiting for %s of the run's memory for answers: %w", bytesIn(shareStart), err)
	}
	answers, err := plan.AskWithin(promspend.WithShare(ctx, share), w.Prometheus, allowance, warn)
	if !errors.Is(err, promspend.ErrOverMemory) {
		return answers, share, err
	}
	share.Release()
	whole := min(allowance.Body, memory.Size())
	if share, err = memory.Take(ctx, whole, false); err != nil {
		return nil, nil, fmt.Errorf("its answers passed what the run's memory had free, and waiting for %s of "+
			"its %s: %w", bytesIn(whole), bytesIn(memory.Size()), err)
	}
	answers, err = plan.AskWithin(promspend.WithShare(ctx, share), w.Prometheus, allowance, warn)
	return answers, share, err
}

// bytesIn is n in MiB when it is a whole number of them, else in bytes.
func bytesIn(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// apply writes figures into the budget's ConfigMap, with the keys the manager owns that figures leave out. With
// Kept, figures the ConfigMap already holds, stamped less than refresh ago, are not written again.
func (w Writer) apply(ctx context.Context, b api.LLMCostBudget, plan promspend.Plan,
	figures map[string]promspend.Usage, annotations map[string]string) (outcome, error) {
	now := plan.Now()
	ns, name := b.Metadata.Namespace, b.Spec.CostSource.ConfigMapName
	budget := ns + "/" + b.Metadata.Name
	cms := w.Kube.CoreV1().ConfigMaps(ns)
	data := promspend.Encode(figures)
	fresh := refresh(b.Spec.CostSource)
	sum := digest(name, data, annotations)
	if w.Kept.unchanged(budget, sum, now, fresh) {
		return unchanged, nil
	}
	kept := []string{} // a list in the log line even when empty
	source, version := name, ""
	var existing *corev1.ConfigMap
	err := w.call(ctx, func(ctx context.Context) (err error) {
		existing, err = cms.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return failed, fmt.Errorf("read ConfigMap %s: %w", name, err)
	default:
		if asOf, ok := holds(existing, data, annotations); ok && w.Kept != nil && now.Sub(asOf) < fresh {
			w.Kept.wrote(budget, sum, asOf, now)
			return unchanged, nil
		}
		version = existing.ResourceVersion
		// A label already there keeps its value: a ClusterLLMCostBudget may select by it.
		source = cmp.Or(existing.Labels[api.LabelSpendSource], name)
		owned, err := corev1ac.ExtractConfigMap(existing, FieldManager)
		if err != nil {
			return failed, fmt.Errorf("ConfigMap %s: the fields %s owns: %w", name, FieldManager, err)
		}
		for k, v := range owned.Data {
			if _, ok := data[k]; !ok {
				data[k] = v
				kept = append(kept, k)
			}
		}
	}
	cm := ConfigMap(ns, name, source, data, annotations)
	encoded, err := json.Marshal(cm)
	if err != nil {
		return failed, fmt.Errorf("encode ConfigMap %s: %w", name, err)
	}
	if err := promspend.CheckConfigMapSize(ns+"/"+name, encoded); err != nil {
		return failed, fmt.Errorf("budget %s/%s: %w", ns, b.Metadata.Name, err)
	}
	var applied *corev1.ConfigMap
	err = w.call(ctx, func(ctx context.Context) (err error) {
		applied, err = cms.Apply(ctx, cm, metav1.ApplyOptions{FieldManager: FieldManager, Force: w.Force})
		return err
	})
	if apierrors.IsConflict(err) {
		return failed, fmt.Errorf("apply ConfigMap %s: %w (another writer owns these: stop it, or hand them over "+
			"once with llmbudget spend --all --force-conflicts)", name, err)
	}
	if err != nil {
		return failed, fmt.Errorf("apply ConfigMap %s: %w", name, err)
	}
	w.Kept.wrote(budget, sum, now.Truncate(time.Second), now)
	totals := make(map[string]promspend.Usage, len(figures))
	for k, u := range figures {
		u.Models = nil // the log line says each key's totals; the ConfigMap has the breakdown
		totals[k] = u
	}
	slices.Sort(kept)
	from := "" // the period's start: no checkpoint
	if cp := plan.Resumed(); cp != nil {
		from = cp.At.UTC().Format(time.RFC3339)
	}
	w.Log.Info("spend written", "budget", ns+"/"+b.Metadata.Name, "configMap", ns+"/"+name,
		"format", string(cmp.Or(b.Spec.CostSource.Format, api.Total)), "written", totals, "kept", kept,
		"changed", applied.ResourceVersion != version, "resourceVersion", applied.ResourceVersion,
		"resumedFrom", from)
	return written, nil
}

// ConfigMap is a budget's spend ConfigMap as the writers write it: labelled a spend source (source), the
// figures in data, their stamp and burn rate in annotations. `llmbudget spend` prints the same.
func ConfigMap(namespace, name, source string,
	data, annotations map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(name, namespace).
		WithLabels(map[string]string{api.LabelSpendSource: source}).
		WithAnnotations(annotations).
		WithData(data)
}

// priceTables are the price tables a run has read, each once (unless it timed out: another budget may have more
// time), however many workers ask for it.
type priceTables struct {
	mu sync.Mutex
	m  map[string]*priceTable
}

// priceTable is a price table read once per run, or why it could not be.
type priceTable struct {
	mu     sync.Mutex // held while it is read
	read   bool
	prices *promspend.Prices
	err    error
}

// get is the table id, locked: read is false until the caller has read it.
func (ts *priceTables) get(id string) *priceTable {
	ts.mu.Lock()
	t, ok := ts.m[id]
	if !ok {
		t = &priceTable{}
		ts.m[id] = t
	}
	ts.mu.Unlock()
	t.mu.Lock()
	return t
}

// prices reads the price table ref names (in namespace when it names none), once per run.
func (w Writer) prices(ctx context.Context, namespace string, ref *api.PriceTableRef,
	tables *priceTables) (*promspend.Prices, error) {
	if ref == nil { // the spec's validation requires it; a stored object may predate the rule
		return nil, errors.New("spec.costSource.prometheus.prices: the source counts tokens only: name a price table")
	}
	ns, key := cmp.Or(ref.Namespace, namespace), ref.PricesKey()
	t := tables.get(ns + "/" + ref.ConfigMapName + "/" + key)
	defer t.mu.Unlock()
	if t.read {
		return t.prices, t.err
	}
	t.prices, t.err = nil, nil
	where := fmt.Sprintf("price table (ConfigMap %s/%s, key %s)", ns, ref.ConfigMapName, key)
	var cm *corev1.ConfigMap
	err := w.call(ctx, func(ctx context.Context) (err error) {
		cm, err = w.Kube.CoreV1().ConfigMaps(ns).Get(ctx, ref.ConfigMapName, metav1.GetOptions{})
		return err
	})
	if err != nil {
		t.err = fmt.Errorf("%s: %w", where, err)
	} else if _, ok := cm.Labels[api.LabelSpendSource]; !ok {
		// Whoever lowers a price lifts the block, so a table must be one the spend-source policy protects.
		t.err = fmt.Errorf("%s carries no label %s: label it so that only the spend writers may change it, "+
			"as they alone may change spend", where, api.LabelSpendSource)
	} else if doc, ok := cm.Data[key]; !ok {
		t.err = fmt.Errorf("%s: no such key", where)
	} else if t.prices, err = promspend.ParsePrices([]byte(doc)); err != nil {
		t.err = fmt.Errorf("%s: %w", where, err)
	}
	// Another budget may have more time, or the run's deadline may have cut this one short.
	t.read = !errors.Is(t.err, context.DeadlineExceeded) && !errors.Is(t.err, context.Canceled)
	return t.prices, t.err
}

// fail logs a budget's failure and posts the Warning Event on it.
func (w Writer) fail(ctx context.Context, b api.LLMCostBudget, name string, cause error, now time.Time) {
	reason := text.Abbreviate(cause.Error(), maxMessage)
	attrs := []any{"budget", name, "reason", reason}
	if b.Metadata.Name != "" && b.Spec.CostSource.ConfigMapName != "" {
		attrs = append(attrs, "configMap", b.Metadata.Namespace+"/"+b.Spec.CostSource.ConfigMapName)
	}
	if err := w.event(ctx, b, reason, now); err != nil {
		attrs = append(attrs, "eventError", text.Abbreviate(err.Error(), maxMessage))
	}
	w.Log.Error("spend not written", attrs...)
}

// event posts, or counts once more, the budget's SpendWriteFailed Event: one per budget, its message the latest
// reason, so that kubectl describe shows "(x4 over 20m)" rather than a line per run.
func (w Writer) event(ctx context.Context, b api.LLMCostBudget, reason string, now time.Time) error {
	if b.Metadata.UID == "" {
		return errors.New("the budget could not be read: no Event without its uid")
	}
	events := w.Kube.CoreV1().Events(b.Metadata.Namespace)
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	message := "spend not written"
	if b.Spec.CostSource.ConfigMapName != "" {
		message += " into ConfigMap " + b.Spec.CostSource.ConfigMapName
	}
	message = text.Abbreviate(message+": "+reason, maxMessage)
	name := eventName(b.Metadata)
	var ev *corev1.Event
	err := w.call(ctx, func(ctx context.Context) (err error) {
		ev, err = events.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err == nil {
		ev.Count++
		ev.LastTimestamp, ev.Message = at, message
		return w.call(ctx, func(ctx context.Context) error {
			_, err := events.Update(ctx, ev, metav1.UpdateOptions{FieldManager: FieldManager})
			return err
		})
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	ev = &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Metadata.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: api.APIVersion, Kind: api.Kind, Namespace: b.Metadata.Namespace, Name: b.Metadata.Name,
			UID: types.UID(b.Metadata.UID),
		},
		Reason: ReasonSpendWriteFailed, Message: message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: Component},
		FirstTimestamp: at, LastTimestamp: at, Count: 1,
	}
	return w.call(ctx, func(ctx context.Context) error {
		_, err := events.Create(ctx, ev, metav1.CreateOptions{FieldManager: FieldManager})
		return err
	})
}

// eventName is "<budget>.spend-write-failed.<uid's first 8>", shortened with a hash past 253 characters.
func eventName(m api.ObjectMeta) string {
	const maxLength, hashBytes = 253, 5
	name := fmt.Sprintf("%s.spend-write-failed.%s", m.Name, m.UID[:min(8, len(m.UID))])
	if len(name) <= maxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "." + hex.EncodeToString(sum[:hashBytes])
	return strings.TrimRight(name[:maxLength-len(suffix)], ".-") + suffix
}
