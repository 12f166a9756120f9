package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// Budget is a valid LLMCostBudget. Its JSON has metadata.namespace and
// generation set as the API server sets them: what Metacontroller would send.
type Budget struct {
	Object
	Spec api.Spec // defaulted
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

func (r *reader) fail(d Doc, path, object, format string, args ...any) {
	r.errs = append(r.errs, d.Errorf(path, object, format, args...))
}

func (r *reader) readObject(d Doc) {
	h, ok := d.Head()
	name := h.Name()
	gv, _ := schema.ParseGroupVersion(h.APIVersion)
	switch {
	case !ok:
		r.fail(d, "", "", "not a Kubernetes object: a mapping is expected")
	case h.APIVersion == "" || h.Kind == "":
		r.fail(d, "", "", "not a Kubernetes object: apiVersion and kind are required")
	case h.IsList():
		items, errs := d.Items(name)
		r.errs = append(r.errs, errs...)
		for _, item := range items {
			r.readObject(item)
		}
	case h.APIVersion == api.APIVersion && h.Kind == api.ClusterKind:
		r.set.ClusterBudgets = append(r.set.ClusterBudgets, object(d, h))
	case gv.Group != api.Group && strings.EqualFold(h.Kind, api.Kind):
		r.fail(d, "kind", name, "apiVersion %q is not llmbudget's: an LLMCostBudget is %s "+
			"(llmbudget migrate converts llm-cost-budget-operator and Kelos budgets)", h.APIVersion, api.APIVersion)
	case gv.Group == api.Group && gv.Version != api.Version:
		r.fail(d, "apiVersion", name, "apiVersion %q is not served: LLMCostBudget is %s", h.APIVersion, api.APIVersion)
	case gv.Group == api.Group && h.Kind != api.Kind:
		r.fail(d, "kind", name, "kind %q is not served by %s: its only kind is %s (kinds are case-sensitive)", h.Kind, api.APIVersion, api.Kind)
	case gv.Group == api.Group:
		r.readBudget(d, h)
	case h.Kind == "ConfigMap" && h.APIVersion == "v1":
		r.readConfigMap(d, h)
	case h.Kind == "ConfigMap" && gv.Group == "":
		r.fail(d, "apiVersion", name, "ConfigMap is apiVersion v1, not %q", h.APIVersion)
	default:
		r.set.Skipped = append(r.set.Skipped, object(d, h))
	}
}

func object(d Doc, h Head) Object {
	return Object{
		Source: d.At(""), APIVersion: h.APIVersion, Kind: h.Kind,
		Namespace: h.Metadata.Namespace, Name: h.Metadata.Name, JSON: d.JSON,
	}
}

func (r *reader) readBudget(d Doc, h Head) {
	name := h.Name()
	var doc budgetDocument
	errs, ok := d.Decode(&doc, name)
	if !ok {
		r.errs = append(r.errs, errs...)
		return
	}
	// An unknown field is often a misspelt one: the spec's rules would only
	// repeat it ("limitUsd" leaves limitUSD unset), so they wait for a clean spec.
	strictOK := len(errs) == 0
	errs = append(errs, d.CheckMeta(name, doc.Metadata, true)...)
	if strictOK {
		errs = append(errs, checkSpec(d, name, doc.Spec)...)
	}
	r.errs = append(r.errs, errs...)
	if len(errs) > 0 {
		return
	}
	o := object(d, h)
	o.Namespace = namespaceOf(doc.Metadata)
	o.JSON = withServerDefaults(d.JSON, o.Namespace)
	r.set.Budgets = append(r.set.Budgets, Budget{Object: o, Spec: *doc.Spec})
}

// checkSpec defaults spec and holds it to the API's rules.
func checkSpec(d Doc, name string, spec *api.Spec) Errors {
	if spec == nil {
		return Errors{d.Errorf("spec", name, "%sspec: is required", d.Prefix)}
	}
	spec.Default()
	err := spec.Validate()
	var verrs api.ValidationError
	if err != nil && !errors.As(err, &verrs) {
		return Errors{d.Errorf("spec", name, "%s%v", d.Prefix, err)}
	}
	var errs Errors
	for _, fe := range verrs {
		errs = append(errs, d.Errorf(fe.Path, name, "%s%s", d.Prefix, fe.Error()))
	}
	return errs
}

func (r *reader) readConfigMap(d Doc, h Head) {
	var doc configMapDocument
	errs, ok := d.Decode(&doc, h.Name())
	if ok {
		errs = append(errs, d.CheckMeta(h.Name(), doc.Metadata, false)...)
	}
	r.errs = append(r.errs, errs...)
	if len(errs) > 0 {
		return
	}
	o := object(d, h)
	o.Namespace = namespaceOf(doc.Metadata)
	r.set.ConfigMaps = append(r.set.ConfigMaps, o)
}

// CheckMeta is what the API server would refuse in the metadata of an
// LLMCostBudget (budget) or another object.
func (d Doc) CheckMeta(object string, md metav1.ObjectMeta, budget bool) Errors {
	var errs Errors
	fail := func(path, format string, args ...any) {
		errs = append(errs, d.Errorf(path, object, "%s%s", d.Prefix, fmt.Sprintf(format, args...)))
	}
	switch {
	case md.Name == "" && md.GenerateName != "":
		fail("metadata.name", "metadata.name: is required: generateName is not enough, kubectl apply needs a fixed name")
	case md.Name == "":
		fail("metadata.name", "metadata.name: is required")
	case budget && len(md.Name) > validation.LabelValueMaxLength: // the CRD's limit
		fail("metadata.name", "metadata.name must be at most 63 characters: workloads name their budget in "+
			"the "+api.LabelBudget+" label, whose values are limited to 63 characters")
	default:
		for _, m := range validation.IsDNS1123Subdomain(md.Name) {
			fail("metadata.name", "metadata.name: Invalid value: %q: %s", md.Name, m)
		}
	}
	if md.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(md.Namespace) {
			fail("metadata.namespace", "metadata.namespace: Invalid value: %q: %s", md.Namespace, m)
		}
	}
	return errs
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
	var u unstructured.Unstructured
	if u.UnmarshalJSON(js) != nil {
		return js
	}
	u.SetNamespace(ns)
	if _, set, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "generation"); !set {
		u.SetGeneration(1)
	}
	out, err := u.MarshalJSON()
	if err != nil {
		return js
	}
	return out
}
