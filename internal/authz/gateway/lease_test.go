package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

const leaseNS, leasePod = "llmbudget-system", "llmbudget-authz-7d9f-x2x4q"

// leaseRig is a reporter over a fake clientset, a store and a clock the test moves.
type leaseRig struct {
	client *fake.Clientset
	store  *authz.Store
	cache  authz.Cache
	now    time.Time
	log    *bytes.Buffer
	mu     sync.Mutex
	r      *gateway.LeaseReporter
}

func newLeaseRig(t *testing.T) *leaseRig {
	t.Helper()
	g := &leaseRig{client: fake.NewClientset(), store: authz.NewStore(), log: &bytes.Buffer{},
		cache: authz.Cache{Synced: true, MaxAge: time.Minute},
		now:   time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)}
	g.r = gateway.NewLeaseReporter(g.client.CoordinationV1(), gateway.LeaseConfig{Namespace: leaseNS, Pod: leasePod,
		Duration: 30 * time.Second, Renew: 10 * time.Second, Refusing: g.store.Refusing,
		Cache: func() authz.Cache { return g.cache },
		Now: func() time.Time {
			g.mu.Lock()
			defer g.mu.Unlock()
			return g.now
		},
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: g.log, mu: &g.mu}, nil))})
	return g
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (g *leaseRig) tick(d time.Duration) {
	g.mu.Lock()
	g.now = g.now.Add(d)
	g.mu.Unlock()
	g.r.Step(context.Background())
}

func (g *leaseRig) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := g.client.CoordinationV1().Leases(leaseNS).Get(context.Background(), gateway.LeaseName(leasePod),
		metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

func (g *leaseRig) block(kind, ns, name string) {
	e := api.EnforcementStatus{Blocking: true, Scope: api.ScopeNamespace}
	if kind == api.ClusterKind {
		e.Namespaces = []string{"team-ml"}
	}
	g.store.SetBudget(authz.Budget{Kind: kind, Namespace: ns, Name: name, Enforcement: e})
}

func report(t *testing.T, l *coordinationv1.Lease) gateway.LeaseReport {
	t.Helper()
	var rep gateway.LeaseReport
	require.NoError(t, json.Unmarshal([]byte(l.Annotations[gateway.AnnotationRefusing]), &rep))
	return rep
}

func TestTheReporterCreatesItsLeaseWithTheContractsFields(t *testing.T) {
	g := newLeaseRig(t)
	g.block(api.Kind, "team-ml", "chatbot")
	g.block(api.ClusterKind, "", "research")
	g.r.Step(context.Background())

	l := g.lease(t)
	assert.Equal(t, "llmbudget-authz."+leasePod, l.Name)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "llmbudget", "app.kubernetes.io/component": "authz"},
		l.Labels)
	assert.Equal(t, leasePod, *l.Spec.HolderIdentity)
	assert.Equal(t, int32(30), *l.Spec.LeaseDurationSeconds)
	assert.True(t, l.Spec.RenewTime.Time.Equal(g.now))
	assert.JSONEq(t, `{"synced":true,"budgets":["ClusterLLMCostBudget research","LLMCostBudget team-ml/chatbot"],`+
		`"truncated":false}`, l.Annotations[gateway.AnnotationRefusing])
}

func TestARenewalMovesTheRenewTimeAndLeavesTheAnnotationAlone(t *testing.T) {
	g := newLeaseRig(t)
	g.block(api.Kind, "team-ml", "chatbot")
	g.r.Step(context.Background())
	first := g.lease(t)

	g.tick(10 * time.Second)
	second := g.lease(t)
	assert.True(t, second.Spec.RenewTime.After(first.Spec.RenewTime.Time), "renewTime moves")
	assert.Equal(t, first.Annotations, second.Annotations, "the annotation does not")
	assert.Equal(t, first.Spec.AcquireTime, second.Spec.AcquireTime)
}

