// The Lease: each replica of llmbudget authz keeps one coordination.k8s.io Lease in its own namespace,
// llmbudget-authz.<its Pod's name>, that says it runs and which budgets it refuses for, so that the budgets' status
// can tell whether the gateway enforces their block. It is not leader election: every replica writes its own.
//
// Expected Flow:
//  1. Every second, the reporter reads what the replica refuses for (the Store's Refusing, and whether the cache is
//     current). It creates its Lease, or updates it, when that has changed since its last write, or once Renew has
//     passed since then: spec.renewTime moves at each write; the annotation llmbudget.dev/authz-refusing changes
//     only when what it says does. So a new block shows within a second, and a quiet replica writes every Renew.
//  2. When its context ends (SIGTERM), it deletes its Lease, so that a stopped replica disappears at once; a
//     killed one ages out after spec.leaseDurationSeconds.
//
// Guarantees:
//   - The decisions never wait for the Lease: the reporter runs on its own goroutine and holds the Store's lock
//     only to copy the names.
//   - A failed call to the API server is logged and tried again at the next step; it never stops the server.
//   - The annotation lists at most MaxLeaseBudgets budgets and MaxLeaseAnnotationBytes bytes of names; past
//     either, "truncated" is true.

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
)

// Names and bounds of the Lease.
const (
	// LeasePrefix starts every replica's Lease name; its Pod's name follows.
	LeasePrefix = "llmbudget-authz."
	// AnnotationRefusing is the annotation that says what the replica refuses for (LeaseReport, as JSON).
	AnnotationRefusing = api.Group + "/authz-refusing"
	// MaxLeaseBudgets bounds the budgets the annotation lists.
	MaxLeaseBudgets = 2000
	// MaxLeaseAnnotationBytes bounds the names the annotation lists, well within the API server's 256 KiB for all
	// of an object's annotations: 2000 of the longest names would not fit.
	MaxLeaseAnnotationBytes = 128 << 10
	// deleteTimeout bounds the deletion of the Lease at shutdown.
	deleteTimeout = 5 * time.Second
	// leaseCheck is how often the reporter looks whether what it says has changed.
	leaseCheck = time.Second
)

// LeaseReport is the annotation AnnotationRefusing.
type LeaseReport struct {
	// Synced is whether the informers have synced and are current (authz.Cache.Current).
	Synced bool `json:"synced"`
	// Budgets are the budgets the replica refuses for, sorted: "LLMCostBudget <namespace>/<name>" or
	// "ClusterLLMCostBudget <name>".
	Budgets []string `json:"budgets"`
	// Truncated is whether some were left out, past MaxLeaseBudgets or MaxLeaseAnnotationBytes.
	Truncated bool `json:"truncated"`
}

// LeaseConfig is the reporter's configuration.
type LeaseConfig struct {
	Namespace string        // the Lease's, the replica's own
	Pod       string        // the replica's Pod name: the Lease's holderIdentity, and its name after LeasePrefix
	Duration  time.Duration // spec.leaseDurationSeconds
	Renew     time.Duration // between renewals, each bounded by it
	Refusing  func() []string
	Cache     func() authz.Cache
	Now       func() time.Time
	Logger    *slog.Logger
}

// LeaseName is the Lease of the replica in Pod pod.
func LeaseName(pod string) string { return LeasePrefix + pod }

