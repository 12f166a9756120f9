package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	mdHeading  = regexp.MustCompile(`^#{1,6} +(.*?) *#*$`)
	linkedDocs = []string{"deploy/helm/llmbudget/README.md", "CHANGELOG.md"}
)

// A link that leads nowhere is a dead end in the middle of a story: every relative link of the docs names a file
// that exists and, after #, one of its headings.
func TestEveryLinkOfTheDocsLeadsToAFileAndItsHeading(t *testing.T) {
	docs := append(docFiles(t), linkedDocs...) // relative to the repository's root
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, doc := range docs {
		for _, line := range proseLines(t, filepath.Join("../..", doc)) {
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				link := m[1]
				if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(link, "#")
				target := doc
				if path != "" {
					target = filepath.Join(filepath.Dir(doc), path)
				}
				if _, err := os.Stat(filepath.Join("../..", target)); err != nil {
					t.Errorf("%s: link %s: no file %s", doc, link, path)
					continue
				}
				checked++
				if anchor == "" || !strings.HasSuffix(target, ".md") {
					continue
				}
				if anchors[target] == nil {
					anchors[target] = headingAnchors(proseLines(t, filepath.Join("../..", target)))
				}
				assert.True(t, anchors[target][anchor], "%s: link %s: %s has no heading #%s", doc, link, path, anchor)
			}
		}
	}
	assert.Greater(t, checked, 100, "the links are found")
}

func TestHeadingAnchorsAreGitHubs(t *testing.T) {
	got := headingAnchors([]string{"# llmbudget Helm chart", "## 1. Metacontroller", "### `llmbudget spend --all`",
		"## Who can lift a block?", "## Notes", "## Notes"})
	for _, a := range []string{"llmbudget-helm-chart", "1-metacontroller", "llmbudget-spend---all", "who-can-lift-a-block",
		"notes", "notes-1"} {
		assert.True(t, got[a], a)
	}
}

// proseLines are the lines of a Markdown file outside its fenced blocks.
func proseLines(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []string
	fenced := false
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, l)
		}
	}
	return lines
}

// headingAnchors are the anchors GitHub gives the headings: lower case, spaces as hyphens, punctuation but hyphens
// and underscores dropped, and -1, -2, ... after a repeated one.
func headingAnchors(lines []string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines {
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}
