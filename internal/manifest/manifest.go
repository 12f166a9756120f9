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
//
// `llmbudget migrate` reads its inputs with the same pieces: ReadInputs,
// Docs, and Doc's strict decoding and metadata check.
package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
		return e.Source.String() + ": " + e.Message
	}
	return e.Source.String() + ": " + e.Object + ": " + e.Message
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
	// ClusterBudgets are read as written; Namespaces, which they select,
	// are among Skipped.
	ClusterBudgets []Object
	Skipped        []Object // of kinds that eval does not read
}

// Object is an object as written.
type Object struct {
	Source
	APIVersion, Kind, Namespace, Name string
	JSON                              json.RawMessage
}

// Read reads every named file (see ReadInputs). It returns an Errors
// listing every invalid object, or the first I/O error.
func Read(names []string, stdin io.Reader) (Set, error) {
	var r reader
	err := ReadInputs(names, stdin, func(file string, data []byte) error {
		docs, err := Docs(file, data)
		for _, d := range docs {
			r.readObject(d)
		}
		if err != nil {
			r.errs = append(r.errs, *err)
		}
		return nil
	})
	if err == nil && len(r.errs) > 0 {
		err = r.errs
	}
	return r.set, err
}

type reader struct {
	set  Set
	errs Errors
}

// ReadInputs calls read with the name and contents of every named file and
// stops at the first error. "-" is stdin, named "stdin": a second "-" is
// refused, as it would silently read nothing. A directory stands for the
// manifests directly in it, sorted, as kubectl -f dir (without -R) reads them.
func ReadInputs(names []string, stdin io.Reader, read func(file string, data []byte) error) error {
	readStdin := false
	for _, name := range names {
		files, err := manifestFiles(name)
		if err != nil {
			return err
		}
		for _, f := range files {
			var data []byte
			if f == "-" {
				if readStdin {
					return errors.New("-f - given twice: stdin can be read only once")
				}
				readStdin = true
				f = "stdin"
				if data, err = io.ReadAll(stdin); err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
			} else if data, err = os.ReadFile(f); err != nil {
				return err
			}
			if err := read(f, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// manifestFiles is the .yaml, .yml and .json files of a directory, or name
// itself (whose reading reports it missing).
func manifestFiles(name string) ([]string, error) {
	if info, err := os.Stat(name); err != nil || !info.IsDir() {
		return []string{name}, nil
	}
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			files = append(files, filepath.Join(name, e.Name()))
		}
	}
	return files, nil // sorted, as ReadDir is
}
