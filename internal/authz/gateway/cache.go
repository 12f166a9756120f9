// The cache: a Cache keeps the Store of package authz current from the API server with client-go informers: Namespaces
// (metadata only), LLMCostBudgets and ClusterLLMCostBudgets (dynamic, decoded into the few fields a decision reads)
// and, for gateways in source mode, Pods (trimmed to their names, budget label and addresses). It is read-only (list
// and watch) and, with the spend writer, the only part of llmbudget that talks to the API server; the hook service
// never imports it.
//
// Expected Flow:
//  1. Start the informers; each event replaces or removes one object of the Store.
//  2. Each informer notes when it last heard from the API server: a list that succeeded, a watch opened, any event
//     of its watch (bookmarks included). Every heartbeat, the API server is asked its version; when it answers, the
//     informers whose watch is open are current. The cache's age is the time since the least current informer
//     last heard.
//  3. Synced reports true once every informer has listed; decisions use the cache from then on.
//
// Guarantees:
//   - The informers hold trimmed objects: managedFields are dropped, and Pods become TrimmedPods as they arrive, so
//     the cache of 100,000 Pods stays within the server's memory target.
//   - An object this version cannot read (a budget with a status of another shape) is kept out of the Store, never
//     half-read: its decision falls back to the namespace posture.
//
// Caveats:
//   - While the API server cannot be reached, or it answers /version but not the informers' lists and watches, the
//     Store keeps the last objects seen: Cache's Age says how old.
//   - A watch held open by something that forwards none of its events while the API server answers /version
//     looks current until the watch ends.

package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
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

// heartbeatTimeout bounds each of the cache's heartbeats, so that a hung API server ages the cache.
const heartbeatTimeout = 5 * time.Second

// NewClients are the clients of rc, the heartbeat's with heartbeatTimeout.
func NewClients(rc *rest.Config) (Clients, error) {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("dynamic client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("metadata client: %w", err)
	}
	// The heartbeat's own client, with a timeout: the informers' watches must not have one.
	beat := rest.CopyConfig(rc)
	beat.Timeout = heartbeatTimeout
	disc, err := discovery.NewDiscoveryClientForConfig(beat)
	if err != nil {
		return Clients{}, fmt.Errorf("discovery client: %w", err)
	}
	return Clients{Kube: kube, Dynamic: dyn, Metadata: md, Discovery: disc}, nil
}

// CacheConfig is the cache's configuration.
type CacheConfig struct {
	Pods      bool          // watch Pods, for gateways in source mode
	MaxAge    time.Duration // the bound past which decisions say the cache is stale
	Heartbeat time.Duration // how often the API server is asked its version; default MaxAge/3, at least 1 s
	Resync    time.Duration // informers' resync period; 0 never
	Now       func() time.Time
	Logger    *slog.Logger
}

// Cache keeps a Store current.
type Cache struct {
	cfg       CacheConfig
	store     *authz.Store
	clients   Clients
	synced    []cache.InformerSynced
	informers []*progress
	allSynced atomic.Bool
}

// NewCache returns a cache that fills store once started.
func NewCache(c Clients, store *authz.Store, cfg CacheConfig) *Cache {
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
	md, dyn, kube := c.clients.Metadata, c.clients.Dynamic, c.clients.Kube
	nsInf := c.informer(md, &metav1.PartialObjectMetadata{}, namespaces.Resource,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return md.Resource(namespaces).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return md.Resource(namespaces).Watch(ctx, o)
		})
	if err := c.watch(nsInf, dropManagedFields, c.setNamespace, c.deleteNamespace); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	infs := []cache.SharedIndexInformer{nsInf}
	for gvr, kind := range map[schema.GroupVersionResource]string{budgets: api.Kind, clusterBudgets: api.ClusterKind} {
		inf := c.informer(dyn, &unstructured.Unstructured{}, gvr.Resource,
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return dyn.Resource(gvr).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return dyn.Resource(gvr).Watch(ctx, o)
			})
		err := c.watch(inf, dropManagedFields,
			func(obj any) { c.setBudget(kind, obj) }, func(obj any) { c.deleteBudget(kind, obj) })
		if err != nil {
			return fmt.Errorf("%s: %w", gvr.Resource, err)
		}
		infs = append(infs, inf)
	}
	if c.cfg.Pods {
		pods := c.informer(kube, &corev1.Pod{}, "pods",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return kube.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
			})
		if err := c.watch(pods, TrimPod, c.setPod, c.deletePod); err != nil {
			return fmt.Errorf("pods: %w", err)
		}
		infs = append(infs, pods)
	}
	for _, inf := range infs {
		go inf.RunWithContext(ctx)
	}
	go c.heartbeat(ctx)
	return nil
}

