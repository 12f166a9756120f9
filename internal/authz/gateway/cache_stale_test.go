package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

// apiServer answers the fake clients' lists and watches until it is cut off; /version is always answered.
type apiServer struct {
	mu       sync.Mutex
	cut      bool
	watches  []*watch.FakeWatcher
	refusals atomic.Int32
}

func (a *apiServer) refusing() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cut {
		a.refusals.Add(1)
	}
	return a.cut
}

func (a *apiServer) forbidden(action k8stesting.Action) error {
	return apierrors.NewForbidden(action.GetResource().GroupResource(), "", nil)
}

func (a *apiServer) list(empty func() runtime.Object) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		if a.refusing() {
			return true, nil, a.forbidden(action)
		}
		return true, empty(), nil
	}
}

func (a *apiServer) watch(action k8stesting.Action) (bool, watch.Interface, error) {
	if a.refusing() {
		return true, nil, a.forbidden(action)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w := watch.NewFake()
	a.watches = append(a.watches, w)
	return true, w, nil
}

// cutOff ends every watch and refuses lists and watches from now on.
func (a *apiServer) cutOff() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cut = true
	for _, w := range a.watches {
		w.Stop()
	}
	a.watches = nil
}

func (a *apiServer) restore() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cut = false
}

func TestCacheAgeIsTheTimeSinceTheInformersLastListedOrWatched(t *testing.T) {
	srv := &apiServer{}
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	md.PrependReactor("list", "*", srv.list(func() runtime.Object { return &metav1.List{} }))
	md.PrependWatchReactor("*", srv.watch)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{
			{Group: api.Group, Version: api.Version, Resource: api.Resource}:            "LLMCostBudgetList",
			{Group: api.Group, Version: api.Version, Resource: "clusterllmcostbudgets"}: "ClusterLLMCostBudgetList",
		})
	dyn.PrependReactor("list", "*", srv.list(func() runtime.Object {
		return &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": api.Group + "/" + api.Version,
			"kind": "LLMCostBudgetList", "metadata": map[string]any{}}}
	}))
	dyn.PrependWatchReactor("*", srv.watch)
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}, FakedServerVersion: &version.Info{Major: "1"}}
	beats := func() int { return len(disc.Actions()) }

	var clock atomic.Int64
	start := time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC)
	clock.Store(start.UnixNano())
	c := gateway.NewCache(gateway.Clients{Metadata: md, Dynamic: dyn, Discovery: disc}, authz.NewStore(),
		gateway.CacheConfig{MaxAge: 30 * time.Second, Heartbeat: 5 * time.Millisecond,
			Now:    func() time.Time { return time.Unix(0, clock.Load()) },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, c.Start(ctx))
	require.Eventually(t, c.Synced, 10*time.Second, 10*time.Millisecond, "the informers list")

	// advance sets the clock and returns once two heartbeats have run at it.
	advance := func(d time.Duration) {
		clock.Store(start.Add(d).UnixNano())
		n := beats()
		require.Eventually(t, func() bool { return beats() >= n+2 }, 5*time.Second, time.Millisecond)
	}

	advance(20 * time.Second)
	assert.Zero(t, c.State().Age, "idle watches stay current while the API server answers")

	srv.cutOff()
	require.Eventually(t, func() bool { return srv.refusals.Load() > 0 }, 5*time.Second, time.Millisecond,
		"the informers try again and are refused")
	advance(65 * time.Second)
	st := c.State()
	assert.Equal(t, 45*time.Second, st.Age, "with no watch open, /version answering keeps nothing current")
	assert.Equal(t, authz.Cache{Synced: true, Age: 45 * time.Second, MaxAge: 30 * time.Second}, st)

	srv.restore()
	require.Eventually(t, func() bool { return c.State().Age == 0 }, 10*time.Second, 10*time.Millisecond,
		"a list and watch that succeed again make the cache current")
}
