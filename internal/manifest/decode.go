package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
)

// Doc is one object of a YAML or JSON stream: a document, or an item of a List in one. Its values are decoded from
// JSON, as kubectl reads YAML; its YAML node serves only for lines and literal text.
type Doc struct {
	File   string
	Prefix string // "items[2]." for an item of a List
	JSON   []byte
	src    *source // nil when unknown
	path   string  // of the object in src: "" for a document, "items[2]" for an item of a List in it
}

// source is a document's YAML text, parsed for its lines only when a line is asked for: most objects never need
// one, and the parser's node tree takes some 30 times the text.
type source struct {
	text  []byte
	lines int // before the document in its file: the parser counts lines from the document's start
	first int // the document's first line that is not blank or a comment, counted as the parser counts
	root  *yaml.Node
}

func (s *source) node() *yaml.Node {
	if s.text != nil {
		s.root = documentNode(s.text)
		s.text = nil
	}
	return s.root
}

// Root is the object's YAML node (nil when unknown), for its literal text.
func (d Doc) Root() *yaml.Node {
	if d.src == nil {
		return nil
	}
	_, n := Find(d.src.node(), d.path)
	return n
}

// At is where the field at path ("spec.costSource.key") is written, or its nearest enclosing field when absent.
func (d Doc) At(path string) Source {
	root := d.Root()
	if root == nil { // unknown, or an item not written in place (through a merge key)
		return Source{File: d.File}
	}
	line, _ := Find(root, path)
	if line > 0 {
		line += d.src.lines
	}
	return Source{File: d.File, Line: line}
}

// Line is the object's line when it costs nothing to know: an item of a List is given one only once a line of
// that List was asked for.
func (d Doc) Line() Source {
	if d.src != nil && d.path == "" {
		return Source{File: d.File, Line: d.src.lines + d.src.first}
	}
	if d.src != nil && d.src.text == nil {
		return d.At("")
	}
	return Source{File: d.File}
}

// Errorf is a problem of the object named object, at the field at path.
func (d Doc) Errorf(path, object, format string, args ...any) Error {
	return Error{Source: d.At(path), Object: object, Message: fmt.Sprintf(format, args...)}
}

// Docs returns the non-empty documents of a stream up to the first one that is not valid YAML or that JSON cannot
// represent (a repeated key, .inf), and the error, at its line in the file, that stopped it there. EachDoc reads
// the same documents one at a time.
func Docs(file string, data []byte) ([]Doc, *Error) {
	var docs []Doc
	err := EachDoc(file, data, func(d Doc) { docs = append(docs, d) })
	return docs, err
}

// EachDoc calls read with each non-empty document of a stream in turn, and returns the error that stopped it, as
// Docs says. A document is not kept once read returns, so that a large stream is never held parsed at once.
//
// kubectl's document splitter (k8s.io/apimachinery's YAMLReader) cuts the stream at every line starting "---" and
// the YAML-to-JSON conversion reads the first document of each piece; a piece in which the YAML parser finds more
// documents than that (after a "..." end marker, or "---" after a line break the splitter does not see: CR alone,
// NEL, U+2028 or U+2029) is refused, so that no input is ever read in part.
func EachDoc(file string, data []byte, read func(Doc)) *Error {
	return EachDocIn(file, bytes.NewReader(data), read)
}

// EachDocIn is EachDoc of a stream read as it is split, so that the stream is never held whole either.
func EachDocIn(file string, r io.Reader, read func(Doc)) *Error {
	s := splitter{r: bufio.NewReader(r), max: maxDocumentBytes}
	for {
		text, before, err := s.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if _, ok := err.(separatorError); ok { // a "---" followed by something other than a comment
			return &Error{Source: Source{File: file, Line: s.lines}, Message: "not valid YAML: " + err.Error()}
		}
		if _, ok := err.(documentTooLarge); ok {
			return &Error{Source: Source{File: file, Line: before + 1}, Message: err.Error()}
		}
		if err != nil {
			return &Error{Source: Source{File: file}, Message: "read: " + err.Error()}
		}
		d := Doc{File: file, src: &source{text: text, lines: before, first: firstLine(text)}}
		if d.JSON, err = sigsyaml.YAMLToJSONStrict(text); err != nil {
			return yamlError(file, d.src.lines, err)
		}
		if js := bytes.TrimSpace(d.JSON); len(js) == 0 || string(js) == "null" {
			continue
		}
		if err := wholeDocument(file, d.src.lines, text); err != nil {
			return err
		}
		read(d)
	}
}

