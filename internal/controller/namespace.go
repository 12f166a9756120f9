// The Namespace DecoratorController's hooks: a namespace's block posture, as a label any
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

package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/text"
)

// clusterBudgetGroup is the object-map key of the cluster budgets this decorator reads, beside budgetGroup.
var clusterBudgetGroup = metacontroller.GroupKey(api.APIVersion, api.ClusterKind)

// What this package sets on a Namespace.
const (
	// LabelBlocked is "true" while a budget blocks new workloads in the namespace; absent otherwise.
	LabelBlocked = api.Group + "/blocked"
	// AnnotationBlockedBy names the blocking budgets and why, abbreviated; absent while none blocks.
	AnnotationBlockedBy = api.Group + "/blocked-by"
	// LabelBudgetsBlocking is "true" while one of the namespace's LLMCostBudgets may refuse (api.StatusMayRefuse), and
	// "false" while none does, including in a namespace without budgets. The Policy gate's bindings skip a
	// namespace labelled "false", so a write there does not pay for the API server's matching of its many
	// budgets: only "false" lets a write past, and only Namespace writers can set it.
	LabelBudgetsBlocking = api.Group + "/budgets-blocking"
	clusterResource      = "clusterllmcostbudgets"
)

// The annotation stays small whatever the budgets say: each reason is cut to maxReason bytes and at most
// maxListed budgets are named (the rest are counted), far below the 256 KiB all annotations share.
const (
	maxReason = 256
	maxListed = 8
)

// Namespace is the Namespace DecoratorController's hooks. It has no finalize hook, so no finalize route: a
// Namespace never waits on this service.
type Namespace struct{}

var _ metacontroller.DecoratorHook = Namespace{}

type namespace struct {
	Metadata metacontroller.ObjectMeta `json:"metadata"`
}

func decodeNamespace(raw json.RawMessage, field string) (namespace, error) {
	return metacontroller.DecodeObject(raw, field, func(ns namespace) string { return ns.Metadata.Name })
}

// Customize relates the namespace's LLMCostBudgets and every ClusterLLMCostBudget, of those the gate decorator
// labels api.LabelBlocking: only a budget whose status says it blocks can block the namespace, and a budget
// that does not is then never sent, nor does its change sync a namespace. Which cluster budgets close the
// namespace is in their status, which a selector cannot match, so every labelled one is related.
func (Namespace) Customize(req metacontroller.CustomizeRequest) (metacontroller.CustomizeResponse, error) {
	ns, err := decodeNamespace(req.Parent, "parent")
	if err != nil {
		return metacontroller.CustomizeResponse{}, err
	}
	labelled := &metav1.LabelSelector{MatchLabels: map[string]string{api.LabelBlocking: "true"}}
	return metacontroller.CustomizeResponse{RelatedResources: []metacontroller.RelatedResourceRule{
		{APIVersion: api.APIVersion, Resource: api.Resource, Namespace: ns.Metadata.Name, LabelSelector: labelled},
		{APIVersion: api.APIVersion, Resource: clusterResource, LabelSelector: labelled},
	}}, nil
}

