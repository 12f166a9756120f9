// Package httpapi is llmbudget's hook service: its five controllers, at the paths that the Metacontroller objects
// in metacontroller/ call, served by package metacontroller's handler. It holds no logic of its own.
package httpapi

import (
	"github.com/julienschmidt/httprouter"

	"github.com/llmbudget/llmbudget/internal/controller/budget"
	"github.com/llmbudget/llmbudget/internal/controller/clusterbudget"
	"github.com/llmbudget/llmbudget/internal/controller/gatelabel"
	"github.com/llmbudget/llmbudget/internal/controller/posture"
	"github.com/llmbudget/llmbudget/internal/controller/workload"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// Lists are the routes whose requests grow with the cluster: a ClusterLLMCostBudget's sync carries every Namespace
// it selects (with their quotas and spend ConfigMaps), and a Namespace's sync every ClusterLLMCostBudget.
var Lists = []string{"clusterbudget", "namespace"}

// New is the service's router: metacontroller.New with cfg and llmbudget's controllers.
func New(cfg metacontroller.Config) (*httprouter.Router, error) {
	cfg.Lists = Lists
	cfg.Composite = map[string]metacontroller.CompositeHook{
		"budget":        budget.Controller{},
		"clusterbudget": clusterbudget.Controller{},
	}
	cfg.Decorator = map[string]metacontroller.DecoratorHook{
		"workload":  workload.Controller{},
		"namespace": posture.Controller{},
		"gate":      gatelabel.Controller{},
	}
	return metacontroller.New(cfg)
}
