// Package authzcache keeps the Store of package authz current from the API server with client-go informers:
// Namespaces (metadata only), LLMCostBudgets and ClusterLLMCostBudgets (dynamic, decoded into the few fields a
// decision reads) and, for gateways in source mode, Pods (trimmed to their names, budget label and addresses). It is
// read-only (list and watch) and, with the spend writer, the only part of llmbudget that talks to the API server;
// the hook service never imports it.
//
// Expected Flow:
//  1. Start the informers; each event replaces or removes one object of the Store.
//  2. Every heartbeat, ask the API server its version: the cache's age is the time since it last answered, and
//     since the informers' watches ended (or were synced).
//  3. Synced reports true once every informer has listed; the server is ready from then on.
//
// Guarantees:
//   - The informers hold trimmed objects: managedFields are dropped, and Pods become TrimmedPods as they arrive, so
//     the cache of 100,000 Pods stays within the server's memory target.
//   - An object this version cannot read (a budget with a status of another shape) is kept out of the Store, never
//     half-read: its decision falls back to the namespace posture.
//
// Caveats:
//   - While the API server cannot be reached, the Store keeps the last objects seen: Cache's Age says how old.
package authzcache

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
)

// Resources the cache lists and watches.
var (
	namespaces     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	budgets        = schema.GroupVersionResource{Group: api.Group, Version: api.Version, Resource: api.Resource}
	clusterBudgets = schema.GroupVersionResource{Group: api.Group, Version: api.Version,
		Resource: "clusterllmcostbudgets"}
)

// Clients are the API clients the cache uses.
type Clients struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.ServerVersionInterface
}

// Config is the cache's configuration.
type Config struct {
	Pods      bool          // watch Pods, for gateways in source mode
	MaxAge    time.Duration // the bound past which decisions say the cache is stale
	Heartbeat time.Duration // how often the API server is asked its version; default MaxAge/3
	Resync    time.Duration // informers' resync period; 0 never
	Now       func() time.Time
	Logger    *slog.Logger
}

// Cache keeps a Store current.
type Cache struct {
	cfg       Config
	store     *authz.Store
	clients   Clients
	synced    []cache.InformerSynced
	allSynced atomic.Bool
	heard     atomic.Int64 // unix nanoseconds the API server last answered
}

// New returns a cache that fills store once started.
func New(c Clients, store *authz.Store, cfg Config) *Cache {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = max(cfg.MaxAge/3, time.Second)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cache{cfg: cfg, store: store, clients: c}
}

// Start starts the informers and the heartbeat until ctx ends; it does not wait for them to sync.
func (c *Cache) Start(ctx context.Context) error {
	meta := metadatainformer.NewSharedInformerFactory(c.clients.Metadata, c.cfg.Resync)
	nsInf := meta.ForResource(namespaces).Informer()
	if err := c.watch(nsInf, dropManagedFields, c.setNamespace, c.deleteNamespace); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(c.clients.Dynamic, c.cfg.Resync)
	for gvr, kind := range map[schema.GroupVersionResource]string{budgets: api.Kind, clusterBudgets: api.ClusterKind} {
		err := c.watch(dyn.ForResource(gvr).Informer(), dropManagedFields,
			func(obj any) { c.setBudget(kind, obj) }, func(obj any) { c.deleteBudget(kind, obj) })
		if err != nil {
			return fmt.Errorf("%s: %w", gvr.Resource, err)
		}
	}
	meta.Start(ctx.Done())
	dyn.Start(ctx.Done())
	if c.cfg.Pods {
		pods := corev1informers.NewPodInformer(c.clients.Kube, metav1.NamespaceAll, c.cfg.Resync, cache.Indexers{})
		if err := c.watch(pods, TrimPod, c.setPod, c.deletePod); err != nil {
			return fmt.Errorf("pods: %w", err)
		}
		go pods.Run(ctx.Done())
	}
	go c.heartbeat(ctx)
	return nil
}

func (c *Cache) watch(inf cache.SharedIndexInformer, trim cache.TransformFunc, set, del func(any)) error {
	if err := inf.SetTransform(trim); err != nil {
		return fmt.Errorf("transform: %w", err)
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			del(obj)
		},
	})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	c.synced = append(c.synced, reg.HasSynced)
	return nil
}

// Synced is whether every informer has listed once.
func (c *Cache) Synced() bool {
	if c.allSynced.Load() {
		return true
	}
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	c.allSynced.Store(len(c.synced) > 0)
	c.heard.CompareAndSwap(0, c.cfg.Now().UnixNano())
	return len(c.synced) > 0
}

// State is how current the cache is, for decisions.
func (c *Cache) State() authz.Cache {
	st := authz.Cache{Synced: c.Synced(), MaxAge: c.cfg.MaxAge}
	if heard := c.heard.Load(); heard != 0 {
		st.Age = max(c.cfg.Now().Sub(time.Unix(0, heard)), 0)
	}
	return st
}

