package deploytest_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

// inlineCALoop is the shell loop of docs/install.md that embeds the CA in every hook: the lines from `CA=$(` to the
// closing `done` of its outer loop.
func inlineCALoop(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(repoPath(t, "docs/install.md"))
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, "CA=$(kubectl")
	require.NotEqual(t, -1, start, "install.md embeds the CA with a loop starting CA=$(kubectl")
	end := strings.Index(doc[start:], "\n```")
	require.NotEqual(t, -1, end)
	return doc[start : start+end]
}

// patchedByLoop tells whether the loop of install.md reaches controller name of kind: it either selects the
// controllers by label (kubectl get ... -l SELECTOR) or names each (compositecontroller/NAME).
func patchedByLoop(t *testing.T, loop string, c object) bool {
	t.Helper()
	kind, _ := c["kind"].(string)
	name, _ := dig(c, "metadata", "name")
	if m := regexp.MustCompile(`kubectl get [a-z,]+ -l (\S+) -o name`).FindStringSubmatch(loop); m != nil {
		require.Contains(t, loop, strings.ToLower(kind)+"s", "the loop lists %ss", kind)
		sel, err := labels.Parse(m[1])
		require.NoError(t, err, "selector %q", m[1])
		l, _ := dig(c, "metadata", "labels")
		set := labels.Set{}
		for k, v := range l.(map[string]any) {
			set[k] = v.(string)
		}
		return sel.Matches(set)
	}
	return regexp.MustCompile(`\b` + strings.ToLower(kind) + `/` + regexp.QuoteMeta(name.(string)) + `\b`).
		MatchString(loop)
}

// With the CA given inline, a controller the loop misses keeps calling HTTPS hooks it cannot verify: the gate's
// then never sets the label the admission policy's bindings select, and the policy never refuses.
func TestTheInlineCALoopOfInstallReachesEveryHTTPSHook(t *testing.T) {
	loop := inlineCALoop(t)
	for _, overlay := range []string{"deploy/overlays/secure"} {
		objs := kustomize(t, overlay)
		var https int
		for _, c := range append(ofKind(objs, "CompositeController"), ofKind(objs, "DecoratorController")...) {
			hooks, _ := dig(c, "spec", "hooks")
			for hook, h := range hooks.(map[string]any) {
				url, _ := dig(h, "webhook", "url")
				if !strings.HasPrefix(url.(string), "https://") {
					continue
				}
				https++
				assert.True(t, patchedByLoop(t, loop, c), "%s: the loop of install.md leaves out %s (hook %s)",
					overlay, key(c), hook)
			}
		}
		assert.Positive(t, https, "%s has HTTPS hooks", overlay)
	}
	assert.Contains(t, loop, ".spec.hooks | keys[]", "every hook of each controller gets the CA")
}

// chartREADMEValues lists the values the chart README's table names in its first column: full paths, and `.x` for a
// sibling of the path before it in the same cell.
func chartREADMEValues(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(repoPath(t, ChartREADME))
	require.NoError(t, err)
	named := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		parent := ""
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			path := m[1]
			if strings.HasPrefix(path, ".") {
				path = parent + path
			} else if i := strings.LastIndex(path, "."); i >= 0 {
				parent = path[:i]
			} else {
				parent = ""
			}
			named[path] = true
		}
	}
	return named
}

// ChartREADME is the chart's README, whose table documents its values.
const ChartREADME = "deploy/helm/llmbudget/README.md"

// A value the README does not name is one a user cannot find: every value of values.yaml, or a map that holds it,
// has a row.
func TestTheChartREADMENamesEveryValue(t *testing.T) {
	named := chartREADMEValues(t)
	var values object
	readYAML(t, "deploy/helm/llmbudget/values.yaml", &values)
	var missing []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if named[prefix] {
			return
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 {
			missing = append(missing, prefix)
			return
		}
		for _, k := range sortedKeys(m) {
			walk(strings.TrimPrefix(prefix+"."+k, "."), m[k])
		}
	}
	walk("", values)
	assert.Empty(t, missing, "values without a row in %s", ChartREADME)
}

// The counts the docs give of what an install creates are the render's: install.md's for kustomize, the chart
// README's for the chart with its defaults.
func TestTheDocsCountWhatAnInstallCreates(t *testing.T) {
	counted := map[string][]string{
		`(\d+) CRDs`:                        {"CustomResourceDefinition"},
		`(\d+) Metacontroller controllers`:  {"CompositeController", "DecoratorController"},
		`(\d+) ValidatingAdmissionPolicies`: {"ValidatingAdmissionPolicy"},
	}
	for doc, objs := range map[string][]object{
		"docs/install.md": kustomize(t, "deploy"),
		ChartREADME:       renderChart(t, nil),
	} {
		raw, err := os.ReadFile(repoPath(t, doc))
		require.NoError(t, err)
		text := strings.Join(strings.Fields(string(raw)), " ")
		for pattern, kinds := range counted {
			var n int
			for _, kind := range kinds {
				n += len(ofKind(objs, kind))
			}
			m := regexp.MustCompile(pattern).FindStringSubmatch(text)
			if !assert.NotNil(t, m, "%s counts %s", doc, pattern) {
				continue
			}
			assert.Equal(t, fmt.Sprint(n), m[1], "%s: %s", doc, pattern)
		}
	}
}
