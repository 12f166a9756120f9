package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

// A first compile takes minutes: make says so, then counts the packages go build names as it compiles them, and
// passes an error through with the build's status.
func TestMakeBuildCountsThePackagesItCompilesAndPassesErrorsThrough(t *testing.T) {
	out, err := runMake(t, "build", "GOBUILD=printf 'example.com/a\\nexample.com/b\\n'; true", "BIN=/dev/null")
	require.NoError(t, err, out)
	assert.Contains(t, out, "some 800 packages: several minutes on 2 cores")
	assert.Contains(t, out, "\r  compiled 2 packages\n")

	out, err = runMake(t, "build", "GOBUILD=printf 'example.com/a\\n# example.com/a\\na.go:1:2: undefined: x\\n'; false",
		"BIN=/dev/null")
	require.Error(t, err)
	assert.Contains(t, out, "\r  compiled 1 packages\n# example.com/a\na.go:1:2: undefined: x\n")
}

// The count shows as each package is compiled, not when the compile ends: awk's output to a pipe or a terminal is
// buffered (mawk's even on a terminal), so a count it does not flush would wait for the buffer or the end.
func TestMakeBuildShowsEachCountAsThePackageIsCompiled(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	goOn := filepath.Join(t.TempDir(), "go-on")
	build := "GOBUILD=printf 'example.com/a\\n'; while [ ! -e " + goOn + " ]; do sleep 0.05; done; " +
		"printf 'example.com/b\\n'; true"
	cmd := exec.Command("make", "-s", "-C", "../..", "build", build, "BIN=/dev/null")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	shown := make(chan bool, 1)
	go func() {
		var out []byte
		buf := make([]byte, 256)
		for {
			n, err := stdout.Read(buf)
			out = append(out, buf[:n]...)
			if strings.Contains(string(out), "\r  compiled 1 packages") {
				shown <- true
				return
			}
			if err != nil {
				shown <- false
				return
			}
		}
	}()
	var first bool
	select {
	case first = <-shown:
	case <-time.After(20 * time.Second): // the compile it stands for takes minutes
	}
	require.NoError(t, os.WriteFile(goOn, nil, 0o644))
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(t, cmd.Wait())
	assert.True(t, first, "the first count is shown while the second package is still compiling")
}

// fakeGo is a go command whose install does nothing and whose GOBIN is dir.
func fakeGo(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\ncase \"$1 $2\" in \"env GOBIN\") echo " + dir + " ;; esac\nexit 0\n"
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

// make install says where the binary went, and what to add to PATH when that folder is not on it.
func TestMakeInstallSaysWhatToAddToPathWhenTheFolderIsNotOnIt(t *testing.T) {
	dir := t.TempDir()
	out, err := runMake(t, "install", "GO="+fakeGo(t, dir))
	require.NoError(t, err, out)
	assert.Contains(t, out, "installed "+dir+"/llmbudget\n")
	assert.Contains(t, out, dir+` is not on your PATH: add it, for example with export PATH="$PATH:`+dir+`"`)

	t.Setenv("PATH", os.Getenv("PATH")+":"+dir)
	out, err = runMake(t, "install", "GO="+fakeGo(t, dir))
	require.NoError(t, err, out)
	assert.Contains(t, out, "installed "+dir+"/llmbudget\n")
	assert.NotContains(t, out, "not on your PATH")
}

// make help lists every variable a user may set (each ?= of the Makefile) with what it does and its default, read
// from the Makefile itself.
func TestMakeHelpListsEveryVariableWithWhatItDoes(t *testing.T) {
	out, err := runMake(t, "help")
	require.NoError(t, err)
	makefile, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	vars := regexp.MustCompile(`(?m)^([A-Z_]+) \?=`).FindAllStringSubmatch(string(makefile), -1)
	require.NotEmpty(t, vars)
	for _, v := range vars {
		assert.Regexp(t, `(?m)^  `+v[1]+` +\S.* \(default: .*\)$`, out, "make help describes %s", v[1])
	}
}

// development.md's row for make test-integration names every program test/k8s/run.sh builds before the tests, so
// that a first run's long compile is no surprise.
func TestTheDevelopmentDocNamesEveryProgramTheIntegrationTestsBuild(t *testing.T) {
	script, err := os.ReadFile("../../test/k8s/run.sh")
	require.NoError(t, err)
	built := regexp.MustCompile(`(?m)^"\$here/build-([a-z]+)\.sh"$`).FindAllStringSubmatch(string(script), -1)
	require.NotEmpty(t, built, "run.sh runs its build-*.sh scripts")
	doc, err := os.ReadFile("../../docs/development.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `make test-integration` \\|.*$").FindString(string(doc))
	require.NotEmpty(t, row, "development.md has a row for make test-integration")
	for _, b := range built {
		assert.Contains(t, strings.ToLower(row), b[1], "the row names what build-%s.sh builds", b[1])
	}
}
