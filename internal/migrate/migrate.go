// Package migrate converts llm-cost-budget-operator LLMCostBudgets (finops.kineticgain.com/v1alpha1) and Kelos
// TaskBudgets (kelos.dev/v1alpha2) into llmbudget LLMCostBudgets, purely: YAML bytes in, YAML bytes and notes out.
//
// Each object (a kubectl List item by item) is read as `llmbudget eval` reads manifests and decoded strictly
// against its source API: an unknown or repeated field or a value of the wrong type is refused as a manifest.Error
// naming the file, line, object and field, so a typo never vanishes. A document of another kind is refused too,
// unless Options.SkipUnknownKinds makes it a note; an llmbudget LLMCostBudget (a migration's output) is a note.
// What does not map gets a YAML comment saying what to do instead.
//
// # Guarantees
//
//   - Money never passes through float64: a limit keeps its literal digits ("1500.00"), a Kubernetes quantity
//     ("12500m") becomes the exact plain decimal Kubernetes reads ("12.5"), and a value that needs more than 6
//     decimals is refused rather than rounded.
//   - Every document printed, read back, passes spec.Default and spec.Validate.
//   - Name, namespace, labels and annotations are kept (without kubectl's last-applied-configuration); status and
//     server-set metadata are dropped.
//   - Output is deterministic: same input, same bytes.
package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/money"
)

// Options tune a migration.
type Options struct {
	SkipUnknownKinds bool // a document of another kind is a note, not an error
}

// Result is the outcome of migrating one input.
type Result struct {
	Documents [][]byte // converted budgets in input order, without "---"
	Notes     []string // for a person, each naming its object
}

// Join makes one multi-document YAML stream of documents.
func Join(docs [][]byte) []byte {
	return bytes.Join(docs, []byte("---\n"))
}

// Migrate converts every budget in data, a YAML or JSON stream read from source (used only in messages). It
// refuses every object it must, each a manifest.Error of the manifest.Errors returned, and then returns no
// documents.
func Migrate(source string, data []byte, opts Options) (Result, error) {
	return From(source, bytes.NewReader(data), opts)
}

// From is Migrate of a stream, read as it is converted.
func From(source string, r io.Reader, opts Options) (Result, error) {
	var res Result
	var errs manifest.Errors
	stop := manifest.EachDocIn(source, r, func(d manifest.Doc) {
		errs = appendErrors(errs, source, res.object(d, opts))
	})
	if stop != nil {
		errs = append(errs, *stop)
	}
	if len(errs) > 0 {
		return Result{}, errs
	}
	return res, nil
}

// appendErrors adds err's problems to errs, one a line: a manifest.Errors as it is, another error under source.
func appendErrors(errs manifest.Errors, source string, err error) manifest.Errors {
	if err == nil {
		return errs
	}
	if me, ok := errors.AsType[manifest.Errors](err); ok {
		return append(errs, me...)
	}
	return append(errs, manifest.Error{Source: manifest.Source{File: source}, Message: err.Error()})
}

type input struct {
	manifest.Doc
	name string
}

// object converts one object, or each item of a List.
func (res *Result) object(d manifest.Doc, opts Options) error {
	h, isObject := d.Head()
	in := &input{Doc: d, name: h.Name()}
	var convert func(*input) (*goyaml.Node, []string, error)
	switch {
	case !isObject:
		return in.errAt("", "not a Kubernetes object: a mapping is expected")
	case h.APIVersion == operatorAPIVersion && h.Kind == operatorKind:
		convert = convertOperator
	case h.APIVersion == kelosAPIVersion && h.Kind == kelosKind:
		convert = convertKelos
	case h.IsList() && d.Prefix == "":
		items, errs := d.Items(in.name)
		if len(errs) > 0 {
			return errs
		}
		for _, item := range items {
			errs = appendErrors(errs, d.File, res.object(item, opts))
		}
		if len(errs) > 0 {
			return errs
		}
		return nil
	case h.APIVersion == api.APIVersion && h.Kind == api.Kind:
		// A directory of a migration often holds its output beside its input.
		res.Notes = append(res.Notes, in.Errorf("", in.name, "skipped: already an llmbudget budget").Error())
		return nil
	case opts.SkipUnknownKinds:
		res.Notes = append(res.Notes, in.Errorf("", in.name, "skipped: %s", unknownKind(h)).Error())
		return nil
	default:
		return in.errAt("", "%s (--skip-unknown-kinds skips such documents)", unknownKind(h))
	}
	node, notes, err := convert(in)
	if err != nil {
		return err
	}
	out, err := render(node)
	if err != nil {
		return in.errAt("", "%v", err)
	}
	res.Documents = append(res.Documents, out)
	for _, msg := range notes {
		res.Notes = append(res.Notes, in.Errorf("", in.name, "%s", msg).Error())
	}
	return nil
}

