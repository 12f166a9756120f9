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

// NewRouter is the service's router: metacontroller.New with cfg and llmbudget's controllers.
func NewRouter(cfg metacontroller.Config) (*httprouter.Router, error) {
	cfg.Lists = Lists
	cfg.Composite = map[string]metacontroller.CompositeHook{
		"budget":        Budget{},
		"clusterbudget": ClusterBudget{},
	}
	cfg.Decorator = map[string]metacontroller.DecoratorHook{
		"workload":  Workload{},
		"namespace": Namespace{},
		"gate":      Gate{},
	}
	return metacontroller.New(cfg)
}
