package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheCommittedMetricsSectionIsCurrent(t *testing.T) {
	require.NoError(t, run("../..", true))
}

func TestTheSectionNamesEachMetricWithItsPrefixLabelsAndHelp(t *testing.T) {
	section, err := Render("../..")
	require.NoError(t, err)
	for _, row := range []string{
		"| `llmbudget_hook_requests_total` | counter | `hook`, `code` | " +
			"Hook requests answered, by hook and HTTP status code. |",
		"| `llmbudget_build_info` | gauge | `version`, `goversion` | Build information; the value is always 1. |",
		"| `llmbudget_authz_cached_objects` | gauge | `kind` | Objects in the decision cache, by kind. |",
		"| `llmbudget_authz_untrusted_calls_total` | counter |  | " +
			"Calls refused because their peer is no configured gateway. |",
		"| `llmbudget_spend_leader` | gauge |  | 1 while this replica holds the writer's Lease and writes, else 0. |",
	} {
		assert.Contains(t, section, row+"\n")
	}
	assert.Equal(t, 3, strings.Count(section, "(`go_*`, `process_*`)"), "serve, authz and the spend writer")
}

func TestSpliceReplacesOnlyBetweenTheMarkers(t *testing.T) {
	doc := "a\n" + Begin + "\nold\n" + End + "\nb\n"
	got, err := splice(doc, "\nnew\n")
	require.NoError(t, err)
	assert.Equal(t, "a\n"+Begin+"\nnew\n"+End+"\nb\n", got)
	_, err = splice("no markers\n", "x")
	assert.Error(t, err)
}

func TestRunRewritesAStaleSection(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(root+"/docs", 0o755))
	require.NoError(t, os.Symlink(mustAbs(t, "../../internal"), root+"/internal"))
	require.NoError(t, os.WriteFile(root+"/"+Doc, []byte(Begin+"\nstale\n"+End+"\n"), 0o644))
	assert.ErrorContains(t, run(root, true), "stale: run make generate")
	require.NoError(t, run(root, false))
	require.NoError(t, run(root, true))
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := os.Getwd()
	require.NoError(t, err)
	return abs + "/" + p
}
