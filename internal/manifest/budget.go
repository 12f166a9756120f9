package manifest

import (
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// Budget is a valid LLMCostBudget.
type Budget struct {
	Source
	Namespace, Name string
	Spec            api.Spec // defaulted
	// JSON is the object as written, with metadata.namespace and generation
	// set as the API server sets them: what Metacontroller would send.
	JSON json.RawMessage
}

// ConfigMap is a v1 ConfigMap.
type ConfigMap struct {
	Source
	Namespace, Name string
	JSON            json.RawMessage
}

// budgetDocument is an LLMCostBudget as a manifest may write it: the full
// object metadata (kubectl get -o yaml prints all of it), the spec and status.
type budgetDocument struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       *api.Spec         `json:"spec"`
	Status     *api.Status       `json:"status,omitempty"`
}

// configMapDocument is a v1 ConfigMap.
type configMapDocument struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
	Immutable  *bool             `json:"immutable,omitempty"`
}

func (r *reader) readBudget(o object, name string) {
	var doc budgetDocument
	before := len(r.errs)
	if !r.decodeStrict(o, &doc, name) {
		return
	}
	// An unknown field is often a misspelt one: the spec's rules would only
	// repeat it ("limitUsd" leaves limitUSD unset), so they wait for a clean spec.
	strictOK := len(r.errs) == before
	r.checkMeta(o, name, doc.Metadata, true)
	if !strictOK {
		return
	}
	if doc.Spec == nil {
		r.fail(o, "spec", name, "%sspec: is required", o.prefix)
		return
	}
	spec := *doc.Spec
	spec.Default()
	var verrs api.ValidationError
	if err := spec.Validate(); errors.As(err, &verrs) {
		for _, fe := range verrs {
			r.fail(o, fe.Path, name, "%s%s", o.prefix, fe.Error())
		}
	} else if err != nil {
		r.fail(o, "spec", name, "%s%v", o.prefix, err)
	}
	if len(r.errs) > before {
		return
	}
	ns := namespaceOf(doc.Metadata)
	r.set.Budgets = append(r.set.Budgets, Budget{
		Source: o.at(""), Namespace: ns, Name: doc.Metadata.Name, Spec: spec,
		JSON: withServerDefaults(o.js, ns),
	})
}

func (r *reader) readConfigMap(o object, name string) {
	var doc configMapDocument
	before := len(r.errs)
	if !r.decodeStrict(o, &doc, name) {
		return
	}
	if r.checkMeta(o, name, doc.Metadata, false); len(r.errs) > before {
		return
	}
	r.set.ConfigMaps = append(r.set.ConfigMaps, ConfigMap{
		Source: o.at(""), Namespace: namespaceOf(doc.Metadata), Name: doc.Metadata.Name, JSON: o.js,
	})
}

// checkMeta records what the API server would refuse in metadata.
func (r *reader) checkMeta(o object, name string, md metav1.ObjectMeta, budget bool) {
	fail := func(path, msg string) { r.fail(o, path, name, "%s%s", o.prefix, msg) }
	switch {
	case md.Name == "":
		fail("metadata.name", "metadata.name: is required")
	case budget && len(md.Name) > validation.LabelValueMaxLength: // the CRD's limit
		fail("metadata.name", "metadata.name must be at most 63 characters: workloads name their budget in "+
			"the "+api.LabelBudget+" label, whose values are limited to 63 characters")
	default:
		for _, m := range validation.IsDNS1123Subdomain(md.Name) {
			fail("metadata.name", fmt.Sprintf("metadata.name: Invalid value: %q: %s", md.Name, m))
		}
	}
	if md.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(md.Namespace) {
			fail("metadata.namespace", fmt.Sprintf("metadata.namespace: Invalid value: %q: %s", md.Namespace, m))
		}
	}
}

// namespaceOf is the object's namespace, "default" when unset (kubectl's
// default context namespace).
func namespaceOf(md metav1.ObjectMeta) string {
	if md.Namespace == "" {
		return "default"
	}
	return md.Namespace
}

// withServerDefaults sets metadata.namespace and metadata.generation the way
// kubectl and the API server would.
func withServerDefaults(js []byte, ns string) json.RawMessage {
	var obj map[string]any
	// PreserveInts: a token limit of 2^63-1 must not pass through float64.
	if kjson.UnmarshalCaseSensitivePreserveInts(js, &obj) != nil {
		return js
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	md["namespace"] = ns
	if _, ok := md["generation"]; !ok {
		md["generation"] = 1
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return js
	}
	return out
}