// splitter cuts a stream into documents line for line as kubectl's splitter (k8s.io/apimachinery's YAMLReader
// and its LineReader) does, counting the lines it reads: a line ends at LF, a CR before it is dropped, and every
// line it returns ends with LF.
type splitter struct {
	r     *bufio.Reader
	lines int // read so far
	max   int // MaxDocumentBytes, unless the document may be a List
	doc   bytes.Buffer
	list  bool // the document read so far may be a List, so max does not bound it
}

// MaxDocumentBytes bounds a document that is not a List, as it is read: no object the API server stores is more
// than 1.5 MiB (MaxObjectBytes) of JSON, and the YAML kubectl writes of one is at most a few times its JSON, so a
// longer document is refused before it is parsed (parsing costs some 8 times the text) or even read whole. A List
// (a document with a top-level items) is bounded by MaxInputBytes alone, and each of its objects by MaxObjectBytes.
const MaxDocumentBytes = 4 * MaxObjectBytes

// maxDocumentBytes is MaxDocumentBytes, lowered by tests.
var maxDocumentBytes = MaxDocumentBytes

// documentTooLarge is the error of a document that is not a List and is longer than MaxDocumentBytes.
type documentTooLarge int

func (e documentTooLarge) Error() string {
	return fmt.Sprintf("the document is more than %d bytes (%.0f MiB, MaxDocumentBytes) of text and holds no top-level "+
		"items, so it is no List: an object of it would be more than the 1.5 MiB the API server stores; "+
		"refused before it is parsed", int(e), float64(e)/(1<<20))
}

// mayBeList is whether a document's text so far may hold a List's items: a line starting "items:" as kubectl
// writes YAML, or an "items" key as it writes JSON. It errs towards a List, which is parsed.
func mayBeList(texts ...[]byte) bool {
	for _, t := range texts {
		if bytes.HasPrefix(t, []byte("items:")) || bytes.Contains(t, []byte("\nitems:")) ||
			bytes.Contains(t, []byte(`"items"`)) {
			return true
		}
	}
	return false
}

// next is the next document's text and the lines before its first line that is not a separator, or YAMLReader's
// error.
func (s *splitter) next() (text []byte, before int, err error) {
	s.doc, s.list = bytes.Buffer{}, false
	buf := &s.doc
	for {
		line, err := s.line()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		if after, ok := bytes.CutPrefix(line, []byte("---")); ok {
			if t := bytes.TrimSpace(after); len(t) > 0 && t[0] != '#' {
				return nil, 0, separatorError(t)
			}
			if buf.Len() != 0 {
				return buf.Bytes(), before, nil
			}
			if err != nil {
				return nil, 0, err
			}
		}
		if err != nil {
			if buf.Len() != 0 { // a last line without a line break
				return buf.Bytes(), before, nil
			}
			return nil, 0, err
		}
		if buf.Len() == 0 { // a separator with nothing before it stays in the text, as the splitter leaves it
			before = s.lines - 1
		}
		buf.Write(line)
	}
}

// separatorError is YAMLReader's error for a "---" line followed by more than a comment: the text after it.
type separatorError string

func (e separatorError) Error() string { return "invalid Yaml document separator: " + string(e) }

// line is the next line, ending with LF, and io.EOF past the last; documentTooLarge once the document, with the
// line, is past max and cannot be a List.
func (s *splitter) line() ([]byte, error) {
	var line []byte
	for {
		part, isPrefix, err := s.r.ReadLine()
		line = append(line, part...)
		if !s.list && s.doc.Len()+len(line) > s.max {
			if s.list = mayBeList(s.doc.Bytes(), line); !s.list {
				return nil, documentTooLarge(s.max)
			}
		}
		if err != nil {
			return append(line, '\n'), err
		}
		if !isPrefix {
			s.lines++
			return append(line, '\n'), nil
		}
	}
}

