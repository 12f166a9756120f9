package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/llmbudget/llmbudget/test/k8s/cmd/internal/benchkit"
)

// driver stands in for Metacontroller's LLMCostBudget CompositeController, as far as a budget's status goes: it
// watches the budgets and the spend ConfigMaps, and on every change to a budget or the ConfigMap it names, and at
// the resyncAfterSeconds the hook answers, it posts the budget's sync request to llmbudget serve (parent and
// related ConfigMap from its watch cache, as Metacontroller sends them) and writes the answered status back
// whole. Children (Events, ResourceQuotas) are not applied: authz reads the status alone.
type driver struct {
	kube benchkit.Kube
	hook string // llmbudget serve's URL

	budgets, configMaps cache.Indexer
	mu                  sync.Mutex
	workers             map[string]chan struct{} // a kick per budget, ns/name
	statuses            map[string][]statusAt    // every status written, in order
	syncs               int
	errs                []string
}

// statusAt is a status the driver wrote, and when.
type statusAt struct {
	at     time.Time
	status map[string]any
}

func (d *driver) start(ctx context.Context) error {
	d.workers, d.statuses = map[string]chan struct{}{}, map[string][]statusAt{}
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(d.kube.Dynamic, 0)
	bi := dyn.ForResource(benchkit.Budgets).Informer()
	typed := informers.NewSharedInformerFactoryWithOptions(d.kube.Typed, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "llmbudget.dev/spend-source" }))
	ci := typed.Core().V1().ConfigMaps().Informer()
	d.budgets, d.configMaps = bi.GetIndexer(), ci.GetIndexer()
	kickBudget := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			d.kick(ctx, u.GetNamespace()+"/"+u.GetName())
		}
	}
	kickOwner := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		for _, o := range d.budgets.List() {
			u := o.(*unstructured.Unstructured)
			name, _, _ := unstructured.NestedString(u.Object, "spec", "costSource", "configMapName")
			if u.GetNamespace() == cm.Namespace && name == cm.Name {
				d.kick(ctx, u.GetNamespace()+"/"+u.GetName())
			}
		}
	}
	if _, err := bi.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: kickBudget,
		UpdateFunc: func(_, n any) { kickBudget(n) }}); err != nil {
		return err
	}
	if _, err := ci.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: kickOwner,
		UpdateFunc: func(_, n any) { kickOwner(n) }, DeleteFunc: kickOwner}); err != nil {
		return err
	}
	dyn.Start(ctx.Done())
	typed.Start(ctx.Done())
	for _, synced := range dyn.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the budgets' watch did not sync")
		}
	}
	for _, synced := range typed.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the spend ConfigMaps' watch did not sync")
		}
	}
	return nil
}

// kick asks key's worker to sync, starting the worker on the budget's first event.
func (d *driver) kick(ctx context.Context, key string) {
	d.mu.Lock()
	k, ok := d.workers[key]
	if !ok {
		k = make(chan struct{}, 1)
		d.workers[key] = k
		go d.work(ctx, key, k)
	}
	d.mu.Unlock()
	select {
	case k <- struct{}{}:
	default: // a sync is already due; it will read the latest objects
	}
}

// work syncs one budget at a time, as Metacontroller's queue never syncs one object twice at once.
func (d *driver) work(ctx context.Context, key string, kick chan struct{}) {
	resync := time.NewTimer(time.Hour)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-resync.C:
		}
		after, err := d.sync(ctx, key)
		if err != nil {
			d.mu.Lock()
			d.errs = append(d.errs, err.Error())
			d.mu.Unlock()
			after = time.Second // Metacontroller's queue retries with a backoff
		}
		if after > 0 {
			resync.Reset(after)
		}
	}
}

// sync posts key's sync request and writes the status it answers; it returns the resync the hook asked for.
func (d *driver) sync(ctx context.Context, key string) (time.Duration, error) {
	obj, found, err := d.budgets.GetByKey(key)
	if err != nil || !found {
		return 0, err
	}
	parent := obj.(*unstructured.Unstructured).DeepCopy()
	related := map[string]any{}
	name, _, _ := unstructured.NestedString(parent.Object, "spec", "costSource", "configMapName")
	if o, found, _ := d.configMaps.GetByKey(parent.GetNamespace() + "/" + name); found {
		cm, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return 0, err
		}
		cm["apiVersion"], cm["kind"] = "v1", "ConfigMap"
		related[parent.GetNamespace()+"/"+name] = cm
	}
	req := map[string]any{
		"controller": map[string]any{}, "parent": parent.Object, "finalizing": false,
		"children": map[string]any{"Event.v1": map[string]any{}, "ResourceQuota.v1": map[string]any{}},
		"related":  map[string]any{"ConfigMap.v1": related},
	}
	body, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, d.hook+"/budget/sync", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return 0, fmt.Errorf("sync %s: %w", key, err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status             map[string]any `json:"status"`
		ResyncAfterSeconds float64        `json:"resyncAfterSeconds"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("sync %s: %s", key, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return 0, fmt.Errorf("sync %s: %w", key, err)
	}
	d.mu.Lock()
	d.syncs++
	d.mu.Unlock()
	after := time.Duration(answer.ResyncAfterSeconds * float64(time.Second))
	// Compared as JSON: the cache holds integers as int64, the answer decodes them as float64.
	current, _ := json.Marshal(parent.Object["status"])
	desired, _ := json.Marshal(answer.Status)
	if bytes.Equal(current, desired) {
		return after, nil
	}
	parent.Object["status"] = answer.Status
	_, err = d.kube.Dynamic.Resource(benchkit.Budgets).Namespace(parent.GetNamespace()).UpdateStatus(ctx, parent,
		metav1.UpdateOptions{})
	if err != nil {
		return 0, fmt.Errorf("write the status of %s: %w", key, err)
	}
	d.mu.Lock()
	d.statuses[key] = append(d.statuses[key], statusAt{at: time.Now(), status: answer.Status})
	d.mu.Unlock()
	return after, nil
}

// written is every status written for key so far.
func (d *driver) written(key string) []statusAt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]statusAt(nil), d.statuses[key]...)
}