func TestTheAnnotationChangesWhenWhatTheReplicaRefusesForDoes(t *testing.T) {
	tests := []struct {
		name   string
		change func(g *leaseRig)
		want   gateway.LeaseReport
	}{
		{"a budget that starts to block is added", func(g *leaseRig) { g.block(api.Kind, "team-ml", "desk") },
			gateway.LeaseReport{Synced: true, Budgets: []string{"LLMCostBudget team-ml/chatbot",
				"LLMCostBudget team-ml/desk"}}},
		{"a budget whose block lifts is removed", func(g *leaseRig) {
			g.store.SetBudget(authz.Budget{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"})
		}, gateway.LeaseReport{Synced: true, Budgets: []string{}}},
		{"a deleted budget is removed", func(g *leaseRig) { g.store.DeleteBudget(api.Kind, "team-ml", "chatbot") },
			gateway.LeaseReport{Synced: true, Budgets: []string{}}},
		{"a cache past its bound is not synced", func(g *leaseRig) { g.cache.Age = 2 * time.Minute },
			gateway.LeaseReport{Synced: false, Budgets: []string{"LLMCostBudget team-ml/chatbot"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newLeaseRig(t)
			g.block(api.Kind, "team-ml", "chatbot")
			g.r.Step(context.Background())
			tt.change(g)
			g.tick(10 * time.Second)
			assert.Equal(t, tt.want, report(t, g.lease(t)))
		})
	}
}

func TestAChangeIsWrittenAtTheNextStepAndANoChangeOnlyWhenARenewalIsDue(t *testing.T) {
	g := newLeaseRig(t)
	g.r.Step(context.Background())
	writes := func() int {
		n := 0
		for _, a := range g.client.Actions() {
			if a.GetVerb() == "create" || a.GetVerb() == "update" {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, writes())

	g.tick(time.Second)
	assert.Equal(t, 1, writes(), "nothing changed, and the renewal is not due")
	g.block(api.Kind, "team-ml", "chatbot")
	g.tick(time.Second)
	assert.Equal(t, 2, writes(), "a new block is written at once")
	assert.Equal(t, []string{"LLMCostBudget team-ml/chatbot"}, report(t, g.lease(t)).Budgets)
	g.tick(9 * time.Second)
	assert.Equal(t, 2, writes(), "the renewal is due 10s after the last write")
	g.tick(time.Second)
	assert.Equal(t, 3, writes())
}

func TestTheAnnotationListsAtMost2000BudgetsAndSaysItTruncated(t *testing.T) {
	tests := []struct {
		name      string
		budgets   int
		nameLen   int
		listed    int
		truncated bool
	}{
		{"2000 budgets are all listed", 2000, 8, 2000, false},
		{"past 2000, the first 2000 are", 2001, 8, 2000, true},
		{"names past the annotation's bytes are left out", 2000, 253, gateway.MaxLeaseAnnotationBytes /
			len("ClusterLLMCostBudget "+strings.Repeat("0", 253)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newLeaseRig(t)
			for i := range tt.budgets {
				name := fmt.Sprintf("%0*d", tt.nameLen, i)
				g.block(api.ClusterKind, "", name)
			}
			g.r.Step(context.Background())
			l := g.lease(t)
			rep := report(t, l)
			assert.Equal(t, tt.truncated, rep.Truncated)
			assert.Len(t, rep.Budgets, tt.listed)
			assert.True(t, slices.IsSorted(rep.Budgets), "the first ones, sorted")
			assert.Less(t, len(l.Annotations[gateway.AnnotationRefusing]), 256<<10,
				"within the API server's bound on all of an object's annotations")
		})
	}
}

func TestTheReporterDeletesItsLeaseWhenStopped(t *testing.T) {
	g := newLeaseRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		g.r.Run(ctx)
		close(done)
	}()
	require.Eventually(t, func() bool {
		_, err := g.client.CoordinationV1().Leases(leaseNS).Get(context.Background(), gateway.LeaseName(leasePod),
			metav1.GetOptions{})
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the first renewal creates the Lease")
	cancel()
	<-done
	_, err := g.client.CoordinationV1().Leases(leaseNS).Get(context.Background(), gateway.LeaseName(leasePod),
		metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "deleted: %v", err)
}

func TestTheReporterDeletesOnlyTheLeaseItWrote(t *testing.T) {
	g := newLeaseRig(t)
	g.r.Step(context.Background())
	// A successor of the same name (the Pod's container restarted) replaced it.
	leases := g.client.CoordinationV1().Leases(leaseNS)
	require.NoError(t, leases.Delete(context.Background(), gateway.LeaseName(leasePod), metav1.DeleteOptions{}))
	_, err := leases.Create(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: gateway.LeaseName(leasePod), Namespace: leaseNS, UID: "successor"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	g.client.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// The fake clientset ignores preconditions; the API server answers a UID that differs with a conflict.
		if p := a.(k8stesting.DeleteAction).GetDeleteOptions().Preconditions; p != nil && *p.UID != "successor" {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), gateway.LeaseName(leasePod),
				errors.New("precondition failed: UID"))
		}
		return false, nil, nil
	})
	g.r.Delete(context.Background())
	_, err = leases.Get(context.Background(), gateway.LeaseName(leasePod), metav1.GetOptions{})
	assert.NoError(t, err, "the successor's Lease is kept")
	assert.Contains(t, g.log.String(), "not deleted")
}

func TestAFailedWriteIsLoggedAndTriedAgainAtTheNextStep(t *testing.T) {
	tests := []struct {
		name string
		verb string
		err  error
	}{
		{"a create the API server refuses", "create", apierrors.NewForbidden(coordinationv1.Resource("leases"),
			"x", errors.New("RBAC"))},
		{"an update that conflicts with another writer", "update",
			apierrors.NewConflict(coordinationv1.Resource("leases"), "x", errors.New("modified"))},
		{"a get that times out", "get", apierrors.NewTimeoutError("slow", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newLeaseRig(t)
			if tt.verb == "update" {
				g.r.Step(context.Background()) // created, so that the next renewal updates
			}
			failing := true
			g.client.PrependReactor(tt.verb, "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failing {
					return true, nil, tt.err
				}
				return false, nil, nil
			})
			g.block(api.Kind, "team-ml", "chatbot")
			assert.NotPanics(t, func() { g.tick(10 * time.Second) })
			assert.Contains(t, g.log.String(), "authz's Lease not renewed; trying again")

			failing = false
			g.tick(10 * time.Second)
			l := g.lease(t)
			assert.True(t, l.Spec.RenewTime.Time.Equal(g.now), "renewed once the API server answers")
			assert.Equal(t, []string{"LLMCostBudget team-ml/chatbot"}, report(t, l).Budgets)
		})
	}
}

func TestTheDecisionsNeverWaitForTheLeaseWrite(t *testing.T) {
	g := newLeaseRig(t)
	g.block(api.Kind, "team-ml", "chatbot")
	writing, release := make(chan struct{}), make(chan struct{})
	g.client.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		close(writing)
		<-release // an API server that does not answer
		return false, nil, nil
	})
	done := make(chan struct{})
	go func() {
		g.r.Step(context.Background())
		close(done)
	}()
	<-writing
	decided := make(chan struct{})
	go func() {
		g.store.SetBudget(authz.Budget{Kind: api.Kind, Namespace: "team-ml", Name: "desk"}) // the informers write
		_, _, budgets := g.store.View("team-ml")                                            // a decision reads
		assert.Len(t, budgets, 2)
		close(decided)
	}()
	select {
	case <-decided:
	case <-time.After(10 * time.Second):
		t.Fatal("the store waited for the Lease's write")
	}
	close(release)
	<-done
}

