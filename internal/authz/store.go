package authz

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// Budget is what a decision reads of an LLMCostBudget or a ClusterLLMCostBudget: its spec's failurePolicy (and
// namespaceSelector), and its status, which the sync hook writes.
type Budget struct {
	Kind      string // api.Kind or api.ClusterKind
	Namespace string // empty for api.ClusterKind
	Name      string
	// Selector is a cluster budget's spec.namespaceSelector; nil selects nothing (an absent or invalid one).
	Selector      labels.Selector
	FailurePolicy api.FailurePolicy
	State         api.State
	RemainingUSD  string
	PeriodEnd     time.Time // zero while status.period is absent or unreadable
	Enforcement   api.EnforcementStatus
}

// Who names the budget as the namespace posture's annotation does: "LLMCostBudget team-ml/chatbot".
func (b *Budget) Who() string {
	if b.Namespace == "" {
		return b.Kind + " " + b.Name
	}
	return b.Kind + " " + b.Namespace + "/" + b.Name
}

// Ref names the budget for the refusal rule (api.EnforcementStatus.Refuses).
func (b *Budget) Ref() api.BudgetRef {
	return api.BudgetRef{Kind: b.Kind, Namespace: b.Namespace, Name: b.Name}
}

// Rule is the caller as the refusal rule reads it.
func (c Caller) Rule() api.Caller { return api.Caller{Namespace: c.Namespace, Budget: c.Budget} }

// Namespace is what a decision reads of a Namespace: its labels (for cluster budgets' selectors) and the posture
// the namespace decorator sets.
type Namespace struct {
	Name      string
	Labels    labels.Set
	Blocked   bool   // label llmbudget.dev/blocked is "true"
	BlockedBy string // annotation llmbudget.dev/blocked-by
}

// Pod is what source mode reads of a Pod: whose it is and the budget its label puts it under.
type Pod struct {
	Namespace, Name string
	Budget          string // label llmbudget.dev/budget
}

// Store is the in-memory view decisions are made from, kept by informers (package authz/gateway) and read per
// request. It is safe for concurrent use; reads never wait on the API server.
type Store struct {
	mu         sync.RWMutex
	namespaces map[string]*Namespace
	budgets    map[string]map[string]*Budget // namespace, name
	cluster    map[string]*Budget
	pods       map[string]podEntry // "namespace/name"
	byIP       map[netip.Addr][]string

	// clusterGen counts changes to what decides which cluster budgets are over a namespace (the cluster budgets,
	// the namespaces' labels); overNS remembers, per namespace, the answer at a generation, so that a decision does
	// not match every cluster budget's selector again.
	clusterGen atomic.Uint64
	memoMu     sync.Mutex
	overNS     map[string]clusterMemo
}

type clusterMemo struct {
	gen     uint64
	budgets []*Budget
}

type podEntry struct {
	pod Pod
	ips []netip.Addr
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		namespaces: map[string]*Namespace{},
		budgets:    map[string]map[string]*Budget{},
		cluster:    map[string]*Budget{},
		pods:       map[string]podEntry{},
		byIP:       map[netip.Addr][]string{},
		overNS:     map[string]clusterMemo{},
	}
}

// SetNamespace adds or replaces a namespace.
func (s *Store) SetNamespace(ns Namespace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.namespaces[ns.Name]; !ok || !labels.Equals(old.Labels, ns.Labels) {
		s.clusterGen.Add(1)
	}
	s.namespaces[ns.Name] = &ns
}

// DeleteNamespace forgets a namespace.
func (s *Store) DeleteNamespace(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.namespaces, name)
	s.clusterGen.Add(1)
}

// SetBudget adds or replaces a budget.
func (s *Store) SetBudget(b Budget) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Kind == api.ClusterKind {
		s.cluster[b.Name] = &b
		s.clusterGen.Add(1)
		return
	}
	byName := s.budgets[b.Namespace]
	if byName == nil {
		byName = map[string]*Budget{}
		s.budgets[b.Namespace] = byName
	}
	byName[b.Name] = &b
}

// DeleteBudget forgets a budget.
func (s *Store) DeleteBudget(kind, namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind == api.ClusterKind {
		delete(s.cluster, name)
		s.clusterGen.Add(1)
		return
	}
	delete(s.budgets[namespace], name)
	if len(s.budgets[namespace]) == 0 {
		delete(s.budgets, namespace)
	}
}

