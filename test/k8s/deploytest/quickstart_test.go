package deploytest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubCommand logs each call (its name and arguments, one line) to $STUB_LOG and succeeds, but for the Job the quick
// start expects to be refused.
const stubCommand = `#!/bin/sh
{ printf '%s' "$(basename "$0")"; for a in "$@"; do printf ' %s' "$a"; done; echo; } >>"$STUB_LOG"
case "$*" in *"create job refused"*) exit 1 ;; esac
exit 0
`

// runQuickStart runs hack/quickstart-kind.sh with args, kind, kubectl and make replaced by stubCommand, and returns
// what it printed and what it ran (each stubbed call).
func runQuickStart(t *testing.T, args ...string) (printed, ran []string) {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"kind", "kubectl", "make"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(stubCommand), 0o755))
	}
	log := filepath.Join(t.TempDir(), "calls")
	cmd := exec.Command("bash", append([]string{repoPath(t, "hack", "quickstart-kind.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STUB_LOG="+log)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Split(string(out), "\n") {
		if cmd, ok := strings.CutPrefix(line, "+ "); ok {
			printed = append(printed, normalizeCommand(cmd))
		}
	}
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		ran = append(ran, normalizeCommand(line))
	}
	return printed, ran
}

// normalizeCommand drops what a printed command carries beside its words: a heredoc's start, a trailing comment,
// repeated spaces.
func normalizeCommand(cmd string) string {
	cmd, _, _ = strings.Cut(cmd, " <<EOF")
	cmd, _, _ = strings.Cut(cmd, "   # ")
	return strings.Join(strings.Fields(cmd), " ")
}

// docs/quickstart.md says the dry run prints every command: what it prints is what a real run runs, waits included,
// command for command and in order.
func TestTheQuickStartsDryRunPrintsEveryCommandTheRealRunRuns(t *testing.T) {
	dryPrinted, _ := runQuickStart(t, "--dry-run")
	realPrinted, realRan := runQuickStart(t)
	assert.Equal(t, realRan, realPrinted, "a real run prints each command it runs")
	assert.Equal(t, realRan, dryPrinted, "the dry run prints each command a real run runs")
	for _, want := range []string{
		`^kubectl apply --server-side -k deploy/crd/$`,
		`^kubectl wait --for=condition=Established crd/`,
		`^kubectl -n llmbudget-system rollout status deployment/llmbudget`,
		`^kubectl -n team-support wait llmb/chatbot .*=true`,
		`^kubectl -n team-support wait llmb/chatbot .*=false`,
	} {
		assert.True(t, slicesContainsMatch(dryPrinted, want), "the dry run prints %s", want)
	}
}

func slicesContainsMatch(lines []string, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// A run without one of the commands it calls says which before it creates anything: without kubectl, a real run
// would fail after kind had made a cluster.
func TestTheQuickStartNamesWhatIsMissingBeforeItRunsAnything(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"bash", "dirname"} { // what the script needs to start
		path, err := exec.LookPath(name)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(path, filepath.Join(bin, name)))
	}
	for _, tc := range []struct {
		args    []string
		missing string
	}{
		{nil, "kubectl kind make go not found on PATH"},
		{[]string{"--dry-run"}, "kubectl not found on PATH"},
	} {
		cmd := exec.Command(filepath.Join(bin, "bash"), append([]string{repoPath(t, "hack", "quickstart-kind.sh")},
			tc.args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", out)
		assert.Contains(t, string(out), tc.missing, tc.args)
		assert.NotContains(t, string(out), "+ ", "nothing is run: %v", tc.args)
	}
}
