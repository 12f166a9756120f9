// Package hookwire holds Metacontroller's v2 hook wire types, and RequestError for a request no hook can answer.
// The JSON tags are the contract. Requests model only what the hooks read; responses carry only fields
// Metacontroller knows, because it decodes v2 responses strictly: one unknown field fails the call.
package hookwire

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmbudget/llmbudget/internal/decode"
)

// RequestError is a request no hook can answer at all (not JSON, no parent or object, no name): the caller's
// mistake, answered 400. Any other error a hook returns is the service's own fault, answered 500.
type RequestError struct{ Err error }

// Error is the reason alone: the status code says whose fault it is.
func (e *RequestError) Error() string { return e.Err.Error() }

// Unwrap is the reason, for errors.Is and errors.As.
func (e *RequestError) Unwrap() error { return e.Err }

// BadRequest is a RequestError for the reason format and args give, as fmt.Errorf words it (%w wraps).
func BadRequest(format string, args ...any) error {
	return &RequestError{Err: fmt.Errorf(format, args...)}
}

// ObjectMap is a v2 uniform object map: "Kind.version" (or "Kind.group/version") → "namespace/name" → object.
type ObjectMap map[string]map[string]json.RawMessage

// CustomizeRequest is sent to a customize hook; the watched object is its "parent" for either controller kind.
type CustomizeRequest struct {
	Parent json.RawMessage `json:"parent"`
}

// CustomizeResponse names the related objects Metacontroller should watch and pass to sync.
type CustomizeResponse struct {
	RelatedResources []RelatedResourceRule `json:"relatedResources"`
}

// RelatedResourceRule selects related objects by resource and names.
type RelatedResourceRule struct {
	APIVersion        string                `json:"apiVersion"`
	Resource          string                `json:"resource"`
	LabelSelector     *metav1.LabelSelector `json:"labelSelector,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"` // never with Namespace or Names
	Namespace         string                `json:"namespace,omitempty"`
	Names             []string              `json:"names,omitempty"`
}

// CompositeRequest is sent to a CompositeController's sync and finalize hooks.
type CompositeRequest struct {
	Parent     json.RawMessage `json:"parent"`
	Children   ObjectMap       `json:"children"`
	Related    ObjectMap       `json:"related"`
	Finalizing bool            `json:"finalizing"`
}

// CompositeResponse is a CompositeController sync or finalize answer.
type CompositeResponse struct {
	Status   any   `json:"status"`
	Children []any `json:"children"`
	Tail
}

// Tail ends each sync and finalize answer: when to resync (0: only on a watched change) and whether the object may go.
type Tail struct {
	ResyncAfterSeconds float64 `json:"resyncAfterSeconds,omitempty"`
	Finalized          bool    `json:"finalized,omitempty"`
}

// DecoratorRequest is sent to a DecoratorController's sync and finalize hooks.
type DecoratorRequest struct {
	Object     json.RawMessage `json:"object"`
	Related    ObjectMap       `json:"related"`
	Finalizing bool            `json:"finalizing"`
}

// DecoratorResponse is a decorator's sync or finalize answer; a nil Labels or Annotations value removes its key.
type DecoratorResponse struct {
	Labels      map[string]*string `json:"labels"`
	Annotations map[string]*string `json:"annotations"`
	Status      any                `json:"status,omitempty"`
	Attachments []any              `json:"attachments"`
	Tail
}

// DecodeObject decodes a decorator's object at field of the request ("parent" of customize, "object" of sync),
// refusing as a RequestError one that is missing, does not decode as T, or has no name (name reads metadata.name).
func DecodeObject[T any](raw json.RawMessage, field string, name func(T) string) (T, error) {
	var v T
	if len(raw) == 0 || string(raw) == "null" {
		return v, BadRequest("request has no %s", field)
	}
	if err := decode.Lenient(raw, &v, field); err != nil {
		return v, BadRequest("%w", err)
	}
	if name(v) == "" {
		return v, BadRequest("%s.metadata.name is missing", field)
	}
	return v, nil
}

// CarriedBy reports whether an object with these labels and annotations already carries what r asks for: every key
// r sets has its value, and every key r removes is absent.
func (r DecoratorResponse) CarriedBy(labels, annotations map[string]string) bool {
	return carries(labels, r.Labels) && carries(annotations, r.Annotations)
}

func carries(have map[string]string, want map[string]*string) bool {
	for k, v := range want {
		if got, ok := have[k]; (v == nil && ok) || (v != nil && (!ok || got != *v)) {
			return false
		}
	}
	return true
}

// Group keys of the object maps this service reads.
const (
	ConfigMapGroup     = "ConfigMap.v1"
	ResourceQuotaGroup = "ResourceQuota.v1"
	BudgetGroup        = "LLMCostBudget.llmbudget.dev/v1alpha1"
	NamespaceGroup     = "Namespace.v1"
	TaskRecordGroup    = "TaskRecord." + KelosAPIVersion
)

// What a budget with a TaskRecords source relates: Kelos's records, at the version Kelos stores them.
const (
	KelosAPIVersion     = "kelos.dev/v1alpha2"
	TaskRecordsResource = "taskrecords"
)

// Key is the v2 object-map key of a namespaced object; a cluster-scoped object's key is its bare name.
func Key(namespace, name string) string { return namespace + "/" + name }