// SetPod adds or replaces a Pod and the addresses it holds (none once it has finished).
func (s *Store) SetPod(p Pod, ips []netip.Addr) {
	key := p.Namespace + "/" + p.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unindex(key)
	if len(ips) == 0 {
		return
	}
	s.pods[key] = podEntry{pod: p, ips: ips}
	for _, ip := range ips {
		s.byIP[ip] = append(s.byIP[ip], key)
	}
}

// DeletePod forgets a Pod.
func (s *Store) DeletePod(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unindex(namespace + "/" + name)
}

func (s *Store) unindex(key string) {
	old, ok := s.pods[key]
	if !ok {
		return
	}
	delete(s.pods, key)
	for _, ip := range old.ips {
		keys := slices.DeleteFunc(s.byIP[ip], func(k string) bool { return k == key })
		if len(keys) == 0 {
			delete(s.byIP, ip)
		} else {
			s.byIP[ip] = keys
		}
	}
}

// PodByIP is the one Pod that holds ip. Two Pods holding the same address (one finishing while its successor
// starts) are ambiguous: neither is returned, so that an address never speaks for a namespace it may not be in.
func (s *Store) PodByIP(ip netip.Addr) (Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := s.byIP[ip]
	if len(keys) != 1 {
		return Pod{}, false
	}
	return s.pods[keys[0]].pod, true
}

// View is what the store holds for one namespace: the namespace, if known, and the budgets over it, the
// namespace's own and the cluster budgets that select it or close it, sorted by Who.
func (s *Store) View(namespace string) (Namespace, bool, []*Budget) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ns, found := s.namespaces[namespace]
	over := s.clusterOver(namespace, ns)
	out := make([]*Budget, 0, len(s.budgets[namespace])+len(over))
	for _, b := range s.budgets[namespace] {
		out = append(out, b)
	}
	out = append(out, over...)
	slices.SortFunc(out, func(a, b *Budget) int { return strings.Compare(a.Who(), b.Who()) })
	if !found {
		return Namespace{Name: namespace}, false, out
	}
	return *ns, true, out
}

// clusterOver is the cluster budgets that select the namespace or close it, remembered until a cluster budget or
// a namespace's labels change. The caller holds s.mu for reading.
func (s *Store) clusterOver(namespace string, ns *Namespace) []*Budget {
	gen := s.clusterGen.Load()
	s.memoMu.Lock()
	m, ok := s.overNS[namespace]
	s.memoMu.Unlock()
	if ok && m.gen == gen {
		return m.budgets
	}
	var over []*Budget
	for _, b := range s.cluster {
		closes := b.Enforcement.Blocking && slices.Contains(b.Enforcement.Namespaces, namespace)
		if closes || (ns != nil && b.Selector != nil && b.Selector.Matches(ns.Labels)) {
			over = append(over, b)
		}
	}
	s.memoMu.Lock()
	if len(s.overNS) > maxMemos {
		clear(s.overNS) // names of namespaces that never existed must not grow it without bound
	}
	s.overNS[namespace] = clusterMemo{gen: gen, budgets: over}
	s.memoMu.Unlock()
	return over
}

// maxMemos bounds the remembered namespaces: a header mode gateway may name any namespace.
const maxMemos = 1 << 16

// Counts is how much the store holds, for the cache gauges.
func (s *Store) Counts() (namespaces, budgets, pods int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, byName := range s.budgets {
		budgets += len(byName)
	}
	return len(s.namespaces), budgets + len(s.cluster), len(s.pods)
}

// Refuses reports whether the budget refuses some caller by the refusal rule the decisions use
// (api.EnforcementStatus.Refuses): a budget's own namespace, or any namespace a cluster budget's status lists.
func (b *Budget) Refuses() bool { return b.Enforcement.RefusesSomeone(b.Ref()) }

// Refusing is the budgets of the store that refuse some caller (Budget.Refuses), named by Who and sorted.
func (s *Store) Refusing() []string {
	s.mu.RLock()
	var out []string
	for _, byName := range s.budgets {
		for _, b := range byName {
			if b.Refuses() {
				out = append(out, b.Who())
			}
		}
	}
	for _, b := range s.cluster {
		if b.Refuses() {
			out = append(out, b.Who())
		}
	}
	s.mu.RUnlock()
	slices.Sort(out)
	return out
}
