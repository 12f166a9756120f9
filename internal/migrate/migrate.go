// Package migrate converts the budgets of other tools into llmbudget
// LLMCostBudgets: llm-cost-budget-operator's LLMCostBudget
// (finops.kineticgain.com/v1alpha1) and Kelos's TaskBudget
// (kelos.dev/v1alpha2). It is pure: YAML bytes in, YAML bytes and notes out.
//
// Each object (a kubectl List item by item) is decoded strictly against its
// source API, as the API server's strict field validation does: an unknown
// or repeated field or a value of the wrong type is refused with its path
// and line, so a typo never vanishes. What does not map gets a YAML comment
// saying what to do instead.
//
// # Guarantees
//
//   - Money never passes through float64: a limit keeps its literal digits
//     ("1500.00"), a Kubernetes quantity ("12500m") becomes the exact plain
//     decimal Kubernetes reads ("12.5"), and a value that needs more than 6
//     decimals is refused rather than rounded.
//   - Every document printed, read back, passes spec.Default and spec.Validate.
//   - Name, namespace, labels and annotations are kept (without kubectl's
//     last-applied-configuration); status and server-set metadata are dropped.
//   - Output is deterministic: same input, same bytes.
//
// An *Error names the input, the document (and List item), the object and
// the field: `stdin: document 2 (LLMCostBudget team-ml/chatbot): unknown
// field "spec.costSource.keyy" (line 9)`. A document of another kind fails
// with an error wrapping ErrUnknownKind unless Options.SkipUnknownKinds is
// set, when it becomes a note.
package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"

	"github.com/llmbudget/llmbudget/internal/manifest"
)

// ErrUnknownKind marks a document that is not a budget migrate converts.
var ErrUnknownKind = errors.New("not a kind migrate converts")

// Options tune a migration.
type Options struct {
	SkipUnknownKinds bool // a document of another kind is a note, not an error
}

// Result is the outcome of migrating one input.
type Result struct {
	Documents [][]byte // converted budgets in input order, without "---"
	Notes     []string // for a person, each naming its document
}

// Error is the refusal of one document.
type Error struct {
	Source string // "stdin" or a file name
	Doc    int    // 1-based document number in Source
	Item   int    // 1-based item number in a List, 0 otherwise
	Object string // "LLMCostBudget team-ml/chatbot", "" when unknown
	Err    error
}

func (e *Error) Error() string { return e.where() + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// where names the document, item and object, for errors and notes alike.
func (e Error) where() string {
	s := fmt.Sprintf("%s: document %d", e.Source, e.Doc)
	if e.Item > 0 {
		s += fmt.Sprintf(" item %d", e.Item)
	}
	if e.Object != "" {
		s += " (" + e.Object + ")"
	}
	return s
}

// with is e refusing for err.
func (e Error) with(err error) error {
	e.Err = err
	return &e
}

// Join makes one multi-document YAML stream of documents.
func Join(docs [][]byte) []byte {
	return bytes.Join(docs, []byte("---\n"))
}

// Migrate converts every budget in data, a YAML or JSON stream read from
// source (used only in messages). It stops at the first document it must
// refuse and then returns no documents.
func Migrate(source string, data []byte, opts Options) (Result, error) {
	var res Result
	dec := goyaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n goyaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return Result{}, Error{Source: source, Doc: doc}.with(fmt.Errorf("not valid YAML: %w", err))
		}
		if len(n.Content) == 0 || n.Content[0].ShortTag() == "!!null" {
			continue // an empty document, like the one after a trailing ---
		}
		if err := res.object(n.Content[0], Error{Source: source, Doc: doc}, opts); err != nil {
			return Result{}, err
		}
	}
}

// object converts one object, or each item of a List; at says where it is.
func (res *Result) object(n *goyaml.Node, at Error, opts Options) error {
	in, err := readInput(n)
	if err != nil {
		return at.with(err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	// Best effort, to name the object in messages: the strict decoding of
	// its kind says what is wrong with it.
	_ = kjson.UnmarshalCaseSensitivePreserveInts(in.json, &head)
	apiVersion, kind := head.APIVersion, head.Kind
	at.Object = identify(kind, head.Metadata.Namespace, head.Metadata.Name)
	var convert func(*input) (*goyaml.Node, []string, error)
	switch {
	case apiVersion == operatorAPIVersion && kind == operatorKind:
		convert = convertOperator
	case apiVersion == kelosAPIVersion && kind == kelosKind:
		convert = convertKelos
	case apiVersion == "v1" && kind == "List" && at.Item == 0:
		return res.list(in, at, opts)
	default:
		err = unknownKind(apiVersion, kind)
		if !opts.SkipUnknownKinds {
			return at.with(err)
		}
		res.Notes = append(res.Notes, at.where()+": skipped: "+err.Error())
		return nil
	}
	node, notes, err := convert(in)
	var out []byte
	if err == nil {
		out, err = render(node)
	}
	if err != nil {
		return at.with(err)
	}
	res.Documents = append(res.Documents, out)
	for _, msg := range notes {
		res.Notes = append(res.Notes, at.where()+": "+msg)
	}
	return nil
}

func (res *Result) list(in *input, at Error, opts Options) error {
	var list manifest.List
	at.Object = "List"
	if err := in.decode(&list); err != nil {
		return at.with(err)
	}
	_, items := manifest.Find(in.node, "items")
	if len(list.Items) > 0 && (items == nil || len(items.Content) != len(list.Items)) {
		return at.with(in.errAt("items", "must be written in place, not through a YAML merge key"))
	}
	for i := range list.Items {
		if err := res.object(items.Content[i], Error{Source: at.Source, Doc: at.Doc, Item: i + 1}, opts); err != nil {
			return err
		}
	}
	return nil
}

func unknownKind(apiVersion, kind string) error {
	switch {
	case kind == "":
		return fmt.Errorf("%w: it has no kind", ErrUnknownKind)
	case kind == operatorKind && apiVersion == "llmbudget.dev/v1alpha1":
		return fmt.Errorf("%w: it is already an llmbudget budget", ErrUnknownKind)
	case kind == operatorKind || kind == kelosKind:
		return fmt.Errorf("%w: %s %s (migrate knows %s %s and %s %s)", ErrUnknownKind,
			printable(apiVersion), kind, operatorAPIVersion, operatorKind, kelosAPIVersion, kelosKind)
	}
	return fmt.Errorf("%w: %s", ErrUnknownKind, strings.TrimSpace(printable(apiVersion)+" "+printable(kind)))
}

// identify names an object for messages from whatever it says about itself.
func identify(kind, namespace, name string) string {
	if namespace != "" && name != "" {
		name = namespace + "/" + name
	}
	return strings.TrimSpace(printable(kind) + " " + printable(name))
}

// printable keeps a message on one line however odd the input is.
func printable(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}
