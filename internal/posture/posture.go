// Package posture holds the Namespace DecoratorController's hooks: a namespace's block posture, as a label any
// policy engine can select on (NetworkPolicy, Kueue's ClusterQueue, admission policies, meshes and gateways all
// select namespaces by label) and an annotation that says which budgets block it and why.
//
// It also says, as LabelBudgetsBlocking, whether any of the namespace's LLMCostBudgets blocks, so that the Policy
// gate's bindings can skip namespaces where none does without the API server matching each budget on every write.
//
// It guarantees that it only ever sets or removes LabelBlocked, LabelBudgetsBlocking and AnnotationBlockedBy,
// never another label, annotation or anything else of the Namespace, and that it never holds up a namespace's
// deletion: the decorator has no finalize hook, so Metacontroller puts no finalizer on Namespaces. Namespace labels
// are cluster-scoped, so the namespace's own users can neither remove the first nor set the second.
package posture

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/gatelabel"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/money"
)

// The object-map keys of the budgets this decorator reads.
var (
	budgetGroup        = metacontroller.GroupKey(api.APIVersion, api.Kind)
	clusterBudgetGroup = metacontroller.GroupKey(api.APIVersion, api.ClusterKind)
)

// What this package sets on a Namespace.
const (
	// LabelBlocked is "true" while a budget blocks new workloads in the namespace; absent otherwise.
	LabelBlocked = api.Group + "/blocked"
	// AnnotationBlockedBy names the blocking budgets and why, abbreviated; absent while none blocks.
	AnnotationBlockedBy = api.Group + "/blocked-by"
	// LabelBudgetsBlocking is "true" while one of the namespace's LLMCostBudgets blocks (gatelabel.Blocks), and
	// "false" while none does, including in a namespace without budgets. The Policy gate's bindings skip a
	// namespace labelled "false", so a write there does not pay for the API server's matching of its many
	// budgets: only "false" lets a write past, and only Namespace writers can set it.
	LabelBudgetsBlocking = api.Group + "/budgets-blocking"
	clusterResource      = "clusterllmcostbudgets"
)

// The annotation stays small whatever the budgets say: each reason is cut to maxReason bytes and at most
// maxListed budgets are named (the rest are counted), far below the 256 KiB all annotations share.
const (
	maxReason   = 256
	maxListed   = 8
	settleRetry = 10 * time.Second // as the workload decorator: look again while an update is pending
)

// Controller is the Namespace DecoratorController's hooks. It has no finalize hook, so no finalize route: a
// Namespace never waits on this service.
type Controller struct{}

var _ metacontroller.DecoratorHook = Controller{}

type namespace struct {
	Metadata metacontroller.ObjectMeta `json:"metadata"`
}

func decodeNamespace(raw json.RawMessage, field string) (namespace, error) {
	return metacontroller.DecodeObject(raw, field, func(ns namespace) string { return ns.Metadata.Name })
}

// Customize relates the namespace's LLMCostBudgets and every ClusterLLMCostBudget, of those the gate decorator
// labels gatelabel.LabelBlocking: only a budget whose status says it blocks can block the namespace, and a budget
// that does not is then never sent, nor does its change sync a namespace. Which cluster budgets close the
// namespace is in their status, which a selector cannot match, so every labelled one is related.
func (Controller) Customize(req metacontroller.CustomizeRequest) (metacontroller.CustomizeResponse, error) {
	ns, err := decodeNamespace(req.Parent, "parent")
	if err != nil {
		return metacontroller.CustomizeResponse{}, err
	}
	labelled := &metav1.LabelSelector{MatchLabels: map[string]string{gatelabel.LabelBlocking: "true"}}
	return metacontroller.CustomizeResponse{RelatedResources: []metacontroller.RelatedResourceRule{
		{APIVersion: api.APIVersion, Resource: api.Resource, Namespace: ns.Metadata.Name, LabelSelector: labelled},
		{APIVersion: api.APIVersion, Resource: clusterResource, LabelSelector: labelled},
	}}, nil
}