// heartbeat asks the API server its version every Heartbeat, bounded by it, and notes when it answered.
func (c *Cache) heartbeat(ctx context.Context) {
	t := time.NewTicker(c.cfg.Heartbeat)
	defer t.Stop()
	for {
		if _, err := c.clients.Discovery.ServerVersion(); err == nil {
			if c.Synced() {
				c.heard.Store(c.cfg.Now().UnixNano())
			}
		} else {
			c.cfg.Logger.Debug("API server heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Cache) setNamespace(obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	c.store.SetNamespace(authz.Namespace{Name: m.Name, Labels: labels.Set(m.Labels),
		Blocked:   m.Labels[api.Group+"/blocked"] == "true",
		BlockedBy: m.Annotations[api.Group+"/blocked-by"]})
}

func (c *Cache) deleteNamespace(obj any) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		c.store.DeleteNamespace(m.Name)
	}
}

func (c *Cache) setBudget(kind string, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	b, err := DecodeBudget(kind, u)
	if err != nil {
		c.cfg.Logger.Warn("budget not cached", "kind", kind, "namespace", u.GetNamespace(),
			"name", u.GetName(), "err", err)
		c.store.DeleteBudget(kind, u.GetNamespace(), u.GetName())
		return
	}
	c.store.SetBudget(b)
}

func (c *Cache) deleteBudget(kind string, obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c.store.DeleteBudget(kind, u.GetNamespace(), u.GetName())
	}
}

func (c *Cache) setPod(obj any) {
	if p, ok := obj.(*TrimmedPod); ok {
		c.store.SetPod(authz.Pod{Namespace: p.Namespace, Name: p.Name, Budget: p.Budget}, p.IPs)
	}
}

func (c *Cache) deletePod(obj any) {
	if p, ok := obj.(*TrimmedPod); ok {
		c.store.DeletePod(p.Namespace, p.Name)
	}
}

func dropManagedFields(obj any) (any, error) {
	if acc, err := meta.Accessor(obj); err == nil {
		acc.SetManagedFields(nil)
	}
	return obj, nil
}

// TrimmedPod is what the Pod informer keeps of a Pod: its name, its budget label and the addresses it holds.
// A whole Pod takes kilobytes; this, a few hundred bytes.
type TrimmedPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Budget string
	IPs    []netip.Addr
}

// DeepCopyObject copies the trimmed Pod, as runtime.Object asks.
func (p *TrimmedPod) DeepCopyObject() runtime.Object {
	out := &TrimmedPod{TypeMeta: p.TypeMeta, Budget: p.Budget, IPs: slices.Clone(p.IPs)}
	p.DeepCopyInto(&out.ObjectMeta)
	return out
}

// TrimPod is the Pod informer's transform: a Pod becomes a TrimmedPod as it arrives.
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod, ips := PodAddresses(p)
	return &TrimmedPod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
		ResourceVersion: p.ResourceVersion}, Budget: pod.Budget, IPs: ips}, nil
}

// PodAddresses is the Pod as source mode reads it and the addresses it holds: none for a Pod on the node's network
// (its address is the node's, shared by every such Pod) or one that has finished (its address may be reused).
func PodAddresses(p *corev1.Pod) (authz.Pod, []netip.Addr) {
	pod := authz.Pod{Namespace: p.Namespace, Name: p.Name, Budget: p.Labels[api.LabelBudget]}
	if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return pod, nil
	}
	var ips []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && !containsAddr(ips, a.Unmap()) {
			ips = append(ips, a.Unmap())
		}
	}
	add(p.Status.PodIP)
	for _, ip := range p.Status.PodIPs {
		add(ip.IP)
	}
	return pod, ips
}

func containsAddr(ips []netip.Addr, a netip.Addr) bool { return slices.Contains(ips, a) }

// wireBudget is the part of either budget kind a decision reads.
type wireBudget struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
		Enforcement       struct {
			FailurePolicy api.FailurePolicy `json:"failurePolicy"`
		} `json:"enforcement"`
	} `json:"spec"`
	Status struct {
		State        api.State              `json:"state"`
		RemainingUSD string                 `json:"remainingUSD"`
		Period       *api.PeriodStatus      `json:"period"`
		Enforcement  *api.EnforcementStatus `json:"enforcement"`
	} `json:"status"`
}

// DecodeBudget reads what a decision needs of an LLMCostBudget or ClusterLLMCostBudget (kind).
func DecodeBudget(kind string, u *unstructured.Unstructured) (authz.Budget, error) {
	var w wireBudget
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
		return authz.Budget{}, fmt.Errorf("decode %s %s: %w", kind, u.GetName(), err)
	}
	b := authz.Budget{Kind: kind, Namespace: w.Metadata.Namespace, Name: w.Metadata.Name,
		FailurePolicy: cmp.Or(w.Spec.Enforcement.FailurePolicy, api.FailOpen), State: w.Status.State,
		RemainingUSD: w.Status.RemainingUSD}
	if w.Status.Enforcement != nil {
		b.Enforcement = *w.Status.Enforcement
	}
	if w.Status.Period != nil {
		if end, err := time.Parse(time.RFC3339, w.Status.Period.End); err == nil {
			b.PeriodEnd = end
		}
	}
	if kind == api.ClusterKind && w.Spec.NamespaceSelector != nil {
		// An invalid selector selects nothing, as for the hooks; the status still closes what it lists.
		if sel, err := metav1.LabelSelectorAsSelector(w.Spec.NamespaceSelector); err == nil {
			b.Selector = sel
		}
	}
	return b, nil
}
