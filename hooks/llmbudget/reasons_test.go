package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reasonPackages are the packages whose code names the reasons of conditions, Events and workload annotations.
var reasonPackages = []string{
	"internal/api/v1alpha1", "internal/evaluate", "internal/controller", "internal/spendwriter",
}

// codeReasons reads every reason the packages name, from their source: each string constant called Reason..., and
// each string literal set as a Reason field; and the condition types, each string constant called Condition....
func codeReasons(t *testing.T) (reasons, conditionTypes []string) {
	t.Helper()
	for _, dir := range reasonPackages {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		require.NoError(t, err)
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			require.NoError(t, err)
			add := func(to *[]string, e ast.Expr) {
				lit, ok := e.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return
				}
				s, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				if !slices.Contains(*to, s) {
					*to = append(*to, s)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						switch {
						case i >= len(n.Values):
						case strings.HasPrefix(name.Name, "Reason"):
							add(&reasons, n.Values[i])
						case strings.HasPrefix(name.Name, "Condition"):
							add(&conditionTypes, n.Values[i])
						}
					}
				case *ast.KeyValueExpr:
					if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Reason" {
						add(&reasons, n.Value)
					}
				case *ast.AssignStmt:
					for i, lhs := range n.Lhs {
						if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Reason" && i < len(n.Rhs) {
							add(&reasons, n.Rhs[i])
						}
					}
				case *ast.CallExpr: // set(type, status, reason, message)
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "set" && len(n.Args) == 4 {
						add(&reasons, n.Args[2])
					}
				}
				return true
			})
		}
	}
	require.Contains(t, reasons, "OverBudget", "the scan finds the literal reasons")
	require.Contains(t, reasons, "WithinBudget")
	return reasons, conditionTypes
}

// status.md's tables are the user's list of reasons: every reason the code names is in it, and every reason its
// Conditions and Events tables name is one the code names (or a condition type, which they also mention).
func TestStatusDocListsEveryReasonAndNoOther(t *testing.T) {
	reasons, types := codeReasons(t)
	raw, err := os.ReadFile("../../docs/status.md")
	require.NoError(t, err)
	doc := string(raw)
	for _, r := range reasons {
		assert.Contains(t, doc, "`"+r+"`", "docs/status.md names the reason %s", r)
	}
	word := regexp.MustCompile("`([A-Z][A-Za-z]+)`")
	for _, section := range []string{"## Conditions", "## Events"} {
		_, body, ok := strings.Cut(doc, "\n"+section+"\n")
		require.True(t, ok, "docs/status.md has %s", section)
		body, _, _ = strings.Cut(body, "\n## ")
		for _, line := range strings.Split(body, "\n") {
			cells := strings.Split(line, "|")
			if !strings.HasPrefix(line, "| ") || len(cells) < 5 {
				continue
			}
			for _, m := range word.FindAllStringSubmatch(cells[len(cells)-2], -1) {
				assert.True(t, slices.Contains(reasons, m[1]) || slices.Contains(types, m[1]),
					"docs/status.md %s names %s, which the code does not", section, m[1])
			}
		}
	}
}