// Sync answers the decorator's sync hook: the label and annotation while a budget blocks the namespace, their
// removal while none does. A warn-mode budget blocks nothing, so it never labels a namespace.
func (Controller) Sync(req metacontroller.DecoratorRequest, _ time.Time) (
	metacontroller.DecoratorResponse, metacontroller.Summary, error,
) {
	ns, err := decodeNamespace(req.Object, "object")
	if err != nil {
		return metacontroller.DecoratorResponse{}, metacontroller.Summary{}, err
	}
	name := ns.Metadata.Name
	var blocks []block
	for _, raw := range req.Related[budgetGroup] {
		if b, ok := blocking(raw, api.Kind); ok && b.namespace == name {
			blocks = append(blocks, b)
		}
	}
	gate := budgetsBlocking(req.Related[budgetGroup], name)
	for _, raw := range req.Related[clusterBudgetGroup] {
		if b, ok := blocking(raw, api.ClusterKind); ok && slices.Contains(b.closes, name) {
			blocks = append(blocks, b)
		}
	}
	// A budget can arrive under more than one key of the related map: each is named, and counted, once.
	slices.SortFunc(blocks, func(a, b block) int { return strings.Compare(a.who, b.who) })
	blocks = slices.CompactFunc(blocks, func(a, b block) bool { return a.who == b.who })
	resp := metacontroller.DecoratorResponse{
		Labels:      map[string]*string{LabelBlocked: nil, LabelBudgetsBlocking: gate},
		Annotations: map[string]*string{AnnotationBlockedBy: nil},
		Attachments: []any{},
	}
	if len(blocks) > 0 {
		resp.Labels[LabelBlocked] = new("true")
		resp.Annotations[AnnotationBlockedBy] = new(blockedBy(blocks))
	}
	if !resp.CarriedBy(ns.Metadata.Labels, ns.Metadata.Annotations) {
		resp.ResyncAfterSeconds = settleRetry.Seconds()
	}
	return resp, summary(name, blocks), nil
}

// summary logs the namespace's posture and the budgets that block it: a log line, not a list (the annotation names
// them), so at most three.
func summary(namespace string, blocks []block) metacontroller.Summary {
	state, budgets := "NotBlocked", make([]string, 0, min(len(blocks), 4))
	for _, b := range blocks[:min(len(blocks), 3)] {
		budgets = append(budgets, b.who)
	}
	if len(blocks) > 0 {
		state = "Blocked"
	}
	if len(blocks) > 3 {
		budgets = append(budgets, fmt.Sprintf("and %d more", len(blocks)-3))
	}
	return metacontroller.Summary{State: state,
		Attrs: metacontroller.Attrs("budget", strings.Join(budgets, ", "), "state", state,
			"workload", "Namespace "+namespace)}
}

// block is a budget that blocks: who it is, its namespace (a team budget's) or the namespaces it closes (a cluster
// budget's), and its sentence.
type block struct {
	who, namespace, message string
	closes                  []string
}

// blocking reads a related budget; ok only while its status says it refuses (blocking, and not in Warn mode). A
// budget this version cannot read blocks nothing here: the admission policy reads it on its own.
func blocking(raw []byte, kind string) (block, bool) {
	var b struct {
		Metadata metacontroller.ObjectMeta `json:"metadata"`
		Status   struct {
			Enforcement *api.EnforcementStatus `json:"enforcement"`
		} `json:"status"`
	}
	if decode.Lenient(raw, &b, "budget") != nil {
		return block{}, false
	}
	enf := b.Status.Enforcement
	if enf == nil || !enf.Blocking || enf.Mode == api.ModeWarn {
		return block{}, false
	}
	who := kind + " " + b.Metadata.Name
	if b.Metadata.Namespace != "" {
		who = kind + " " + b.Metadata.Namespace + "/" + b.Metadata.Name
	}
	return block{who: who, namespace: b.Metadata.Namespace, message: enf.Message, closes: enf.Namespaces}, true
}

// budgetsBlocking is LabelBudgetsBlocking's value for the namespace's LLMCostBudgets among related: "true" while
// one's status says it blocks, read as the gate decorator reads it (gatelabel.Blocks), so while it is, or is about
// to be, a parameter of the gate's bindings; "false" otherwise. A budget it cannot read, whatever its namespace,
// counts as blocking.
func budgetsBlocking(related map[string]metacontroller.Raw, namespace string) *string {
	for _, raw := range related {
		var b struct {
			Metadata metacontroller.ObjectMeta `json:"metadata"`
			Status   json.RawMessage           `json:"status"`
		}
		if decode.Lenient(raw, &b, "budget") != nil || b.Metadata.Namespace == namespace && gatelabel.Blocks(b.Status) {
			return new("true")
		}
	}
	return new("false")
}

// blockedBy is the annotation: each blocking budget and its sentence, "; " apart.
func blockedBy(blocks []block) string {
	var parts []string
	for _, b := range blocks[:min(len(blocks), maxListed)] {
		why := b.message
		if why == "" {
			why = b.who + " is blocking"
		}
		parts = append(parts, money.Abbreviate(why, maxReason))
	}
	if n := len(blocks) - maxListed; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, "; ")
}
