package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// RepoRoot is the llmbudget repository root: the nearest directory above the working
// directory that holds test/k8s/go.mod (go test runs a package in its own directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "test", "k8s", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no test/k8s/go.mod above the working directory")
		}
		dir = parent
	}
}

// MetacontrollerCRDs is the path of Metacontroller's own CRDs, copied into the repository
// under test/metacontroller (see its README for the version and source).
func MetacontrollerCRDs() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "test", "metacontroller", "crds", "metacontroller-crds-v1.yaml"), nil
}

// Document is one YAML document of a manifest file.
type Document struct {
	File       string // path it came from
	Index      int    // position in the file, from 0
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	YAML       string // the document's text as written
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// ReadDocuments splits a multi-document YAML file and reads each document's kind, name
// and namespace. Empty documents (only comments or blanks) are skipped.
func ReadDocuments(path string) ([]Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var docs []Document
	for i, text := range documentSeparator.Split(string(data), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(text), &head); err != nil {
			return nil, fmt.Errorf("parse %s document %d: %w", path, i, err)
		}
		if strings.TrimSpace(stripComments(text)) == "" {
			continue
		}
		docs = append(docs, Document{
			File: path, Index: i, APIVersion: head.APIVersion, Kind: head.Kind,
			Name: head.Metadata.Name, Namespace: head.Metadata.Namespace,
			YAML: text,
		})
	}
	return docs, nil
}

func stripComments(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// JoinDocuments puts documents back into one multi-document manifest.
func JoinDocuments(docs []Document) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = strings.Trim(d.YAML, "\n")
	}
	return strings.Join(parts, "\n---\n") + "\n"
}

// FindYAML lists the .yaml and .yml files under dir, recursively, in lexical order.
func FindYAML(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list YAML files under %s: %w", dir, err)
	}
	return files, nil
}
