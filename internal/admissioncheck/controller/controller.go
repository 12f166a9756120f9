// Package controller is `llmbudget admissioncheck`: the Kueue admission check controller for AdmissionChecks with
// spec.controllerName llmbudget.dev/budget, on client-go informers over Kueue's Workloads and AdmissionChecks
// (kueue.x-k8s.io/v1beta2, read as unstructured) and both budget kinds.
//
// Expected Flow:
//  1. Any change of a Workload, of a budget (its namespace's Workloads, or every Workload for a cluster budget) or
//     of an AdmissionCheck queues the Workloads it may concern; a changed AdmissionCheck is queued itself.
//  2. For each Workload entry in status.admissionChecks whose AdmissionCheck is llmbudget's, the verdict of package
//     admissioncheck is applied, when it differs from the entry, by server-side apply of the status subresource
//     with field manager FieldManager: only that entry, with the Workload's resourceVersion as precondition.
//  3. Each AdmissionCheck of llmbudget's gets the condition Active, which a ClusterQueue needs to admit anything.
//
// Guarantees:
//   - Its only writes are its own entries of Workloads' status.admissionChecks and its AdmissionChecks' Active
//     condition; every other field, Kueue's included, is left to its manager.
//   - A Workload Kueue has admitted is left alone: a budget refuses new workloads, it does not evict running ones.
//   - A write that lost a race (a conflict) is retried from the informers' newer copy, with backoff.
//
// Caveats:
//   - A budget whose status.enforcement cannot be read holds nothing, as for every reader of the refusal rule.
//   - A Labelled budget reads a Workload's label llmbudget.dev/budget, or, where Kueue did not copy it (its
//     configuration's integrations.labelKeysToCopy), the label of the batch/v1 Job that owns the Workload. Other
//     owners' labels are not read.
package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/llmbudget/llmbudget/internal/admissioncheck"
	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
)

// FieldManager is the field manager of every write.
const FieldManager = "llmbudget-admissioncheck"

// Kueue's API as the controller reads and writes it: v1beta2, the storage version of Kueue v0.17.0.
const (
	kueueGroup      = "kueue.x-k8s.io"
	kueueVersion    = "v1beta2"
	conditionActive = "Active"
)

// Resources the controller lists and watches.
var (
	Workloads       = schema.GroupVersionResource{Group: kueueGroup, Version: kueueVersion, Resource: "workloads"}
	AdmissionChecks = schema.GroupVersionResource{Group: kueueGroup, Version: kueueVersion,
		Resource: "admissionchecks"}
	jobs           = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	budgets        = schema.GroupVersionResource{Group: api.Group, Version: api.Version, Resource: api.Resource}
	clusterBudgets = schema.GroupVersionResource{Group: api.Group, Version: api.Version,
		Resource: "clusterllmcostbudgets"}
)

// Config is the controller's configuration.
type Config struct {
	Hold    admissioncheck.Hold
	Workers int           // default 2
	Resync  time.Duration // informers' resync period; 0 never
	Now     func() time.Time
	Logger  *slog.Logger
}

// item is a queued object: a Workload (namespaced) or an AdmissionCheck (Namespace empty, check true).
type item struct {
	check           bool
	namespace, name string
}

// Controller answers llmbudget's admission checks.
type Controller struct {
	cfg                                    Config
	dyn                                    dynamic.Interface
	queue                                  workqueue.TypedRateLimitingInterface[item]
	workloads, checks, budgets, clusterBgs cache.SharedIndexInformer
	running, synced                        atomic.Bool
}

// New returns a controller on dyn; Run starts it.
func New(dyn dynamic.Interface, cfg Config) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Hold == "" {
		cfg.Hold = admissioncheck.HoldPending
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, cfg.Resync)
	c := &Controller{cfg: cfg, dyn: dyn,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "admissioncheck"}),
		workloads:  f.ForResource(Workloads).Informer(),
		checks:     f.ForResource(AdmissionChecks).Informer(),
		budgets:    f.ForResource(budgets).Informer(),
		clusterBgs: f.ForResource(clusterBudgets).Informer(),
	}
	return c
}

