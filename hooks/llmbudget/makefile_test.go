package main

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

// make runs the Makefile's target with vars, in the repository's root, and returns what it printed.
func runMake(t *testing.T, target string, vars ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", append([]string{"-s", "-C", "../..", target}, vars...)...).CombinedOutput()
	return string(out), err
}

// A serve that fails (a port taken) is followed by the variable that picks another, not by silence.
func TestMakeRunSaysHowToChooseAnotherPortWhenServeFails(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "llmbudget")
	script := "#!/bin/sh\necho 'listen on :8080: address already in use' >&2\nexit 1\n"
	require.NoError(t, os.WriteFile(fake, []byte(script), 0o755))
	out, err := runMake(t, "run", "BIN="+fake, "GOBUILD=true")
	require.Error(t, err)
	assert.Contains(t, out, "make run: llmbudget serve failed (status 1); if :8080 is taken, choose another port: "+
		"make run ADDR=:8081")
}

// go vet compiles the whole tree before it prints anything: make test says so first.
func TestMakeTestAnnouncesTheCompileOfGoVet(t *testing.T) {
	out, err := runMake(t, "-n", "vet")
	require.NoError(t, err)
	assert.Contains(t, out, "go vet: compiling the tree first")
}

// make help's line for k8s-bins names every binary test/k8s/build.sh builds (its `ensure <binary> <package>` lines).
func TestMakeHelpNamesEveryBinaryK8sBinsBuilds(t *testing.T) {
	out, err := runMake(t, "help")
	require.NoError(t, err)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "k8s-bins\t") {
			line = l
		}
	}
	require.NotEmpty(t, line, "make help lists k8s-bins:\n%s", out)
	script, err := os.ReadFile("../../test/k8s/build.sh")
	require.NoError(t, err)
	built := regexp.MustCompile(`(?m)^ensure (\S+) `).FindAllStringSubmatch(string(script), -1)
	require.NotEmpty(t, built)
	for _, b := range built {
		assert.Regexp(t, `\b`+regexp.QuoteMeta(b[1])+`\b`, line, "make help names %s", b[1])
	}
}
