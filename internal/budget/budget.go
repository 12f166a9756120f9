// Package budget holds the LLMCostBudget CompositeController's hooks as pure
// functions from Metacontroller requests (and the clock) to responses.
//
// It guarantees that a well-formed request about a bad budget is answered, not
// refused: a spec that cannot be decoded or validated yields state Unknown
// with reason InvalidSpec. Only a request without a usable parent is an error
// (ErrBadRequest), which the HTTP layer turns into 400.
package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/children"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/finalizer"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/rawjson"
)

// ErrBadRequest marks a request that cannot be answered at all.
var ErrBadRequest = errors.New("bad request")

// cleanupRetry is how soon Cleanup asks to be called again while the quota is
// still observed; Metacontroller usually calls sooner, on the quota's deletion.
const cleanupRetry = 5 * time.Second

// Summary is what a hook call did, for the one log line per call.
type Summary struct {
	Namespace string
	Name      string
	State     api.State
	Reason    string
	Finalized bool
}

// parent is a budget as received, its spec and status kept raw so that a spec
// of the wrong shape is reported, and a foreign status ignored, rather than
// failing the request.
type parent struct {
	Metadata api.ObjectMeta  `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
	Status   json.RawMessage `json:"status"`
}

func decodeParent(raw json.RawMessage) (parent, error) {
	var p parent
	if len(raw) == 0 || string(raw) == "null" {
		return p, fmt.Errorf("%w: request has no parent", ErrBadRequest)
	}
	// raw is a RawMessage of a decoded request, so valid JSON: the members
	// the parent does not use (managedFields, annotations) are skipped
	// without validating them again.
	if err := rawjson.UnmarshalValid(raw, &p); err != nil {
		return p, fmt.Errorf("%w: parent: %v", ErrBadRequest, describeJSONError("parent", err))
	}
	if p.Metadata.Name == "" {
		return p, fmt.Errorf("%w: parent.metadata.name is missing", ErrBadRequest)
	}
	return p, nil
}

// budget decodes spec and status; a spec decoding error is returned for the
// caller to report as InvalidSpec.
func (p parent) budget() (api.LLMCostBudget, error) {
	b := api.LLMCostBudget{APIVersion: api.APIVersion, Kind: api.Kind, Metadata: p.Metadata}
	var st api.Status
	if len(p.Status) > 0 && json.Unmarshal(p.Status, &st) == nil {
		b.Status = &st
	}
	if len(p.Spec) == 0 || string(p.Spec) == "null" {
		return b, errors.New("spec is missing")
	}
	if err := json.Unmarshal(p.Spec, &b.Spec); err != nil {
		return b, describeJSONError("spec", err)
	}
	return b, nil
}

// describeJSONError names the field a JSON type error is about.
func describeJSONError(root string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := root
		if te.Field != "" {
			path += "." + te.Field
		}
		return fmt.Errorf("%s: must be %s, got JSON %s", path, jsonType(te.Type.Kind().String()), te.Value)
	}
	return fmt.Errorf("%s: %w", root, err)
}

func jsonType(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "a list"
	case "struct", "map", "ptr":
		return "an object"
	}
	return goKind
}

// Customize names the spend ConfigMap as related, so that Metacontroller
// watches it and passes it to sync.
func Customize(req hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error) {
	p, err := decodeParent(req.Parent)
	if err != nil {
		return hookwire.CustomizeResponse{}, err
	}
	resp := hookwire.CustomizeResponse{RelatedResources: []hookwire.RelatedResourceRule{}}
	b, err := p.budget()
	if err != nil || b.Spec.CostSource.ConfigMapName == "" {
		// Sync reports the broken spec; there is nothing to relate.
		return resp, nil
	}
	resp.RelatedResources = append(resp.RelatedResources, hookwire.RelatedResourceRule{
		APIVersion: "v1",
		Resource:   "configmaps",
		Namespace:  p.Metadata.Namespace,
		Names:      []string{b.Spec.CostSource.ConfigMapName},
	})
	return resp, nil
}

// Sync answers the sync and finalize hooks: Apply evaluates the budget,
// Cleanup lifts enforcement and lets the budget go once no quota remains.
func Sync(req hookwire.CompositeRequest, now time.Time) (hookwire.CompositeResponse, Summary, error) {
	p, err := decodeParent(req.Parent)
	if err != nil {
		return hookwire.CompositeResponse{}, Summary{}, err
	}
	sum := Summary{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name}
	res, err := finalizer.Reconcile(p, req.Finalizing, func(ev finalizer.Event[parent]) (finalizer.Result[hookwire.CompositeResponse], error) {
		if ev.Action == finalizer.Cleanup {
			return cleanup(ev.Object, req), nil
		}
		return apply(ev.Object, req, now, &sum), nil
	})
	if err != nil {
		return hookwire.CompositeResponse{}, sum, err
	}
	res.Response.ResyncAfterSeconds = res.Requeue.Seconds()
	res.Response.Finalized = res.Finalized
	sum.Finalized = res.Finalized
	return res.Response, sum, nil
}

func apply(p parent, req hookwire.CompositeRequest, now time.Time, sum *Summary) finalizer.Result[hookwire.CompositeResponse] {
	b, specErr := p.budget()
	in := evaluate.Input{Budget: b, Now: now}
	in.SpendData, in.ConfigMapFound = spendData(req.Related, p.Metadata.Namespace, b.Spec.CostSource.ConfigMapName)
	var r evaluate.Result
	if specErr != nil {
		r = evaluate.Invalid(in, specErr)
	} else {
		r = evaluate.Evaluate(in)
	}
	sum.State = r.Status.State
	if c := meta.FindStatusCondition(r.Status.Conditions, api.ConditionBudgetEvaluated); c != nil {
		sum.Reason = c.Reason
	}
	owner := children.BudgetOwner(p.Metadata)
	kids := make([]any, 0, len(r.Announcements)+1)
	for _, e := range children.Events(owner, r.Announcements) {
		kids = append(kids, e)
	}
	if r.Quota != nil {
		kids = append(kids, children.Quota(owner, r.Quota))
	}
	return finalizer.Result[hookwire.CompositeResponse]{
		Response: hookwire.CompositeResponse{Status: r.Status, Children: kids},
		Requeue:  finalizer.RequeueAfter(r.ResyncAfter),
	}
}

// cleanup desires no children, so Metacontroller deletes the quota (and our
// Events) first; the budget may go once no ResourceQuota is observed. The
// status is left as it was: it never decodes the spec, so a budget whose spec
// is broken, or that was never synced, can still be deleted.
func cleanup(p parent, req hookwire.CompositeRequest) finalizer.Result[hookwire.CompositeResponse] {
	return Cleanup(p.Status, req)
}

// Cleanup is the finalize answer of a budget of either kind, whose status
// was status: no children desired, finalized once no ResourceQuota (in any
// namespace) is observed, the status kept as it was.
func Cleanup(status json.RawMessage, req hookwire.CompositeRequest) finalizer.Result[hookwire.CompositeResponse] {
	done := len(req.Children[hookwire.ResourceQuotaGroup]) == 0
	var kept any
	if isObject(status) {
		kept = status
	}
	res := finalizer.Result[hookwire.CompositeResponse]{
		Response:  hookwire.CompositeResponse{Status: kept, Children: []any{}},
		Finalized: done,
		Requeue:   finalizer.AwaitChange(),
	}
	if !done {
		res.Requeue = finalizer.RequeueAfter(cleanupRetry)
	}
	return res
}

type configMap struct {
	Data map[string]string `json:"data"`
}

// spendData finds the spend ConfigMap among the related objects.
func spendData(related hookwire.ObjectMap, namespace, name string) (map[string]string, bool) {
	raw, ok := related[hookwire.ConfigMapGroup][hookwire.Key(namespace, name)]
	if !ok || name == "" {
		return nil, false
	}
	var cm configMap
	if !decodeConfigMap(raw, &cm) {
		cm = configMap{}
		if err := rawjson.Unmarshal(raw, &cm); err != nil {
			// The API server only stores string data; treat anything else as empty.
			return map[string]string{}, true
		}
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm.Data, true
}

// decodeConfigMap reads the data straight from the raw ConfigMap: a ledger
// holds hundreds of values, and this is the hot path of every sync. raw is
// valid JSON (a related object of a decoded request), so the ConfigMap and
// its data are walked without validating them again.
// It reports false for anything encoding/json might read differently, which
// then decides.
func decodeConfigMap(raw []byte, cm *configMap) bool {
	seen := false
	return rawjson.Walk(raw, func(key, value []byte) bool {
		if string(key) != "data" {
			return rawjson.Ignorable(key, "data")
		}
		if seen {
			return false
		}
		seen = true
		var ok bool
		cm.Data, ok = rawjson.StringMap(value)
		return ok
	})
}

// isObject reports whether raw JSON is an object (Metacontroller's status type).
func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}
