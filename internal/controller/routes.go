// The routes: the five controllers at the paths that the Metacontroller objects in metacontroller/ call, served by
// package metacontroller's handler.

package controller

import (
	"github.com/julienschmidt/httprouter"

	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// Lists are the routes whose requests grow with the cluster: a ClusterLLMCostBudget's sync carries every Namespace
// it selects (with their quotas and spend ConfigMaps), and a Namespace's sync every ClusterLLMCostBudget.
var Lists = []string{"clusterbudget", "namespace"}

// Option sets what the controllers are told of the deployment.
type Option func(*options)

type options struct{ authzNamespace string }

// WithAuthzNamespace names the namespace where the llmbudget authz replicas keep their Leases (default
// DefaultAuthzNamespace); "" relates none, and budgets report no Authz point.
func WithAuthzNamespace(namespace string) Option {
	return func(o *options) { o.authzNamespace = namespace }
}

// NewRouter is the service's router: metacontroller.New with cfg and llmbudget's controllers.
func NewRouter(cfg metacontroller.Config, opts ...Option) (*httprouter.Router, error) {
	o := options{authzNamespace: DefaultAuthzNamespace}
	for _, opt := range opts {
		opt(&o)
	}
	cfg.Lists = Lists
	cfg.Composite = map[string]metacontroller.CompositeHook{
		"budget":        Budget{AuthzNamespace: o.authzNamespace},
		"clusterbudget": ClusterBudget{AuthzNamespace: o.authzNamespace},
	}
	cfg.Decorator = map[string]metacontroller.DecoratorHook{
		"workload":  Workload{},
		"namespace": Namespace{},
		"gate":      Gate{},
	}
	return metacontroller.New(cfg)
}
