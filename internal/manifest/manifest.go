// Package manifest reads LLMCostBudget and ConfigMap manifests as the API server admits them, so that
// `llmbudget eval` can check a budget before `kubectl apply`. `llmbudget migrate` reads its inputs with
// ReadInputs, Docs and Doc's strict decoding and metadata check.
//
// # Guarantees
//
//   - Decoding is strict, as kubectl apply's field validation is: an unknown or wrongly-cased field, a duplicate
//     key or a value of the wrong type is an error naming the field's path ("spec.limitUsd").
//
//   - A budget Read returns without error has a valid name and a spec passing v1alpha1's Validate once defaulted.
//
//   - Every error names the file and, when the YAML parses, the line of its field (or of the nearest enclosing one).
//
//   - What the API server refuses for size is refused, with the field and the limit named: an object over the
//     1.5 MiB etcd stores, annotations over 256 KiB in all, a ConfigMap's data over 1 MiB.
//
//   - An input is read whole or refused: UTF-16 with a byte-order mark is transcoded, other encodings refused,
//     and a document the YAML parser sees as several is refused (see Docs). Inputs over MaxInputBytes are
//     refused before they are parsed.
//
// Files may hold several YAML or JSON documents, `kind: List` objects (what `kubectl get llmb,cm -o yaml` prints)
// and LLMCostBudgetList objects; a directory stands for the .yaml, .yml and .json files under it, as with
// kubectl apply -R -f. Objects of other kinds are skipped and reported in Set.Skipped, files in Set.SkippedFiles.
// Problems are worded as the API server words them (apimachinery's field.Error), after file:line:.
package manifest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// Source is where an object or field is written.
type Source struct {
	File string
	Line int // 1-based; 0 when unknown
}

func (s Source) String() string {
	if s.Line == 0 {
		return s.File
	}
	return fmt.Sprintf("%s:%d", s.File, s.Line)
}

// Error is one problem of a manifest, at the line of the field it names.
type Error struct {
	Source
	Object  string // "LLMCostBudget team-ml/chatbot"; "" when unknown
	Message string
}

func (e Error) Error() string {
	if e.Object == "" {
		return e.String() + ": " + e.Message
	}
	return e.String() + ": " + e.Object + ": " + e.Message
}

