package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's tour shows commands and what they print, in ```console blocks: a
// command after "$ " (continued by a trailing backslash), then its output, where a
// line "..." stands for lines left out. This test runs every command and compares,
// so that the tour stays true.

// shownCommand is one command of the README and the output shown under it.
type shownCommand struct {
	line   string
	output []string
}

func readmeCommands(t *testing.T, readme string) []shownCommand {
	t.Helper()
	var cmds []shownCommand
	inConsole := false
	for line := range strings.Lines(readme) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "```console":
			inConsole = true
		case strings.HasPrefix(line, "```"):
			inConsole = false
		case !inConsole:
		case strings.HasPrefix(line, "$ "):
			cmds = append(cmds, shownCommand{line: strings.TrimPrefix(line, "$ ")})
		case len(cmds) > 0 && strings.HasSuffix(cmds[len(cmds)-1].line, `\`):
			last := &cmds[len(cmds)-1]
			last.line = strings.TrimSpace(strings.TrimSuffix(last.line, `\`)) + " " + strings.TrimSpace(line)
		case len(cmds) > 0:
			cmds[len(cmds)-1].output = append(cmds[len(cmds)-1].output, line)
		}
	}
	return cmds
}

// tour runs README commands: go run ./hooks, shell variables, and curl to the
// service with the jq filters the tour uses.
type tour struct {
	t    *testing.T
	addr string // the service, started on first use
	now  string // its clock, the one the README tells make run to use
	vars map[string]string
}

var (
	assignment = regexp.MustCompile(`^(\w+)=(\S+)$`)
	curlCall   = regexp.MustCompile(`^curl -s -H 'Content-Type: application/json' --data @(\S+) localhost:8080(/\S+)$`)
)

func (tr *tour) run(line string) string {
	tr.t.Helper()
	if m := assignment.FindStringSubmatch(line); m != nil {
		tr.vars[m[1]] = m[2]
		return ""
	}
	line = os.Expand(line, func(name string) string { return tr.vars[name] })
	if args, ok := strings.CutPrefix(line, "go run ./hooks/llmbudget "); ok {
		return tr.program(strings.Fields(args))
	}
	pipeline := strings.SplitN(line, " | ", 2)
	if m := curlCall.FindStringSubmatch(pipeline[0]); m != nil && len(pipeline) == 2 {
		return tr.curl(m[1], m[2], pipeline[1])
	}
	tr.t.Fatalf("the README shows a command this test cannot run; teach it: %s", line)
	return ""
}

// program runs llmbudget as go run would: stderr (hints and errors come
// before the output is written), stdout, then go run's "exit status N".
func (tr *tour) program(args []string) string {
	code, stdout, stderr := runProgram(args, "")
	out := stderr + stdout
	if code != 0 {
		out += fmt.Sprintf("exit status %d\n", code)
	}
	return out
}

func (tr *tour) curl(file, path, filter string) string {
	tr.t.Helper()
	if tr.addr == "" {
		tr.addr = startServer(tr.t, serveOptions{now: tr.now}).hooks
	}
	body, err := os.ReadFile(file)
	require.NoError(tr.t, err)
	resp, err := http.Post("http://"+tr.addr+path, "application/json", bytes.NewReader(body))
	require.NoError(tr.t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(tr.t, err)
	require.Equal(tr.t, http.StatusOK, resp.StatusCode, string(got))
	switch {
	case filter == `jq -c '.status.state, [.children[].kind]'`:
		var r struct {
			Status   struct{ State string }
			Children []struct{ Kind string }
		}
		require.NoError(tr.t, json.Unmarshal(got, &r))
		kinds := make([]string, len(r.Children))
		for i, c := range r.Children {
			kinds[i] = c.Kind
		}
		state, _ := json.Marshal(r.Status.State)
		list, _ := json.Marshal(kinds)
		return string(state) + "\n" + string(list) + "\n"
	case strings.HasPrefix(filter, "jq . | diff - ") && strings.HasSuffix(filter, " && echo identical"):
		golden, err := os.ReadFile(strings.TrimSuffix(strings.TrimPrefix(filter, "jq . | diff - "), " && echo identical"))
		require.NoError(tr.t, err)
		var pretty bytes.Buffer
		require.NoError(tr.t, json.Indent(&pretty, bytes.TrimSpace(got), "", "  "))
		pretty.WriteString("\n")
		if assert.Equal(tr.t, string(golden), pretty.String()) {
			return "identical\n"
		}
		return "(differs)\n"
	}
	tr.t.Fatalf("the README pipes curl into a filter this test cannot run; teach it: %s", filter)
	return ""
}

// matchesShown reports whether got is what shown shows, where a shown line
// "..." stands for any number of lines.
func matchesShown(shown []string, got string) bool {
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if got == "" {
		lines = nil
	}
	return matchFrom(shown, lines)
}

func matchFrom(shown, lines []string) bool {
	if len(shown) == 0 {
		return len(lines) == 0
	}
	if shown[0] == "..." {
		for i := 0; i <= len(lines); i++ {
			if matchFrom(shown[1:], lines[i:]) {
				return true
			}
		}
		return false
	}
	return len(lines) > 0 && lines[0] == shown[0] && matchFrom(shown[1:], lines[1:])
}

func TestTheREADMETourShowsWhatItsCommandsPrint(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(data)
	clock := regexp.MustCompile("`make run NOW=(\\S+)`").FindStringSubmatch(readme)
	require.NotNil(t, clock, "the tour tells make run which clock to use")
	t.Chdir("../..") // the tour runs from the repository root

	cmds := readmeCommands(t, readme)
	require.GreaterOrEqual(t, len(cmds), 5, "the tour's commands are found")
	tr := &tour{t: t, now: clock[1], vars: map[string]string{}}
	for _, c := range cmds {
		got := tr.run(c.line)
		assert.True(t, matchesShown(c.output, got),
			"$ %s\nREADME shows:\n%s\nit prints:\n%s", c.line, strings.Join(c.output, "\n"), got)
	}
}

func TestShownOutputMatchesWithLinesLeftOut(t *testing.T) {
	tests := map[string]struct {
		shown []string
		got   string
		want  bool
	}{
		"every line shown":               {[]string{"a", "b"}, "a\nb\n", true},
		"a line missing from the output": {[]string{"a", "b"}, "a\n", false},
		"an extra line not left out":     {[]string{"a"}, "a\nb\n", false},
		"lines left out in the middle":   {[]string{"a", "...", "d"}, "a\nb\nc\nd\n", true},
		"lines left out at the end":      {[]string{"a", "..."}, "a\nb\n", true},
		"shown lines out of order":       {[]string{"...", "c", "...", "b"}, "a\nb\nc\n", false},
		"no output and none shown":       {nil, "", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, matchesShown(tc.shown, tc.got))
		})
	}
}