// wholeDocument refuses a piece the splitter cut in which the YAML parser finds more than one document.
func wholeDocument(file string, before int, text []byte) *Error {
	breaks := otherBreaks(text)
	if !mayHoldDocuments(text) && breaks == "" {
		return nil
	}
	found, err := countDocuments(text)
	if err != nil {
		return yamlError(file, before, err)
	}
	if found == 1 {
		return nil
	}
	msg := fmt.Sprintf("the YAML parser finds %d documents where kubectl's splitter finds one: refused rather than "+
		"read in part (separate documents with ---)", found)
	if breaks != "" {
		msg = fmt.Sprintf("the YAML parser finds %d documents where kubectl's splitter finds one: the text breaks "+
			"lines with %s, which YAML reads as a line break and kubectl's splitter does not (it splits at LF alone); "+
			"refused rather than read in part: save the file with LF (or CRLF) line breaks", found, breaks)
	}
	return &Error{Source: Source{File: file, Line: before + 1}, Message: msg}
}

// otherBreaks names the line breaks in text other than LF and CRLF that YAML parsers (libyaml, yaml.v3 and the
// YAML-to-JSON conversion's yaml.v2) read as line breaks: CR alone, NEL (U+0085), and U+2028 and U+2029, which
// YAML 1.1 counts as line breaks (YAML 1.2 no longer does, but these parsers read YAML 1.1's way); "" when none.
func otherBreaks(text []byte) string {
	var found []string
	if bytes.IndexByte(text, '\r') >= 0 && bytes.IndexByte(bytes.ReplaceAll(text, []byte("\r\n"), nil), '\r') >= 0 {
		found = append(found, "CR alone")
	}
	for _, b := range []struct{ r, name string }{{"\u0085", "NEL (U+0085)"}, {"\u2028", "U+2028 (LINE SEPARATOR)"},
		{"\u2029", "U+2029 (PARAGRAPH SEPARATOR)"}} {
		if bytes.Contains(text, []byte(b.r)) {
			found = append(found, b.name)
		}
	}
	return strings.Join(found, ", ")
}

// firstLine is the line (1 for the first) where the YAML parser finds a document's root: the first that is
// not blank, a comment or a directive. It costs a scan, where the parser's node tree costs some 30 times the text.
func firstLine(text []byte) int {
	n := 1
	for line := range bytes.Lines(text) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && t[0] != '%' && !bytes.HasPrefix(line, []byte("---")) {
			return n
		}
		n++
	}
	return 1
}

// mayHoldDocuments is whether a piece the splitter cut could hold more than one YAML document: the splitter cuts at
// every line starting "---", so only a document end marker ("...") or a directive ("%YAML") can start another, and
// the YAML-to-JSON conversion reads the first document alone. Only such a piece is parsed again, to count them.
func mayHoldDocuments(text []byte) bool {
	return bytes.HasPrefix(text, []byte("...")) || bytes.HasPrefix(text, []byte("%")) ||
		bytes.Contains(text, []byte("\n...")) || bytes.Contains(text, []byte("\n%"))
}

// countDocuments is how many non-empty documents the YAML parser finds in text.
func countDocuments(text []byte) (int, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	found := 0
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return found, nil
		} else if err != nil {
			return 0, err
		}
		if len(doc.Content) > 0 && (doc.Content[0].Kind != yaml.ScalarNode || doc.Content[0].Tag != "!!null") {
			found++
		}
	}
}

// yamlLine is where a YAML parser's message names a line, counted from the document's start.
var yamlLine = regexp.MustCompile(`line (\d+): `)

// yamlError is a YAML parser's error as file:line:, with the line counted from the file's start.
func yamlError(file string, before int, err error) *Error {
	msg := strings.ReplaceAll(err.Error(), "\n ", "")
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "json: "); ok { // .inf or .nan: valid YAML, but not JSON
		return &Error{Source: Source{File: file, Line: before + 1}, Message: "a value JSON cannot represent: " + rest}
	}
	e := &Error{Source: Source{File: file}}
	matches := yamlLine.FindAllStringSubmatch(msg, -1)
	if len(matches) > 0 {
		n, _ := strconv.Atoi(matches[0][1])
		e.Line = before + n
	}
	if len(matches) == 1 { // the line is the message's own
		msg = yamlLine.ReplaceAllString(msg, "")
	} else {
		msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
			n, _ := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
			return fmt.Sprintf("line %d: ", before+n)
		})
	}
	e.Message = "not valid YAML: " + strings.TrimSpace(msg)
	return e
}