// informer is a shared informer of one resource whose list and watch calls are noted in a progress of its own.
// The reflector is client-go's; only its ListerWatcher is wrapped.
func (c *Cache) informer(client any, example runtime.Object, resource string,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	p := &progress{now: c.cfg.Now}
	c.informers = append(c.informers, p)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, o)
			if err == nil {
				p.heard()
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, o)
			if err != nil {
				return nil, err
			}
			return p.track(w), nil
		},
	}, client)
	inf := cache.NewSharedIndexInformerWithOptions(lw, example, cache.SharedIndexInformerOptions{
		ResyncPeriod: c.cfg.Resync, ObjectDescription: resource})
	// Each failed list or watch shows in the log; the age shows in decisions once it passes MaxAge.
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		c.cfg.Logger.Warn("informer's list or watch failed", "resource", resource, "err", err)
	})
	return inf
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
	return len(c.synced) > 0
}

// State is how current the cache is, for decisions: its age is that of the informer heard from longest ago.
func (c *Cache) State() authz.Cache {
	st := authz.Cache{Synced: c.Synced(), MaxAge: c.cfg.MaxAge}
	if !st.Synced {
		return st
	}
	now := c.cfg.Now()
	for _, p := range c.informers {
		st.Age = max(st.Age, now.Sub(time.Unix(0, p.last.Load())))
	}
	return st
}

// heartbeat asks the API server its version every Heartbeat, bounded by it. An open watch is silent while nothing
// changes (the API server's bookmarks come about once a minute), so its informer is current as long as the API
// server answers; an informer without an open watch is not, whatever /version says.
func (c *Cache) heartbeat(ctx context.Context) {
	t := time.NewTicker(c.cfg.Heartbeat)
	defer t.Stop()
	for {
		if _, err := c.clients.Discovery.ServerVersion(); err == nil {
			for _, p := range c.informers {
				if p.watching.Load() > 0 {
					p.heard()
				}
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

// progress is what one informer last heard from the API server.
type progress struct {
	now      func() time.Time
	last     atomic.Int64 // unix nanoseconds of the last list, watch opened or watch event
	watching atomic.Int32 // watches open, whose streams have not ended
}

func (p *progress) heard() { p.last.Store(p.now().UnixNano()) }

// track notes the watch as open until its stream ends, and each event it brings but errors.
func (p *progress) track(w watch.Interface) watch.Interface {
	t := &trackedWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	p.watching.Add(1)
	p.heard()
	go func() {
		defer p.watching.Add(-1)
		defer close(t.out)
		in := w.ResultChan()
		for {
			select {
			case ev, ok := <-in:
				if !ok {
					return
				}
				if ev.Type != watch.Error {
					p.heard()
				}
				select {
				case t.out <- ev:
				case <-t.stop:
					return
				}
			case <-t.stop:
				return
			}
		}
	}()
	return t
}

// trackedWatch passes a watch's events on, so that progress sees each and the stream's end.
type trackedWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func (t *trackedWatch) Stop() {
	t.once.Do(func() { close(t.stop) })
	t.inner.Stop()
}

func (t *trackedWatch) ResultChan() <-chan watch.Event { return t.out }

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
