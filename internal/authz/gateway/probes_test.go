package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/llmbudget/llmbudget/internal/authz"
)

func TestAuthzIsReadyOnlyWhileItsCacheIsCurrent(t *testing.T) {
	current := authz.Cache{Synced: true, Age: time.Second, MaxAge: 30 * time.Second}
	tests := map[string]struct {
		draining bool
		cache    authz.Cache
		want     string
	}{
		"a synced, current cache is ready": {cache: current},
		"a cache that has not synced is not": {cache: authz.Cache{MaxAge: 30 * time.Second},
			want: "the informers have not synced"},
		"a cache past maxCacheAge is not, and says how old it is": {
			cache: authz.Cache{Synced: true, Age: 45*time.Second + 300*time.Millisecond, MaxAge: 30 * time.Second},
			want:  "the cache is stale: the informers last listed or watched 45s ago (maxCacheAge 30s)"},
		"a stopping server is not": {draining: true, cache: current, want: "the server is stopping"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, notReady(tt.draining, tt.cache))
		})
	}
}