// Errors are problems in reading order, one a line.
type Errors []Error

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, err := range e {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Set is what Read found.
type Set struct {
	Budgets    []Budget
	ConfigMaps []Object
	// ClusterBudgets are read as written; the Namespaces they select are among Skipped.
	ClusterBudgets []Object
	Skipped        []Object      // every other kind, Namespaces included
	SkippedFiles   []SkippedFile // in the directories given, the files not read (and empty files)
	// Warnings are what the API server admits and the hook reports (a time zone its database lacks), when
	// Options.StrictZones does not refuse them.
	Warnings Errors
}

// Options tune Read.
type Options struct {
	// Exclude are globs (filepath.Match) of files and directories not to read: one without a "/" matches a
	// name, one with a "/" the path as named or walked ("examples/*/spend.yaml").
	Exclude []string
	// LenientZones admits a time zone the time zone database lacks, as the API server does (its pattern checks
	// only the spelling), as a warning: the hook then reports the budget Unknown (InvalidSpec).
	LenientZones bool
}

// Object is an object as written.
type Object struct {
	Source
	APIVersion, Kind, Namespace, Name string
	JSON                              json.RawMessage
}

// Head is o's type and name, to name it in messages.
func (o Object) Head() Head {
	h := Head{APIVersion: o.APIVersion, Kind: o.Kind}
	h.Metadata.Name, h.Metadata.Namespace = o.Name, o.Namespace
	return h
}

// Budget is a valid LLMCostBudget. Its JSON has metadata.namespace and generation set as the API server sets
// them: what Metacontroller would send.
type Budget struct {
	Object
	Spec api.Spec // defaulted
}

// Read reads the named files (see ReadInputs); it returns an Errors of every invalid object, or the first I/O error.
// An empty file (no document, only comments or blanks) is skipped, and noted in SkippedFiles, as kubectl apply skips
// it; when no input holds a document, each empty file named is refused, as kubectl refuses "no objects". Two
// objects of the same kind, namespace and name are refused, each named with its place: kubectl apply would apply
// one over the other.
func Read(names []string, stdin io.Reader) (Set, error) {
	return ReadWith(names, stdin, Options{})
}

// ReadWith is Read, as opts say.
func ReadWith(names []string, stdin io.Reader, opts Options) (Set, error) {
	r := reader{opts: opts}
	var all int
	var emptyNamed []string
	skipped, err := readInputs(names, stdin, opts.Exclude, func(in Input) error {
		docs := 0
		err := EachDocIn(in.Name, in.Text(), func(d Doc) {
			docs++
			r.readObject(d)
		})
		all += docs
		switch {
		case err != nil:
			all++ // a document that is not YAML is one: the run fails on it, not on the empty files
			r.errs = append(r.errs, *err)
		case docs == 0 && in.InDir:
			r.set.SkippedFiles = append(r.set.SkippedFiles, SkippedFile{in.Name, "empty: no YAML document"})
		case docs == 0:
			emptyNamed = append(emptyNamed, in.Name)
		}
		return nil
	})
	for _, name := range emptyNamed {
		if all > 0 {
			r.set.SkippedFiles = append(r.set.SkippedFiles, SkippedFile{name, "empty: no YAML document"})
		} else {
			r.errs = append(r.errs, Error{Source: Source{File: name}, Message: "is empty: no YAML document"})
		}
	}
	r.set.SkippedFiles = append(skipped, r.set.SkippedFiles...)
	r.errs = append(r.errs, duplicates(r.set)...)
	if err == nil && len(r.errs) > 0 {
		err = r.errs
	}
	return r.set, err
}

type reader struct {
	opts Options
	set  Set
	errs Errors
}

// duplicates are the objects that another of the same kind, namespace and name precedes, each naming both places.
func duplicates(set Set) Errors {
	var errs Errors
	first := map[[4]string]Source{}
	all := append(slices.Concat(set.ConfigMaps, set.ClusterBudgets, set.Skipped), make([]Object, len(set.Budgets))...)
	for i, b := range set.Budgets {
		all[len(all)-len(set.Budgets)+i] = b.Object
	}
	slices.SortStableFunc(all, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	for _, o := range all {
		gv, _ := schema.ParseGroupVersion(o.APIVersion)
		key := [4]string{gv.Group, o.Kind, o.Namespace, o.Name}
		if o.Name == "" {
			continue
		}
		if at, dup := first[key]; dup {
			errs = append(errs, Error{Source: o.Source, Object: o.Head().Name(),
				Message: fmt.Sprintf("also at %s: kubectl apply would apply one over the other; give each once", at)})
			continue
		}
		first[key] = o.Source
	}
	return errs
}

// budgetDocument has the full object metadata, as kubectl get -o yaml prints it.
type budgetDocument struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            *api.Spec         `json:"spec"`
	Status          *api.Status       `json:"status,omitempty"`
}

type configMapDocument struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Data            map[string]string `json:"data,omitempty"`
	BinaryData      map[string][]byte `json:"binaryData,omitempty"`
	Immutable       *bool             `json:"immutable,omitempty"`
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
	case !h.IsList() && len(d.JSON) > MaxObjectBytes:
		r.fail(d, "", name, "%sthe object is %d bytes of JSON: %s (1.5 MiB, what etcd stores per object by default)",
			d.Prefix, len(d.JSON), field.TooLong(field.NewPath("object"), "", MaxObjectBytes).ErrorBody())
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
		r.fail(d, "kind", name, "kind %q is not served by %s: its only kind is %s (kinds are case-sensitive)",
			h.Kind, api.APIVersion, api.Kind)
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
	src := d.Line()
	if h.APIVersion == api.APIVersion && src.Line == 0 { // a budget is named by its line in every message about it
		src = d.At("")
	}
	return Object{
		Source: src, APIVersion: h.APIVersion, Kind: h.Kind,
		Namespace: h.Metadata.Namespace, Name: h.Metadata.Name, JSON: d.JSON,
	}
}

func (r *reader) readBudget(d Doc, h Head) {
	name := h.Name()
	var doc budgetDocument
	errs, ok := d.Decode(&doc, name)
	if ok {
		// An unknown field is often a misspelt one: the spec's rules would only repeat it ("limitUsd" leaves
		// limitUSD unset), so they wait for a clean spec.
		strictOK := len(errs) == 0
		errs = append(errs, d.CheckMeta(name, doc.Metadata, true)...)
		if strictOK {
			spec, warnings := r.checkSpec(d, name, doc.Spec)
			errs = append(errs, spec...)
			r.set.Warnings = append(r.set.Warnings, warnings...)
		}
	}
	r.errs = append(r.errs, errs...)
	if len(errs) > 0 {
		return
	}
	o := object(d, h)
	o.Namespace = cmp.Or(doc.Metadata.Namespace, "default") // kubectl's default context namespace
	o.JSON = withServerDefaults(d.JSON, o.Namespace)
	r.set.Budgets = append(r.set.Budgets, Budget{Object: o, Spec: *doc.Spec})
}

// ZonePattern is the CRD's rule for spec.period.timeZone (deploy/crd): the API server checks the spelling alone.
const ZonePattern = `^[A-Za-z][-+_A-Za-z0-9]*(/[-+_A-Za-z0-9]+)*$`

var zonePattern = regexp.MustCompile(ZonePattern)

// maxZoneLength is the CRD's maxLength of spec.period.timeZone.
const maxZoneLength = 64

// admittedZone is whether fe refuses a time zone the API server admits: spelt as its pattern wants, within its
// length.
func admittedZone(fe *field.Error) bool {
	zone, ok := fe.BadValue.(string)
	return ok && fe.Field == "spec.period.timeZone" && fe.Type == field.ErrorTypeInvalid &&
		len(zone) <= maxZoneLength && zonePattern.MatchString(zone)
}

