package metacontroller

import (
	"encoding/json"
	"fmt"

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
type ObjectMap map[string]map[string]Raw

// Raw is an object of an ObjectMap as it arrived: unlike json.RawMessage, decoding it does not copy it but keeps
// a slice of the request body, which the handler leaves unchanged until the call is answered. A request of 10,000
// Namespaces holds them once, in its body.
type Raw []byte

// UnmarshalJSON keeps data itself.
func (r *Raw) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

// MarshalJSON writes the object as it arrived, or null.
func (r Raw) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return r, nil
}

// Key is the v2 object-map key of a namespaced object; a cluster-scoped object's key is its bare name.
func Key(namespace, name string) string { return namespace + "/" + name }

// ObjectMeta is the part of an object's metadata that hooks read, for any kind: decoding it never fails on what
// else the metadata holds (timestamps, managedFields, owner references).
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	UID         string            `json:"uid"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Qualified names an object namespace/name, or by its name alone when it is cluster-scoped (or has none).
func Qualified(namespace, name string) string {
	if namespace == "" || name == "" {
		return name
	}
	return namespace + "/" + name
}

// GroupKey is the object-map key of a kind at apiVersion: "Kind.version", or "Kind.group/version".
func GroupKey(apiVersion, kind string) string { return kind + "." + apiVersion }

// Group keys of the core objects in an object map.
const (
	ConfigMapGroup     = "ConfigMap.v1"
	ResourceQuotaGroup = "ResourceQuota.v1"
	NamespaceGroup     = "Namespace.v1"
)

// DecodeObject decodes an object at field of the request ("parent" of customize, "object" of sync), refusing as a
// RequestError one that is missing, does not decode as T, or has no name (name reads metadata.name).
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
