package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// userChosenKeys are keys of the group that the docs name and no code reads or writes, each with why.
var userChosenKeys = map[string]string{
	"llmbudget.dev/posture": "the example label of a namespaceDecorator.labelSelector, which the user chooses",
}

// codeKeys are the labels and annotations of the group llmbudget.dev that the program's code names: as a literal
// "llmbudget.dev/x", or as Group + "/x".
func codeKeys(t *testing.T) []string {
	t.Helper()
	literal := regexp.MustCompile(`"` + regexp.QuoteMeta(api.Group) + `/([a-z0-9.-]+)"`)
	joined := regexp.MustCompile(`\bGroup \+ "/([a-z0-9.-]+)"`)
	var keys []string
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, re := range []*regexp.Regexp{literal, joined} {
				for _, m := range re.FindAllStringSubmatch(string(src), -1) {
					if k := api.Group + "/" + m[1]; m[1] != api.Version && !slices.Contains(keys, k) {
						keys = append(keys, k)
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Contains(t, keys, api.LabelSpendSource)
	return keys
}

// A label or annotation is part of the product's contract: every one the code names is in the docs, and every one
// the docs name is the code's.
func TestTheDocsNameEveryLabelAndAnnotationOfTheCodeAndNoOther(t *testing.T) {
	keys := codeKeys(t)
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	files = append(files, "../../README.md")
	var docs strings.Builder
	named := map[string]string{}
	key := regexp.MustCompile(regexp.QuoteMeta(api.Group) + `/[a-z0-9.-]*[a-z0-9]`)
	for _, f := range files {
		if filepath.Base(f) == "reference.md" {
			continue
		}
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		docs.Write(text)
		for _, k := range key.FindAllString(string(text), -1) {
			named[k] = filepath.Base(f)
		}
	}
	for _, k := range keys {
		assert.Contains(t, named, k, "no doc names %s, which the code reads or writes", k)
	}
	for k, f := range named {
		if _, ok := userChosenKeys[k]; ok || k == api.APIVersion {
			continue
		}
		assert.Contains(t, keys, k, "%s names %s, which no code reads or writes", f, k)
	}
}
