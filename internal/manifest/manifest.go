// Package manifest reads LLMCostBudget and ConfigMap manifests the way the API
// server admits them, so that `llmbudget eval` can check a budget before
// `kubectl apply`.
//
// # Guarantees
//
//   - Decoding is strict, as kubectl apply's strict field validation is: an
//     unknown or wrongly-cased field, a duplicate key or a value of the wrong
//     type is an error naming the field's path ("spec.limitUsd").
//   - A budget that Read returns without error has a valid name and a spec
//     that passes v1alpha1's Validate once defaulted.
//   - Every error carries the file and, when the YAML can be parsed, the line
//     of the field it names (or of its nearest enclosing field when the field
//     is absent).
//
// Files may hold several YAML or JSON documents, `kind: List` objects (what
// `kubectl get llmb,cm -o yaml` prints) and LLMCostBudgetList objects; a
// directory stands for its .yaml, .yml and .json files, as with kubectl -f.
// Objects of other kinds are skipped and reported in Set.Skipped.
package manifest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Source is where an object was read.
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
	Object  string // "LLMCostBudget team-ml/chatbot", or "" before the object is known
	Message string
}

func (e Error) Error() string {
	if e.Object == "" {
		return e.Source.String() + ": " + e.Message
	}
	return e.Source.String() + ": " + e.Object + ": " + e.Message
}

// Errors is every problem found in the input, in reading order.
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
	ConfigMaps []ConfigMap
	Skipped    []Skipped
	// ClusterBudgets are read as written; Namespaces, which they select,
	// are among Skipped.
	ClusterBudgets []Object
}

// Object is a ClusterLLMCostBudget, as written.
type Object struct {
	Source
	Name string
	JSON json.RawMessage
}

// Skipped is an object of a kind that eval does not read.
type Skipped struct {
	Source
	APIVersion, Kind, Name string
	JSON                   json.RawMessage // as written
}

// Read reads every named file ("-" is stdin, read once; a directory is its
// manifest files). It returns an Errors listing every invalid object, or the
// first I/O error.
func Read(names []string, stdin io.Reader) (Set, error) {
	r := reader{stdin: stdin}
	for _, name := range names {
		if err := r.readPath(name); err != nil {
			return r.set, err
		}
	}
	if len(r.errs) > 0 {
		return r.set, r.errs
	}
	return r.set, nil
}

type reader struct {
	stdin     io.Reader
	readStdin bool
	set       Set
	errs      Errors
}

func (r *reader) readPath(name string) error {
	if name == "-" {
		if r.readStdin {
			return fmt.Errorf("-f - given twice: stdin can be read only once")
		}
		r.readStdin = true
		data, err := io.ReadAll(r.stdin)
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		r.readStream("stdin", data)
		return nil
	}
	files := []string{name}
	if info, err := os.Stat(name); err != nil {
		return err
	} else if info.IsDir() {
		if files, err = manifestFiles(name); err != nil {
			return err
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		r.readStream(f, data)
	}
	return nil
}

// manifestFiles lists the manifests directly in dir, sorted, as kubectl -f dir
// (without -R) reads them.
func manifestFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil // sorted, as ReadDir is
}
