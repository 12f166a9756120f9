package spendwriter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// CheckpointsEvery is how often, at most, a long-running writer stores a namespace's checkpoints that changed: in
// between, it goes on from those it keeps in memory, and a new leader from the stored ones, asking Prometheus for
// at most this much more of each budget's period.
const CheckpointsEvery = 5 * time.Minute

// Kept is what a long-running writer carries from one run to the next while it leads: each namespace's
// checkpoints, and a digest of what it last wrote into each budget's ConfigMap, so that a run neither reads the
// checkpoints again nor reads or writes a ConfigMap whose figures did not change. It is only ever as old as the
// term: a new leader starts from a new Kept, so memory never stands for what another leader stored since.
type Kept struct {
	mu          sync.Mutex
	checkpoints map[string]*keptCheckpoints // by budget namespace
	figures     map[string]keptFigure       // by budget namespace/name
}

// NewKept is the state of a term that has not run yet.
func NewKept() *Kept {
	return &Kept{checkpoints: map[string]*keptCheckpoints{}, figures: map[string]keptFigure{}}
}

type keptCheckpoints struct {
	stored   map[string]string // as the ConfigMap holds them: read, or last written
	latest   map[string]string // as the last run made them
	storedAt time.Time         // when they were last written; zero when read
}

type keptFigure struct {
	digest    string    // of the ConfigMap's name, figures and period start
	asOf      time.Time // its llmbudget.dev/spend-as-of
	confirmed time.Time // the last run that found these figures
}

// refresh is how old a budget's spend-as-of may grow while its figures do not change: a third of its maxAge, so
// that two runs missed in a row still leave it fresh.
func refresh(c api.CostSource) time.Duration {
	maxAge := c.MaxAgeDuration()
	if maxAge <= 0 {
		maxAge, _ = time.ParseDuration(api.DefaultMaxAge)
	}
	return maxAge / 3
}

// digest names what a budget's ConfigMap says: its name, its data and its annotations but the evaluation time.
func digest(configMap string, data, annotations map[string]string) string {
	a := maps.Clone(annotations)
	delete(a, api.AnnotationSpendAsOf)
	js, _ := json.Marshal([]any{configMap, data, a}) // maps of strings: it cannot fail, and keys are sorted
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:16])
}

// holds reports whether cm holds data, the annotations but the evaluation time, and the spend-source label, and
// when its figures were computed.
func holds(cm *corev1.ConfigMap, data, annotations map[string]string) (time.Time, bool) {
	if _, ok := cm.Labels[api.LabelSpendSource]; !ok {
		return time.Time{}, false
	}
	for k, v := range data {
		if cur, ok := cm.Data[k]; !ok || cur != v {
			return time.Time{}, false
		}
	}
	for k, v := range annotations {
		if k != api.AnnotationSpendAsOf && cm.Annotations[k] != v {
			return time.Time{}, false
		}
	}
	asOf, err := time.Parse(time.RFC3339, cm.Annotations[api.AnnotationSpendAsOf])
	return asOf, err == nil
}

// unchanged reports whether the budget's figures, of digest sum, are those last written, less than fresh before
// now; if so, they are confirmed at now.
func (k *Kept) unchanged(budget, sum string, now time.Time, fresh time.Duration) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.figures[budget]
	if !ok || f.digest != sum || now.Sub(f.asOf) >= fresh {
		return false
	}
	f.confirmed = now
	k.figures[budget] = f
	return true
}

// wrote records the budget's figures, of digest sum and spend-as-of asOf, as its ConfigMap holds them at now.
func (k *Kept) wrote(budget, sum string, asOf, now time.Time) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.figures[budget] = keptFigure{digest: sum, asOf: asOf, confirmed: now}
}

// Confirmed is the evaluation time of the last run that wrote the budget's figures or found them unchanged.
func (k *Kept) Confirmed(budget string) (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.figures[budget]
	return f.confirmed, ok
}

// keepOnly forgets the budgets and namespaces a run did not list, so that Kept holds at most what one run lists.
func (k *Kept) keepOnly(items []item) {
	if k == nil {
		return
	}
	budgets, namespaces := map[string]bool{}, map[string]bool{}
	for _, it := range items {
		budgets[it.namespace+"/"+it.name] = true
		namespaces[it.namespace] = true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	maps.DeleteFunc(k.figures, func(b string, _ keptFigure) bool { return !budgets[b] })
	maps.DeleteFunc(k.checkpoints, func(ns string, _ *keptCheckpoints) bool { return !namespaces[ns] })
}

// checkpointsOf is the namespace's checkpoints as the last run made them, or nil when none has read them.
func (k *Kept) checkpointsOf(namespace string) map[string]string {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.checkpoints[namespace]
	switch {
	case !ok:
		return nil
	case c.latest == nil:
		return map[string]string{}
	}
	return c.latest
}

// madeCheckpoints records a namespace's checkpoints of a run at now: read, the ConfigMap's; made, the run's. It
// says whether they are to be stored: they differ from the stored ones, and those were stored CheckpointsEvery
// ago or more (or read).
func (k *Kept) madeCheckpoints(namespace string, read, made map[string]string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.checkpoints[namespace]
	if !ok {
		c = &keptCheckpoints{stored: read}
		k.checkpoints[namespace] = c
	}
	c.latest = made
	return !maps.Equal(made, c.stored) && (c.storedAt.IsZero() || now.Sub(c.storedAt) >= CheckpointsEvery)
}

// storedCheckpoints records that the namespace's checkpoints were written at now.
func (k *Kept) storedCheckpoints(namespace string, data map[string]string, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.checkpoints[namespace]; ok {
		c.stored, c.storedAt = data, now
	}
}