// Synced reports whether every informer has listed.
func (c *Controller) Synced() bool { return c.synced.Load() }

// Run runs the informers and workers until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.running.Store(true)
	defer c.queue.ShutDown()
	for _, inf := range []cache.SharedIndexInformer{c.workloads, c.checks, c.budgets, c.clusterBgs} {
		if err := inf.SetTransform(dropManagedFields); err != nil {
			return fmt.Errorf("informer transform: %w", err)
		}
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  func(obj any)
	}{
		{c.workloads, c.enqueueWorkload},
		{c.checks, c.checkChanged},
		{c.budgets, func(obj any) { c.enqueueNamespace(namespaceOf(obj)) }},
		{c.clusterBgs, func(any) { c.enqueueNamespace(metav1.NamespaceAll) }},
	}
	for _, h := range handlers {
		_, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: h.fn,
			UpdateFunc: func(_, obj any) { h.fn(obj) }, DeleteFunc: h.fn})
		if err != nil {
			return fmt.Errorf("event handler: %w", err)
		}
		go h.inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.workloads.HasSynced, c.checks.HasSynced, c.budgets.HasSynced,
		c.clusterBgs.HasSynced) {
		return ctx.Err()
	}
	c.synced.Store(true)
	c.cfg.Logger.Info("informers synced", "hold", c.cfg.Hold)
	done := make(chan struct{})
	for range c.cfg.Workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	for range c.cfg.Workers {
		<-done
	}
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	it, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(it)
	var err error
	if it.check {
		err = c.syncCheck(ctx, it.name)
	} else {
		err = c.syncWorkload(ctx, it.namespace, it.name)
	}
	if errors.IsConflict(err) {
		// A race with Kueue's own writes: the informers' newer copy is decided again.
		c.cfg.Logger.Debug("conflict, retrying", "namespace", it.namespace, "name", it.name)
		c.queue.AddRateLimited(it)
		return true
	}
	if err != nil {
		c.cfg.Logger.Warn("sync failed, retrying", "namespace", it.namespace, "name", it.name,
			"admissionCheck", it.check, "error", err.Error())
		c.queue.AddRateLimited(it)
		return true
	}
	c.queue.Forget(it)
	return true
}

func (c *Controller) enqueueWorkload(obj any) {
	if m := objMeta(obj); m != nil {
		c.queue.Add(item{namespace: m.GetNamespace(), name: m.GetName()})
	}
}

// enqueueNamespace queues the Workloads of namespace, or every Workload for NamespaceAll.
func (c *Controller) enqueueNamespace(namespace string) {
	var objs []any
	if namespace == metav1.NamespaceAll {
		objs = c.workloads.GetStore().List()
	} else {
		objs, _ = c.workloads.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	}
	for _, o := range objs {
		c.enqueueWorkload(o)
	}
}

func (c *Controller) checkChanged(obj any) {
	if m := objMeta(obj); m != nil {
		c.queue.Add(item{check: true, name: m.GetName()})
	}
	c.enqueueNamespace(metav1.NamespaceAll)
}