// errAt refuses the field at path, or the object when path is "".
func (in *input) errAt(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = in.Prefix + path + ": " + msg
	}
	return manifest.Errors{in.Errorf(path, in.name, "%s", msg)}
}

// literal is the number or string v at path as written (JSON reads "12.50" as 12.5); ok is false when it is absent.
func (in *input) literal(path string, v any) (text string, ok bool, err error) {
	switch v.(type) {
	case nil:
		return "", false, nil
	case string, int64, float64:
	default:
		return "", false, in.errAt(path, "must be a number or a string")
	}
	_, n := manifest.Find(in.Root(), path)
	if n == nil || n.Kind != goyaml.ScalarNode {
		return "", false, in.errAt(path, "must be written in place, not through a YAML merge key")
	}
	return n.Value, true, nil
}

// decodeObject decodes a source object into v strictly and checks md, v's metadata, as a budget's: a fixed, valid
// name. Fields the API server owns (uid, managedFields, ...) are dropped silently; those that tie the object to its
// old controller are dropped with a note.
func (in *input) decodeObject(v any, md *metav1.ObjectMeta) ([]string, error) {
	errs, _ := in.Decode(v, in.name)
	if len(errs) == 0 {
		errs = in.CheckMeta(in.name, *md, true)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var notes []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"ownerReferences", len(md.OwnerReferences) > 0},
		{"finalizers", len(md.Finalizers) > 0},
		{"deletionTimestamp", md.DeletionTimestamp != nil},
	} {
		if f.set {
			notes = append(notes, "dropped metadata."+f.name+": it belongs to the source object and its controller")
		}
	}
	return notes, nil
}

func unknownKind(h manifest.Head) string {
	const prefix = "not a kind migrate converts: "
	switch {
	case h.Kind == "":
		return prefix + "it has no kind"
	case h.Kind == operatorKind && h.APIVersion == "llmbudget.dev/v1alpha1":
		return prefix + "it is already an llmbudget budget"
	case h.Kind == operatorKind || h.Kind == kelosKind:
		return fmt.Sprintf("%s%s (migrate knows %s %s and %s %s)", prefix,
			h.Type(), operatorAPIVersion, operatorKind, kelosAPIVersion, kelosKind)
	}
	return prefix + h.Type()
}

// The llm-cost-budget-operator API, as read from github.com/mizcausevic-dev/llm-cost-budget-operator at commit
// c10d8c4799ba (api/v1alpha1/llmcostbudget_types.go and the CRD in
// charts/llm-cost-budget-operator/crds/llmcostbudgets.yaml): monthlyLimitUSD is a required string of pattern
// ^[0-9]+(\.[0-9]+)?$, warnThresholdPercent 1-100 defaults to 80, and costSource's configMapName and key are
// required. It has no period: its cost pipeline writes the month's running total and resets it, and the operator
// compares that number with the limit in float64, rounding the percentage (internal/budget/budget.go).
const (
	operatorAPIVersion = "finops.kineticgain.com/v1alpha1"
	operatorKind       = "LLMCostBudget"
)

