package spendwriter

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/llmbudget/llmbudget/internal/promspend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// CheckpointPrefix is the name of the ConfigMap of a budget namespace's checkpoints in Writer.Checkpoints, less the
// namespace: one key per budget, its promspend.Checkpoint in JSON.
const CheckpointPrefix = "llmbudget-spend-checkpoints."

// checkpoints are a run's checkpoints: a namespace's read once, when its first budget asks, and written back as
// soon as the last of its budgets is done, so that a run cut short by its deadline keeps those of the namespaces
// it finished. A checkpoint that cannot be read or written costs only time: its budget is asked for its whole
// period.
type checkpoints struct {
	w      Writer
	mu     sync.Mutex
	ns     map[string]*nsCheckpoints
	listed map[string][]string // the run's budgets, by namespace
	left   map[string]int      // how many of them are not done yet
	now    time.Time           // the run's
}

type nsCheckpoints struct {
	mu     sync.Mutex
	loaded bool
	read   map[string]string // as the ConfigMap held them
	made   map[string]string // by this run
}

func newCheckpoints(w Writer, items []item, now time.Time) *checkpoints {
	c := &checkpoints{w: w, ns: map[string]*nsCheckpoints{}, listed: map[string][]string{}, left: map[string]int{},
		now: now}
	for _, it := range items {
		c.listed[it.namespace] = append(c.listed[it.namespace], it.name)
		c.left[it.namespace]++
	}
	return c
}

func (c *checkpoints) of(namespace string) *nsCheckpoints {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.ns[namespace]
	if !ok {
		n = &nsCheckpoints{made: map[string]string{}}
		c.ns[namespace] = n
	}
	return n
}

// get is the checkpoint of budget namespace/name, or nil.
func (c *checkpoints) get(ctx context.Context, namespace, name string) *promspend.Checkpoint {
	if c == nil {
		return nil
	}
	n := c.of(namespace)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.loaded {
		n.read = c.w.Kept.checkpointsOf(namespace)
		n.loaded = n.read != nil
	}
	if !n.loaded {
		n.loaded = true
		err := c.w.call(ctx, func(ctx context.Context) error {
			cm, err := c.w.Kube.CoreV1().ConfigMaps(c.w.Checkpoints).Get(ctx, CheckpointPrefix+namespace,
				metav1.GetOptions{})
			if err == nil {
				n.read = cm.Data
			}
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			c.w.Log.Warn("checkpoints not read: their budgets are asked for their whole period",
				"configMap", c.w.Checkpoints+"/"+CheckpointPrefix+namespace,
				"reason", text.Abbreviate(err.Error(), maxMessage))
		}
	}
	js, ok := n.read[name]
	if !ok {
		return nil
	}
	var cp promspend.Checkpoint
	err := json.Unmarshal([]byte(js), &cp)
	if err == nil {
		err = cp.Validate()
	}
	if err != nil {
		c.w.Log.Warn("checkpoint refused: its budget is asked for its whole period",
			"budget", namespace+"/"+name, "configMap", c.w.Checkpoints+"/"+CheckpointPrefix+namespace,
			"reason", text.Abbreviate(err.Error(), maxMessage))
		return nil
	}
	return &cp
}

// put keeps budget namespace/name's checkpoint until the namespace is done.
func (c *checkpoints) put(namespace, name string, cp *promspend.Checkpoint) {
	if c == nil || cp == nil {
		return
	}
	js, err := json.Marshal(cp)
	if err != nil {
		return // a float64 growth past JSON (NaN, Inf): Figures refused it already
	}
	n := c.of(namespace)
	n.mu.Lock()
	n.made[name] = string(js)
	n.mu.Unlock()
}

// done counts one budget of namespace done, written or not; after its last, it writes the namespace's checkpoints
// if they changed: those the run made, and those read of listed budgets it did not write. Those of budgets no
// longer listed are dropped.
func (c *checkpoints) done(ctx context.Context, namespace string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.left[namespace]--
	last := c.left[namespace] == 0
	n := c.ns[namespace]
	c.mu.Unlock()
	if !last || n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	data := map[string]string{}
	for _, name := range c.listed[namespace] {
		if js, ok := n.made[name]; ok {
			data[name] = js
		} else if js, ok := n.read[name]; ok {
			data[name] = js
		}
	}
	switch {
	case len(n.made) == 0:
	case c.w.Kept != nil:
		if c.w.Kept.madeCheckpoints(namespace, n.read, data, c.now) && c.write(ctx, namespace, data) {
			c.w.Kept.storedCheckpoints(namespace, data, c.now)
		}
	case !maps.Equal(data, n.read):
		c.write(ctx, namespace, data)
	}
}

// write stores the namespace's checkpoints, and says whether it did.
func (c *checkpoints) write(ctx context.Context, namespace string, data map[string]string) bool {
	name := CheckpointPrefix + namespace
	cm := corev1ac.ConfigMap(name, c.w.Checkpoints).WithData(data)
	encoded, err := json.Marshal(cm)
	if err == nil {
		err = promspend.CheckConfigMapSize(c.w.Checkpoints+"/"+name, encoded)
	}
	if err == nil {
		err = c.w.call(ctx, func(ctx context.Context) error {
			_, err := c.w.Kube.CoreV1().ConfigMaps(c.w.Checkpoints).Apply(ctx, cm,
				metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
			return err
		})
	}
	if err != nil {
		c.w.Log.Warn("checkpoints not written: their budgets are asked for their whole period next run",
			"configMap", c.w.Checkpoints+"/"+name, "reason", text.Abbreviate(err.Error(), maxMessage))
	}
	return err == nil
}