// Sync answers the decorator's sync hook: the label and annotation while a budget blocks the namespace, their
// removal while none does. A warn-mode budget blocks nothing, so it never labels a namespace.
func (Namespace) Sync(req metacontroller.DecoratorRequest, _ time.Time) (
	metacontroller.DecoratorResponse, metacontroller.Summary, error,
) {
	ns, err := decodeNamespace(req.Object, "object")
	if err != nil {
		return metacontroller.DecoratorResponse{}, metacontroller.Summary{}, err
	}
	name := ns.Metadata.Name
	var blocks []block
	gate := new("false")
	for _, raw := range req.Related[budgetGroup] {
		b, read := readBudget(raw)
		// LabelBudgetsBlocking reads the budget as the gate decorator does (api.StatusMayRefuse): while it is, or is
		// about to be, a parameter of the gate's bindings. A budget it cannot read, whatever its namespace, counts.
		if !read || b.Metadata.Namespace == name && api.StatusMayRefuse(ref(api.Kind, b.Metadata), b.Status) {
			gate = new("true")
		}
		if bl, ok := b.blocking(name); ok {
			blocks = append(blocks, bl)
		}
	}
	for _, raw := range req.Related[clusterBudgetGroup] {
		if bl, ok := readCluster(raw, name); ok {
			blocks = append(blocks, bl)
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
	return resp, namespaceSummary(name, blocks), nil
}

// summary logs the namespace's posture and the budgets that block it: a log line, not a list (the annotation names
// them), so at most three.
func namespaceSummary(namespace string, blocks []block) metacontroller.Summary {
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

// block is a budget that blocks the namespace: who it is, and its sentence.
type block struct {
	who, message string
}

// budget is a related budget, read once: its status stays a slice of the request.
type namespaceBudget struct {
	Metadata metacontroller.ObjectMeta `json:"metadata"`
	Status   metacontroller.Raw        `json:"status"`
}

func readBudget(raw []byte) (namespaceBudget, bool) {
	var b namespaceBudget
	if decode.Lenient(raw, &b, "budget") != nil {
		return namespaceBudget{}, false
	}
	return b, true
}

// blocking is the team budget's block of the namespace; ok only while its status says it refuses some caller there
// (api.EnforcementStatus.RefusesIn). A budget this version cannot read blocks nothing here: the admission policy
// reads it on its own.
func (b namespaceBudget) blocking(namespace string) (block, bool) {
	var st status
	if len(b.Status) == 0 || decode.Lenient(b.Status, &st, "status") != nil {
		return block{}, false
	}
	return st.block(api.Kind, b.Metadata, namespace)
}

// readCluster reads a related cluster budget in one pass, its block of the namespace only. The namespaces it closes
// are not decoded: 120 budgets of 20,000 namespaces each, which a request within the list limit holds, would be 2.4
// million strings where the request holds them already; closes looks one up in place.
func readCluster(raw []byte, namespace string) (block, bool) {
	var b struct {
		Metadata metacontroller.ObjectMeta `json:"metadata"`
		Status   status                    `json:"status"`
	}
	if decode.Lenient(raw, &b, "budget") != nil {
		return block{}, false
	}
	return b.Status.block(api.ClusterKind, b.Metadata, namespace)
}

// status is what a budget's status says of its block.
type status struct {
	Enforcement *struct {
		Blocking   bool               `json:"blocking"`
		Mode       api.Mode           `json:"mode"`
		Scope      api.Scope          `json:"scope"`
		Message    string             `json:"message"`
		Namespaces metacontroller.Raw `json:"namespaces"`
	} `json:"enforcement"`
}

// block is the budget's block of the namespace, by the refusal rule (api.EnforcementStatus.RefusesIn). The rule
// reads the namespaces a cluster budget closes, which are looked up in place (readCluster): it is handed only the
// one asked about, when the budget closes it.
func (st status) block(kind string, md metacontroller.ObjectMeta, namespace string) (block, bool) {
	enf := st.Enforcement
	if enf == nil || !enf.Blocking || !stringsOrNull(enf.Namespaces) {
		return block{}, false
	}
	rule := api.EnforcementStatus{Blocking: enf.Blocking, Mode: enf.Mode, Scope: enf.Scope}
	if kind == api.ClusterKind && closes(enf.Namespaces, namespace) {
		rule.Namespaces = []string{namespace}
	}
	of := ref(kind, md)
	if !rule.RefusesIn(of, namespace) {
		return block{}, false
	}
	who := kind + " " + md.Name
	if md.Namespace != "" {
		who = kind + " " + md.Namespace + "/" + md.Name
	}
	return block{who: who, message: enf.Message}, true
}

// ref names a related budget for the refusal rule.
func ref(kind string, md metacontroller.ObjectMeta) api.BudgetRef {
	return api.BudgetRef{Kind: kind, Namespace: md.Namespace, Name: md.Name}
}

// stringsOrNull reports whether raw (valid JSON, as the request was decoded whole) is absent, null or an array of
// strings, as status.enforcement.namespaces must be; only a backslash, which no namespace name needs, makes it
// decode the array to tell.
func stringsOrNull(raw metacontroller.Raw) bool {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return true
	case raw[0] != '[':
		return false
	case bytes.IndexByte(raw, '\\') >= 0:
		var names []string
		return json.Unmarshal(raw, &names) == nil
	}
	// Between the strings, which hold no escaped quote, only commas and spaces.
	quoted := false
	for _, c := range raw[1 : len(raw)-1] {
		switch {
		case c == '"':
			quoted = !quoted
		case !quoted && c != ',' && c != ' ' && c != '\t' && c != '\n' && c != '\r':
			return false
		}
	}
	return true
}

// closes reports whether names, an array stringsOrNull accepted, holds namespace, without decoding it: a namespace
// name (a DNS label) needs no escaping, so it is there exactly when its quoted form is.
func closes(names metacontroller.Raw, namespace string) bool {
	if len(validation.IsDNS1123Label(namespace)) > 0 || bytes.IndexByte(names, '\\') >= 0 {
		var list []string
		return json.Unmarshal(names, &list) == nil && slices.Contains(list, namespace)
	}
	return bytes.Contains(names, []byte(`"`+namespace+`"`))
}

// blockedBy is the annotation: each blocking budget and its sentence, "; " apart.
func blockedBy(blocks []block) string {
	var parts []string
	for _, b := range blocks[:min(len(blocks), maxListed)] {
		why := b.message
		if why == "" {
			why = b.who + " is blocking"
		}
		parts = append(parts, text.Abbreviate(why, maxReason))
	}
	if n := len(blocks) - maxListed; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, "; ")
}