func TestCheckLeaseRefusesWhatCannotMakeALease(t *testing.T) {
	ok := gateway.LeaseConfig{Namespace: leaseNS, Pod: leasePod, Duration: 30 * time.Second, Renew: 10 * time.Second}
	tests := []struct {
		name   string
		change func(*gateway.LeaseConfig)
		want   string
	}{
		{"the deployed configuration is valid", func(*gateway.LeaseConfig) {}, ""},
		{"a pod name that is not a valid name", func(c *gateway.LeaseConfig) { c.Pod = "Not_A_Name" }, "pod name"},
		{"no pod name", func(c *gateway.LeaseConfig) { c.Pod = "" }, "pod name"},
		{"a pod name too long for the Lease's", func(c *gateway.LeaseConfig) { c.Pod = strings.Repeat("a", 250) },
			"lease name"},
		{"a namespace that is not a valid name", func(c *gateway.LeaseConfig) { c.Namespace = "a/b" }, "namespace"},
		{"a duration of part of a second", func(c *gateway.LeaseConfig) { c.Duration = 1500 * time.Millisecond },
			"lease duration"},
		{"a renewal not well within the duration", func(c *gateway.LeaseConfig) { c.Renew = 20 * time.Second },
			"renew interval"},
		{"no renewal", func(c *gateway.LeaseConfig) { c.Renew = 0 }, "renew interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			err := c.CheckLease()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