// documentNode is the root node of a document the YAML-to-JSON conversion accepted, or nil if this parser differs.
func documentNode(text []byte) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(text, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// Head is what an object says of its type and name.
type Head struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// Head reads d's type and name leniently, to name it in messages (strict decoding says what is wrong with it);
// ok is false when d is not an object.
func (d Doc) Head() (h Head, ok bool) {
	if !bytes.HasPrefix(bytes.TrimSpace(d.JSON), []byte("{")) {
		return h, false
	}
	_ = decode.Lenient(d.JSON, &h, "")
	return h, true
}

// IsList is whether h is a kubectl List (or an LLMCostBudgetList).
func (h Head) IsList() bool {
	return h.APIVersion == "v1" && h.Kind == "List" || h.APIVersion == api.APIVersion && h.Kind == api.Kind+"List"
}

// Name names the object as kubectl does, kind then namespace/name, on one line however odd the input is.
func (h Head) Name() string {
	name := h.Metadata.Name
	if h.Metadata.Namespace != "" && name != "" {
		name = h.Metadata.Namespace + "/" + name
	}
	return strings.TrimSpace(printable(h.Kind) + " " + printable(name))
}

// Type is "apiVersion kind", on one line however odd the input is.
func (h Head) Type() string {
	return strings.TrimSpace(printable(h.APIVersion) + " " + printable(h.Kind))
}

func printable(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Items decodes d as a List, strictly, and returns its items.
func (d Doc) Items(object string) ([]Doc, Errors) {
	var l metav1.List
	errs, ok := d.Decode(&l, object)
	if !ok {
		return nil, errs
	}
	items := make([]Doc, len(l.Items))
	for i, item := range l.Items {
		path := fmt.Sprintf("items[%d]", i)
		items[i] = Doc{File: d.File, Prefix: d.Prefix + path + ".", JSON: item.Raw, src: d.src,
			path: strings.TrimPrefix(d.path+"."+path, ".")}
	}
	return items, errs
}

// Decode decodes d into v as kubectl apply's strict field validation does: an unknown, wrongly-cased or repeated
// field is a problem, each at its line and named by its path ("unknown field "spec.limitUsd""). ok is whether v
// was decoded: a value of the wrong type stops decoding, an unknown field does not.
func (d Doc) Decode(v any, object string) (errs Errors, ok bool) {
	strict, err := kjson.UnmarshalStrict(d.JSON, v)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		path, want, got, ok := decode.TypeMismatch(d.JSON, v)
		if ok && path != "" { // worded as the API server words it
			msg = fmt.Sprintf("%s: must be of type %s, got %s", path, want, got)
			if want == "string" && (got == "number" || got == "bool") {
				msg += " (quote it)"
			}
		}
		return Errors{d.Errorf(path, object, "%s%s", d.Prefix, msg)}, false
	}
	for _, e := range strict {
		path := ""
		if fe, ok := e.(kjson.FieldError); ok {
			path = fe.FieldPath()
			fe.SetFieldPath(d.Prefix + path)
		}
		errs = append(errs, d.Errorf(path, object, "%v", e))
	}
	return errs, true
}

// Find walks path ("spec.costSource.key", "items[2].spec") down from n, following aliases. It returns the line of
// the field, or of the deepest field on the way when it is absent, and the field's value when present.
func Find(n *yaml.Node, path string) (int, *yaml.Node) {
	if n == nil {
		return 0, nil
	}
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			// A step is a key, or an index written "[2]" (a key may hold "]").
			end := strings.IndexByte(part[1:], '[') + 1
			if end == 0 {
				end = len(part)
			}
			key, value := child(deref(n), part[:end])
			if value == nil {
				return line, nil
			}
			line, n, part = key.Line, value, part[end:]
		}
	}
	return line, deref(n)
}

// child is the key and value of step in a mapping, or the item at "[2]" of a sequence (as both).
func child(n *yaml.Node, step string) (key, value *yaml.Node) {
	if i, ok := strings.CutPrefix(step, "["); ok {
		idx, err := strconv.Atoi(strings.TrimSuffix(i, "]"))
		if err != nil || n.Kind != yaml.SequenceNode || idx < 0 || idx >= len(n.Content) {
			return nil, nil
		}
		return n.Content[idx], n.Content[idx]
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == step {
				return n.Content[i], n.Content[i+1]
			}
		}
	}
	return nil, nil
}

// deref follows a YAML alias to its node; an anchored node is never an alias itself, and decoding refuses cycles.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}