// CheckLease is why the configuration cannot make a Lease, if it cannot: the names must be valid, and a renewal
// must come well within the duration (at most half of it), so that one failed renewal does not age the Lease out.
func (c LeaseConfig) CheckLease() error {
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		return fmt.Errorf("namespace %q: %s", c.Namespace, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(c.Pod); len(msgs) > 0 {
		return fmt.Errorf("pod name %q: %s", c.Pod, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(LeaseName(c.Pod)); len(msgs) > 0 {
		return fmt.Errorf("lease name %q: %s", LeaseName(c.Pod), strings.Join(msgs, "; "))
	}
	if c.Duration < time.Second || c.Duration%time.Second != 0 {
		return fmt.Errorf("lease duration %s: want whole seconds, at least 1s", c.Duration)
	}
	if c.Renew <= 0 || 2*c.Renew > c.Duration {
		return fmt.Errorf("renew interval %s: want above 0 and at most half the lease duration %s", c.Renew, c.Duration)
	}
	return nil
}

// LeaseReporter keeps the replica's Lease.
type LeaseReporter struct {
	cfg    LeaseConfig
	leases coordinationclient.LeaseInterface
	cur    *coordinationv1.Lease // the Lease as last written or read; nil to read it again
	said   string                // the annotation as last written
	at     time.Time             // when it was last written
}

// NewLeaseReporter returns a reporter of the Lease cfg names, through client.
func NewLeaseReporter(client coordinationclient.LeasesGetter, cfg LeaseConfig) *LeaseReporter {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &LeaseReporter{cfg: cfg, leases: client.Leases(cfg.Namespace)}
}

// Run writes the Lease (Step) every second, or every Renew if shorter, until ctx ends, then deletes it.
func (r *LeaseReporter) Run(ctx context.Context) {
	t := time.NewTicker(min(leaseCheck, r.cfg.Renew))
	defer t.Stop()
	for {
		r.Step(ctx)
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
			defer cancel()
			r.Delete(dctx)
			return
		case <-t.C:
		}
	}
}

// Step writes the Lease if what it says has changed since its last write, or a renewal is due, or the last write
// failed, bounded by Renew; a failure is logged, and the next step reads the Lease again.
func (r *LeaseReporter) Step(ctx context.Context) {
	report, err := json.Marshal(r.report())
	if err != nil {
		r.cfg.Logger.Error("authz's Lease not renewed", "annotation", AnnotationRefusing, "err", err)
		return
	}
	if r.cur != nil && string(report) == r.said && r.cfg.Now().Sub(r.at) < r.cfg.Renew {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Renew)
	defer cancel()
	if err := r.renew(ctx, string(report)); err != nil {
		r.cur = nil
		r.cfg.Logger.Warn("authz's Lease not renewed; trying again", "namespace", r.cfg.Namespace,
			"lease", LeaseName(r.cfg.Pod), "err", err)
	}
}

func (r *LeaseReporter) renew(ctx context.Context, report string) error {
	name := LeaseName(r.cfg.Pod)
	now := metav1.NewMicroTime(r.cfg.Now())
	if r.cur == nil {
		l, err := r.leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.cfg.Namespace},
				Spec: coordinationv1.LeaseSpec{AcquireTime: &now}}
			r.fill(l, report, now)
			if l, err = r.leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create Lease %s/%s: %w", r.cfg.Namespace, name, err)
			}
			r.cur, r.said, r.at = l, report, now.Time
			return nil
		}
		if err != nil {
			return fmt.Errorf("get Lease %s/%s: %w", r.cfg.Namespace, name, err)
		}
		r.cur = l
	}
	l := r.cur.DeepCopy()
	r.fill(l, report, now)
	l, err := r.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update Lease %s/%s: %w", r.cfg.Namespace, name, err)
	}
	r.cur, r.said, r.at = l, report, now.Time
	return nil
}

// fill sets what the replica says in l, keeping the rest (another writer's labels or annotations).
func (r *LeaseReporter) fill(l *coordinationv1.Lease, report string, now metav1.MicroTime) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels["app.kubernetes.io/name"] = "llmbudget"
	l.Labels["app.kubernetes.io/component"] = "authz"
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationRefusing] = report
	secs := int32(r.cfg.Duration / time.Second)
	holder := r.cfg.Pod
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &secs, &now
}

// report is what the replica refuses for now.
func (r *LeaseReporter) report() LeaseReport {
	rep := LeaseReport{Synced: r.cfg.Cache().Current(), Budgets: []string{}}
	size := 0
	for _, who := range r.cfg.Refusing() {
		if len(rep.Budgets) == MaxLeaseBudgets || size+len(who) > MaxLeaseAnnotationBytes {
			rep.Truncated = true
			break
		}
		rep.Budgets = append(rep.Budgets, who)
		size += len(who)
	}
	return rep
}

// Delete deletes the Lease, with the UID it was last written with when known, so that a successor's of the same
// name is kept; a failure is logged: the Lease then ages out.
func (r *LeaseReporter) Delete(ctx context.Context) {
	name := LeaseName(r.cfg.Pod)
	opts := metav1.DeleteOptions{}
	if r.cur != nil {
		opts.Preconditions = metav1.NewUIDPreconditions(string(r.cur.UID))
	}
	err := r.leases.Delete(ctx, name, opts)
	switch {
	case err == nil || apierrors.IsNotFound(err):
		r.cfg.Logger.Info("authz's Lease deleted", "namespace", r.cfg.Namespace, "lease", name)
	default:
		r.cfg.Logger.Warn("authz's Lease not deleted: it ages out", "namespace", r.cfg.Namespace, "lease", name,
			"after", r.cfg.Duration.String(), "err", err)
	}
	r.cur = nil
}