// checkSpec is what the API server refuses in a budget's spec, and with Options.LenientZones the time zones it
// admits though the time zone database lacks them, as warnings.
func (r *reader) checkSpec(d Doc, name string, spec *api.Spec) (errs, warnings Errors) {
	if spec == nil { // in the API server's words, as every field error here
		return Errors{d.Errorf("spec", name, "%s%s", d.Prefix, field.Required(field.NewPath("spec"), ""))}, nil
	}
	spec.Default()
	all := append(spec.Validate(), ledgerKey(spec)...)
	var admitted field.ErrorList
	if r.opts.LenientZones {
		all = slices.DeleteFunc(all, func(fe *field.Error) bool {
			if admittedZone(fe) {
				admitted = append(admitted, fe)
				return true
			}
			return false
		})
	}
	warnings = d.fieldErrors(name, admitted)
	for i := range warnings {
		warnings[i].Message += ": not in the time zone database; the API server admits it, and the hook " +
			"reports the budget Unknown (InvalidSpec)"
	}
	return d.fieldErrors(name, all), warnings
}

// ledgerKey is the rule keyPrefix's has for format Total, for key with DailyLedger: a DailyLedger reads the keys
// keyPrefix names, so a key there is a mistake that would otherwise go unnoticed. The CRD refuses it too; the
// hook does not, so that a budget stored before the rule keeps evaluating (its key is ignored, as it always was).
func ledgerKey(spec *api.Spec) field.ErrorList {
	if spec.CostSource.Format == api.DailyLedger && spec.CostSource.Key != "" {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "costSource", "key"),
			"costSource.key is only allowed when costSource.format is Total; a DailyLedger reads keyPrefix")}
	}
	return nil
}

// fieldErrors places field errors (apimachinery's, worded as the API server words them) at their fields' lines.
func (d Doc) fieldErrors(object string, errs field.ErrorList) Errors {
	var out Errors
	for _, fe := range errs {
		out = append(out, d.Errorf(fe.Field, object, "%s%s", d.Prefix, fe.Error()))
	}
	return out
}

func (r *reader) readConfigMap(d Doc, h Head) {
	var doc configMapDocument
	errs, ok := d.Decode(&doc, h.Name())
	if ok {
		errs = append(errs, d.CheckMeta(h.Name(), doc.Metadata, false)...)
		errs = append(errs, d.fieldErrors(h.Name(), checkConfigMapData(doc))...)
	}
	r.errs = append(r.errs, errs...)
	if len(errs) > 0 {
		return
	}
	o := object(d, h)
	o.Namespace = cmp.Or(doc.Metadata.Namespace, "default")
	r.set.ConfigMaps = append(r.set.ConfigMaps, o)
}

// CheckMeta is what the API server would refuse in the metadata of an LLMCostBudget (budget) or another object.
func (d Doc) CheckMeta(object string, md metav1.ObjectMeta, budget bool) Errors {
	var errs Errors
	fail := func(path, format string, args ...any) {
		errs = append(errs, d.Errorf(path, object, "%s%s", d.Prefix, fmt.Sprintf(format, args...)))
	}
	switch {
	case md.Name == "" && md.GenerateName != "":
		fail("metadata.name", "%s", field.Required(field.NewPath("metadata", "name"),
			"generateName is not enough: kubectl apply needs a fixed name"))
	case md.Name == "": // in the API server's words
		fail("metadata.name", "%s", field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
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
	// Labels and annotations as the API server checks them: keys, values, and 256 KiB of annotations in all.
	labels := metavalidation.ValidateLabels(md.Labels, field.NewPath("metadata", "labels"))
	errs = append(errs, d.fieldErrors(object, labels)...)
	return append(errs, d.fieldErrors(object, apivalidation.ValidateAnnotations(md.Annotations,
		field.NewPath("metadata", "annotations")))...)
}

// Size limits the API server applies, from Kubernetes itself: etcd's default --max-request-bytes for an object,
// and core/v1's MaxSecretSize, which ConfigMap validation applies to data and binaryData together.
const (
	MaxObjectBytes    = 1572864 // 1.5 MiB
	MaxConfigMapBytes = 1 << 20 // 1 MiB
)

// checkConfigMapData is what the API server's ConfigMap validation refuses: a key that is not a ConfigMap key, a
// key in both data and binaryData, more than MaxConfigMapBytes of values and keys.
func checkConfigMapData(cm configMapDocument) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for key, v := range cm.Data {
		total += len(key) + len(v)
		for _, m := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, m))
		}
	}
	for key, v := range cm.BinaryData {
		total += len(key) + len(v)
		for _, m := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, m))
		}
		if _, dup := cm.Data[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, "duplicate of key present in data"))
		}
	}
	if total > MaxConfigMapBytes {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", MaxConfigMapBytes))
	}
	return errs
}

// withServerDefaults sets metadata.namespace and generation as kubectl and the API server would.
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
	// Kept for the run, every budget's: the encoder's buffer has grown past the JSON by up to its double.
	return bytes.Clone(out)
}