// operatorBudget is the source object. Its status is dropped, since llmbudget computes its own; the status fields
// are named only so that a misspelt one is refused.
type operatorBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		MonthlyLimitUSD      any    `json:"monthlyLimitUSD"` // its literal digits are read from the YAML
		WarnThresholdPercent *int64 `json:"warnThresholdPercent"`
		CostSource           *struct {
			ConfigMapName string `json:"configMapName"`
			Key           string `json:"key"`
		} `json:"costSource"`
	} `json:"spec"`
	Status struct {
		ObservedSpendUSD any                `json:"observedSpendUSD"`
		PercentUsed      any                `json:"percentUsed"`
		State            any                `json:"state"`
		Conditions       []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

func convertOperator(in *input) (*goyaml.Node, []string, error) {
	var b operatorBudget
	notes, err := in.decodeObject(&b, &b.ObjectMeta)
	if err != nil {
		return nil, nil, err
	}
	text, ok, err := in.literal("spec.monthlyLimitUSD", b.Spec.MonthlyLimitUSD)
	switch {
	case err != nil:
		return nil, nil, err
	case !ok:
		return nil, nil, in.errAt("spec.monthlyLimitUSD", "is required")
	}
	limit, err := operatorLimit(text)
	if err != nil {
		return nil, nil, in.errAt("spec.monthlyLimitUSD", "%v", err)
	}
	cs := b.Spec.CostSource
	switch {
	case cs == nil:
		return nil, nil, in.errAt("spec.costSource", "is required")
	case cs.ConfigMapName == "":
		return nil, nil, in.errAt("spec.costSource.configMapName", "is required")
	case cs.Key == "":
		return nil, nil, in.errAt("spec.costSource.key", "is required")
	}

	out := newObject()
	out.set("limitUSD", note(usd(limit), "was spec.monthlyLimitUSD"))
	out.set("period", newObject().
		set("type", str(string(api.Monthly))).
		set("timeZone", str(api.DefaultTimeZone)).node,
		"The operator has no period of its own: its cost pipeline resets the total each month.",
		"llmbudget counts calendar months in timeZone; set the zone your pipeline resets in.")
	if w := b.Spec.WarnThresholdPercent; w != nil {
		out.set("warnThresholdPercent", integer(*w))
	}
	out.set("costSource", newObject().
		set("configMapName", str(cs.ConfigMapName)).
		set("format", str(string(api.Total))).
		set("key", str(cs.Key)).node,
		"The same ConfigMap and key: with format Total the value is this period's spend and",
		"the writer resets it, as the operator expects.")

	return budgetDocument(operatorAPIVersion+" "+operatorKind, &b.ObjectMeta, out), notes, nil
}

// operatorLimit reads the operator's monthlyLimitUSD, a plain decimal, and keeps its literal digits ("1500.00")
// unless it has more decimals than a limit holds; zeros beyond those say nothing and are dropped.
func operatorLimit(s string) (string, error) {
	a, err := money.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w (the operator's pattern is ^[0-9]+(\\.[0-9]+)?$)", err)
	case a.Sign() == 0:
		return "", fmt.Errorf("%q must be greater than 0 (the operator cannot evaluate a zero limit either)", s)
	}
	if _, frac, _ := strings.Cut(s, "."); len(frac) > api.LimitDecimals {
		s = trimZeros(s)
	}
	// The operator accepts leading zeros ("007.5"), the LLMCostBudget CRD does not.
	if s = strings.TrimLeft(s, "0"); s == "" || s[0] == '.' {
		s = "0" + s
	}
	return s, exactLimit(s)
}

// exactLimit refuses a limit more precise than spec.limitUSD rather than round it: the user's call, not ours.
func exactLimit(s string) error {
	if _, err := money.ParseMaxDecimals(s, api.LimitDecimals); err != nil {
		return fmt.Errorf("%w, and llmbudget limits are exact to micro-dollars: round it yourself", err)
	}
	return api.CheckLimit(s)
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