// ours reports whether the AdmissionCheck name is llmbudget's.
func (c *Controller) ours(name string) bool {
	obj, ok, err := c.checks.GetStore().GetByKey(name)
	if err != nil || !ok {
		return false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	cn, _, _ := unstructured.NestedString(u.Object, "spec", "controllerName")
	return cn == admissioncheck.ControllerName
}

// checkEntry is an entry of a Workload's status.admissionChecks, as far as the controller reads it.
type checkEntry struct {
	Name                string `json:"name"`
	State               string `json:"state"`
	Message             string `json:"message"`
	LastTransitionTime  string `json:"lastTransitionTime"`
	RequeueAfterSeconds *int32 `json:"requeueAfterSeconds"`
}

type workloadView struct {
	Metadata struct {
		Labels            map[string]string       `json:"labels"`
		DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
		ResourceVersion   string                  `json:"resourceVersion"`
		OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Status struct {
		Conditions      []metav1.Condition `json:"conditions"`
		AdmissionChecks []checkEntry       `json:"admissionChecks"`
	} `json:"status"`
}

func (c *Controller) syncWorkload(ctx context.Context, namespace, name string) error {
	obj, ok, err := c.workloads.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	var wl workloadView
	if err := fromUnstructured(u, &wl); err != nil {
		return fmt.Errorf("workload %s/%s: %w", namespace, name, err)
	}
	if wl.Metadata.DeletionTimestamp != nil || meta.IsStatusConditionTrue(wl.Status.Conditions, "Admitted") ||
		meta.IsStatusConditionTrue(wl.Status.Conditions, "Finished") {
		return nil
	}
	w := admissioncheck.Workload{Namespace: namespace, Budget: wl.Metadata.Labels[api.LabelBudget],
		QuotaReserved: meta.IsStatusConditionTrue(wl.Status.Conditions, "QuotaReserved")}
	var bs []admissioncheck.Budget
	for _, e := range wl.Status.AdmissionChecks {
		if !c.ours(e.Name) {
			continue
		}
		if bs == nil {
			bs = c.budgetsFor(namespace)
			if w.Budget == "" && labelledBlocks(bs) {
				if w.Budget, err = c.jobBudget(ctx, namespace, wl.Metadata.OwnerReferences); err != nil {
					return err
				}
			}
		}
		now := c.cfg.Now().UTC().Truncate(time.Second)
		since := now
		if t, err := time.Parse(time.RFC3339, e.LastTransitionTime); err == nil {
			since = t
		}
		v := admissioncheck.Decide(w, bs, c.cfg.Hold, since)
		if v.State != e.State {
			since = now
			v = admissioncheck.Decide(w, bs, c.cfg.Hold, since)
		}
		if v.State == e.State && v.Message == e.Message &&
			(v.State != admissioncheck.StateRetry || equalPtr(v.RequeueAfterSeconds, e.RequeueAfterSeconds)) {
			continue
		}
		if err := c.apply(ctx, namespace, name, wl.Metadata.ResourceVersion, e.Name, v, since); err != nil {
			return err
		}
		c.cfg.Logger.Info("admission check set", "namespace", namespace, "workload", name, "check", e.Name,
			"state", v.State, "message", v.Message)
	}
	return nil
}

// apply writes the verdict into the Workload's entry of check, and nothing else.
func (c *Controller) apply(ctx context.Context, namespace, name, resourceVersion, check string,
	v admissioncheck.Verdict, since time.Time) error {
	entry := map[string]any{"name": check, "state": v.State, "message": v.Message,
		"lastTransitionTime": since.UTC().Format(time.RFC3339)}
	if v.RequeueAfterSeconds != nil {
		entry["requeueAfterSeconds"] = int64(*v.RequeueAfterSeconds)
	}
	patch := map[string]any{
		"apiVersion": kueueGroup + "/" + kueueVersion, "kind": "Workload",
		// The resourceVersion makes the write conditional on the copy the verdict was made from.
		"metadata": map[string]any{"name": name, "namespace": namespace, "resourceVersion": resourceVersion},
		"status":   map[string]any{"admissionChecks": []any{entry}},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(Workloads).Namespace(namespace).Patch(ctx, name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: new(true)}, "status")
	if errors.IsNotFound(err) {
		return nil
	}
	if err != nil && !errors.IsConflict(err) {
		return fmt.Errorf("apply workload %s/%s status.admissionChecks[%s]: %w", namespace, name, check, err)
	}
	return err
}

// labelledBlocks reports whether one of bs is a blocking Labelled budget, which needs the Workload's budget label.
func labelledBlocks(bs []admissioncheck.Budget) bool {
	for _, b := range bs {
		if b.Enforcement != nil && b.Enforcement.Blocking && b.Enforcement.Scope == api.ScopeLabelled {
			return true
		}
	}
	return false
}

// jobBudget is the label llmbudget.dev/budget of the Job that owns a Workload (Kueue copies a Job's labels to its
// Workload only when its configuration's labelKeysToCopy lists them), read only while a Labelled budget blocks;
// empty when the Workload has no Job for controller or that Job is gone.
func (c *Controller) jobBudget(ctx context.Context, namespace string, owners []metav1.OwnerReference) (string,
	error) {
	for _, o := range owners {
		if o.Controller == nil || !*o.Controller || o.APIVersion != "batch/v1" || o.Kind != "Job" {
			continue
		}
		job, err := c.dyn.Resource(jobs).Namespace(namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if errors.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("get the Job %s/%s that owns the Workload: %w", namespace, o.Name, err)
		}
		if job.GetUID() != o.UID { // another Job of the same name
			return "", nil
		}
		return job.GetLabels()[api.LabelBudget], nil
	}
	return "", nil
}

// budgetsFor are the budgets that may cover a Workload of namespace: its own and every cluster budget.
func (c *Controller) budgetsFor(namespace string) []admissioncheck.Budget {
	own, _ := c.budgets.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	var out []admissioncheck.Budget
	for kind, objs := range map[string][]any{api.Kind: own, api.ClusterKind: c.clusterBgs.GetStore().List()} {
		for _, o := range objs {
			if b, ok := c.budget(kind, o); ok {
				out = append(out, b)
			}
		}
	}
	return out
}

// budget reads what the decision needs of a budget; one whose status cannot be read is left out.
func (c *Controller) budget(kind string, obj any) (admissioncheck.Budget, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return admissioncheck.Budget{}, false
	}
	ref := api.BudgetRef{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}
	status, ok := u.Object["status"]
	if !ok || status == nil {
		return admissioncheck.Budget{Ref: ref}, true
	}
	data, err := json.Marshal(status)
	if err != nil {
		return admissioncheck.Budget{}, false
	}
	var st struct {
		Enforcement *api.EnforcementStatus `json:"enforcement"`
		Period      *api.PeriodStatus      `json:"period"`
	}
	if err := decode.Lenient(data, &st, "status"); err != nil {
		c.cfg.Logger.Warn("budget status unreadable; it holds nothing", "kind", kind, "namespace", ref.Namespace,
			"name", ref.Name, "error", err.Error())
		return admissioncheck.Budget{}, false
	}
	b := admissioncheck.Budget{Ref: ref, Enforcement: st.Enforcement}
	if st.Period != nil {
		b.PeriodEnd = st.Period.End
	}
	return b, true
}

// syncCheck marks llmbudget's AdmissionCheck name Active, as Kueue's own check controllers mark theirs.
func (c *Controller) syncCheck(ctx context.Context, name string) error {
	obj, ok, err := c.checks.GetStore().GetByKey(name)
	if err != nil || !ok || !c.ours(name) {
		return err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	var st struct {
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	if err := fromUnstructured(u, &st); err != nil {
		return fmt.Errorf("admissioncheck %s: %w", name, err)
	}
	cur := meta.FindStatusCondition(st.Status.Conditions, conditionActive)
	if cur != nil && cur.Status == metav1.ConditionTrue && cur.ObservedGeneration == u.GetGeneration() {
		return nil
	}
	since := metav1.NewTime(c.cfg.Now().UTC().Truncate(time.Second))
	if cur != nil && cur.Status == metav1.ConditionTrue {
		since = cur.LastTransitionTime
	}
	patch := map[string]any{
		"apiVersion": kueueGroup + "/" + kueueVersion, "kind": "AdmissionCheck",
		"metadata": map[string]any{"name": name},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": conditionActive, "status": string(metav1.ConditionTrue), "reason": "Active",
			"message":            "llmbudget holds workloads while a budget that covers them blocks",
			"observedGeneration": u.GetGeneration(), "lastTransitionTime": since.UTC().Format(time.RFC3339),
		}}},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(AdmissionChecks).Patch(ctx, name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: new(true)}, "status")
	if err != nil && !errors.IsNotFound(err) {
		return fmt.Errorf("apply admissioncheck %s status.conditions[Active]: %w", name, err)
	}
	c.cfg.Logger.Info("admission check active", "admissionCheck", name)
	return nil
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	return decode.Lenient(data, into, "")
}

func objMeta(obj any) metav1.Object {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

func namespaceOf(obj any) string {
	if m := objMeta(obj); m != nil {
		return m.GetNamespace()
	}
	return ""
}

func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func equalPtr(a, b *int32) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
