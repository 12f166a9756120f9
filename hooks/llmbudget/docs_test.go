package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Docs are code: every fenced shell block of README.md, docs/*.md and examples/README.md either runs here (the
// llmbudget commands that need no cluster, network or server; the tour's console blocks are
// TestTheREADMETourShowsWhatItsCommandsPrint's), is checked against what it names (make targets and variables,
// llmbudget flags, paths), or says on the line before its fence why it cannot run:
//
//	<!-- not run: needs a cluster -->
//
// Even a block that is not run has its llmbudget flags and make targets checked.

// notRun is the marker before a block that cannot run here, with its reason.
var notRun = regexp.MustCompile(`^<!-- not run: (\S.*\S) -->$`)

// docBlock is one fenced shell block: where it is, its commands (continuation lines joined), and why it is not run.
type docBlock struct {
	where    string // file:line of the fence
	lang     string
	commands []string
	notRun   string
}

// docBlocks lists the shell blocks of the file at path (relative to the repository root).
func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", path))
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		lang, open := strings.CutPrefix(strings.TrimSpace(lines[i]), "```")
		if !open || lang == "" {
			continue
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if slices.Contains([]string{"sh", "shell", "bash", "console"}, lang) {
			b := docBlock{where: fmt.Sprintf("%s:%d", path, i+1), lang: lang, commands: commandsOf(lang, lines[i+1:end])}
			if i > 0 {
				if m := notRun.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
					b.notRun = m[1]
				}
			}
			blocks = append(blocks, b)
		}
		i = end
	}
	return blocks
}

// commandsOf joins a block's lines into commands: comments and blank lines dropped, a trailing backslash
// continued, and in a console block only the lines after "$ ". A heredoc's body is not a command.
func commandsOf(lang string, lines []string) []string {
	var cmds []string
	continued, heredoc := false, ""
	for _, line := range lines {
		line = strings.TrimSpace(line)
		switch {
		case heredoc != "":
			if line == heredoc {
				heredoc = ""
			}
			continue
		case continued:
			cmds[len(cmds)-1] += " " + strings.TrimSuffix(line, `\`)
		case lang == "console" && !strings.HasPrefix(line, "$ "):
			continue
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		default:
			cmds = append(cmds, strings.TrimSuffix(strings.TrimPrefix(line, "$ "), `\`))
		}
		continued = strings.HasSuffix(line, `\`)
		if m := heredocStart.FindStringSubmatch(line); m != nil {
			heredoc = m[1]
		}
	}
	for i, c := range cmds {
		c = trailingComment.ReplaceAllString(c, "")
		cmds[i] = strings.Join(strings.Fields(c), " ")
	}
	return cmds
}

// The parts of a shell line the docs tests take apart: a heredoc's start (<<EOF), what separates commands, a
// quoted word, and a flag.
var (
	heredocStart     = regexp.MustCompile(`<<-?'?(\w+)'?`)
	commandSeparator = regexp.MustCompile(`\s*(?:\||&&|;)\s*`)
	quoted           = regexp.MustCompile(`'[^']*'|"[^"]*"`)
	flagName         = regexp.MustCompile(`^--?[a-z][-a-z]*$`)
)

// trailingComment is a shell comment after a command: a # after a blank and before a blank or the end.
var trailingComment = regexp.MustCompile(`\s+#(\s.*)?$`)

// docFiles are the documents whose commands a user copies.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	files := []string{"README.md", "examples/README.md"}
	for _, d := range docs {
		files = append(files, strings.TrimPrefix(d, "../../"))
	}
	return files
}

// offline is what a command needs that makes it unrunnable here: a cluster, the network, a server, a shell.
var shellOnly = regexp.MustCompile(`[|><;]|\$\(|&&|\|\|`)

func TestEveryDocumentedCommandRunsOrSaysWhyNot(t *testing.T) {
	makefile := readMakefile(t)
	ran := 0
	for _, file := range docFiles(t) {
		for _, b := range docBlocks(t, file) {
			for _, cmd := range b.commands {
				checkNames(t, b.where, cmd, makefile)
				if b.notRun != "" || (b.lang == "console" && file == "README.md") {
					continue // the README tour's console blocks are run and compared by the tour's test
				}
				if why := runDocCommand(t, cmd); why != "" {
					t.Errorf("%s: %q cannot run here (%s): mark the block with <!-- not run: <why> --> on the line "+
						"before its fence", b.where, cmd, why)
					continue
				}
				ran++
			}
		}
	}
	assert.GreaterOrEqual(t, ran, 20, "the docs' offline commands run")
}

// runDocCommand runs or checks one command of an unmarked block, and says why when it can do neither.
func runDocCommand(t *testing.T, cmd string) string {
	t.Helper()
	words := strings.Fields(cmd)
	switch {
	case shellOnly.MatchString(cmd):
		return "it needs a shell"
	case words[0] == "make":
		return "" // its targets and variables are checked by checkNames
	case len(words) > 2 && words[0] == "go" && (words[1] == "test" || words[1] == "install" || words[1] == "build"):
		for _, w := range words[2:] {
			if strings.HasPrefix(w, "./") {
				pkg := strings.TrimSuffix(strings.TrimSuffix(w, "/..."), "/...")
				assert.DirExists(t, filepath.Join("..", "..", pkg), cmd)
			}
		}
		return ""
	}
	args, ok := llmbudgetArgs(words)
	if !ok {
		return "it is not an llmbudget, make or go command"
	}
	if len(args) > 0 && !offlineCommands[args[0]] || slices.Contains(args, "--prometheus") ||
		slices.Contains(args, "--all") {
		return "it needs a cluster, a Prometheus or a port"
	}
	t.Chdir("../..")
	code, stdout, stderr := runProgram(args, "")
	assert.Contains(t, []int{0, 3}, code, "%s exits %d (3: a budget blocks):\n%s%s", cmd, code, stderr, stdout)
	t.Chdir("hooks/llmbudget")
	return ""
}

// offlineCommands are the llmbudget commands that need nothing but their files.
var offlineCommands = map[string]bool{"eval": true, "migrate": true, "version": true, "help": true, "spend": true}

// llmbudgetArgs are the arguments of an llmbudget command, run as the program or with go run.
func llmbudgetArgs(words []string) ([]string, bool) {
	switch {
	case words[0] == "llmbudget":
		return words[1:], true
	case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./hooks/llmbudget":
		return words[3:], true
	}
	return nil, false
}

// checkNames checks what a command names against the code, whether or not it runs: every flag of an llmbudget
// command is in its -h, and every make target and variable is in the Makefile.
func checkNames(t *testing.T, where, cmd string, makefile makefileNames) {
	t.Helper()
	for _, part := range commandSeparator.Split(cmd, -1) {
		words := strings.Fields(part)
		if len(words) == 0 {
			continue
		}
		if words[0] == "make" {
			// A quoted variable value may hold blanks: LOADFLAGS='-requests 200000'.
			for _, w := range strings.Fields(quoted.ReplaceAllString(part, "''"))[1:] {
				if name, _, isVar := strings.Cut(w, "="); isVar {
					if !makefile.vars[name] {
						t.Errorf("%s: make variable %s is not in the Makefile", where, name)
					}
				} else if !strings.HasPrefix(w, "-") && !makefile.targets[w] {
					t.Errorf("%s: make target %s is not in the Makefile", where, w)
				}
			}
			continue
		}
		args, ok := llmbudgetArgs(words)
		if !ok || len(args) == 0 || strings.HasPrefix(args[0], "-") {
			continue
		}
		help := flagsHelp(t, args[0])
		for _, a := range args[1:] {
			flag, _, _ := strings.Cut(a, "=")
			if !flagName.MatchString(flag) {
				continue
			}
			name := strings.TrimLeft(flag, "-")
			if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(name) + `\b`).MatchString(help) {
				t.Errorf("%s: llmbudget %s has no flag %s", where, args[0], flag)
			}
		}
	}
}

var helps = map[string]string{}

// flagsHelp is what `llmbudget <command> -h` prints, which lists its flags.
func flagsHelp(t *testing.T, command string) string {
	t.Helper()
	if h, ok := helps[command]; ok {
		return h
	}
	_, stdout, stderr := runProgram([]string{command, "-h"}, "")
	helps[command] = stdout + stderr
	return helps[command]
}

// makefileNames are the Makefile's targets and variables.
type makefileNames struct{ targets, vars map[string]bool }

func readMakefile(t *testing.T) makefileNames {
	t.Helper()
	data, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	names := makefileNames{targets: map[string]bool{}, vars: map[string]bool{}}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z][-a-zA-Z0-9_]*):`).FindAllStringSubmatch(string(data), -1) {
		names.targets[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*)\s*[?:]?=`).FindAllStringSubmatch(string(data), -1) {
		names.vars[m[1]] = true
	}
	return names
}

func TestDocBlocksJoinContinuationsAndSkipHeredocs(t *testing.T) {
	cmds := commandsOf("sh", []string{
		"# a comment", "kubectl apply -f - <<EOF", "kind: ConfigMap", "EOF",
		"llmbudget eval \\", "  -f a.yaml", "", "make test",
	})
	assert.Equal(t, []string{"kubectl apply -f - <<EOF", "llmbudget eval -f a.yaml", "make test"}, cmds)
	assert.Equal(t, []string{"make run"}, commandsOf("console", []string{"$ make run", "serving"}))
}

// repoPath is a path into the repository as the docs name one, in backticks, a link or a command.
var repoPath = regexp.MustCompile(
	"(?:^|[\\s`(\\[])((?:deploy|examples|docs|hack|internal|metacontroller|test|tools)/[A-Za-z0-9_./-]*[A-Za-z0-9_/])")

func TestEveryPathTheDocsNameExists(t *testing.T) {
	checked := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range repoPath.FindAllStringSubmatch(line, -1) {
				path := strings.TrimSuffix(m[1], "/...")
				if strings.ContainsAny(path, "*") || strings.Contains(path, "...") || kubectlShorthand(line, path) {
					continue
				}
				// A link from docs/ or examples/ is relative to its file; a path in text is from the root.
				fromRoot := filepath.Join("..", "..", path)
				fromFile := filepath.Join("..", "..", filepath.Dir(file), path)
				_, errRoot := os.Stat(fromRoot)
				_, errFile := os.Stat(fromFile)
				if errRoot != nil && errFile != nil {
					t.Errorf("%s:%d: %s does not exist", file, i+1, path)
				}
				checked++
			}
		}
	}
	assert.Greater(t, checked, 100, "the docs name paths")
}

// kubectlShorthand reports whether path is kubectl's name for an object (deploy/llmbudget in `kubectl logs
// deploy/llmbudget`), or another project's file (Kelos's internal/...), not a path of this repository.
func kubectlShorthand(line, path string) bool {
	kind, name, _ := strings.Cut(path, "/")
	if kind == "deploy" && !strings.ContainsAny(name, "/.") && strings.Contains(line, "kubectl") {
		return true
	}
	return strings.Contains(line, "Kelos's") // a file of another project
}

// A dotted name in backticks (`spendWriter.enabled`, `spec.costSource.maxAge: 15m`) or after --set.
var (
	dottedName = regexp.MustCompile("`([a-z][a-zA-Z0-9]*(?:\\.[a-zA-Z][a-zA-Z0-9]*|\\[\\])+)(?:[:=][^`]*)?`")
	setValue   = regexp.MustCompile(`--set(?:-json|-file|-string)? '?([a-z][a-zA-Z0-9.]*)=`)
)

// foreignFields are fields of other kinds the docs name beside ours: a ResourceQuota's, a Kelos TaskRecord's and
// TaskBudget's, a Kueue Workload's, and those of the llm-cost-budget-operator's budget that docs/coming-from.md maps
// from.
var foreignFields = map[string]bool{
	"hard": true, "used": true, "completionTime": true, "template": true, "usage": true, "model": true,
	"admissionChecks": true, "requeueState": true,
	"monthlyLimitUSD": true, "taskSelector": true, "maxCostUSD": true, "maxInputTokens": true,
	"maxOutputTokens": true, "currentPeriodStart": true,
}

// foreignPaths are such fields whose first part is also ours.
var foreignPaths = map[string]bool{"spec.period.timezone": true}

// Every budget field and chart value the docs name is in the CRDs' schemas or the chart's values.yaml.
func TestEveryFieldAndChartValueTheDocsNameExists(t *testing.T) {
	values := readYAMLFile(t, "../../deploy/helm/llmbudget/values.yaml")
	var schemas []any
	for _, crd := range []string{"llmcostbudgets", "clusterllmcostbudgets"} {
		doc := readYAMLFile(t, "../../deploy/crd/"+crd+".llmbudget.dev.yaml")
		versions, _ := doc["spec"].(map[string]any)["versions"].([]any)
		schemas = append(schemas, versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"])
	}
	fields, chartValues := 0, 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			var names []string
			for _, m := range dottedName.FindAllStringSubmatch(line, -1) {
				names = append(names, m[1])
			}
			for _, m := range setValue.FindAllStringSubmatch(line, -1) {
				names = append(names, m[1])
			}
			for _, name := range names {
				path := strings.Split(strings.ReplaceAll(name, "[]", ""), ".")
				switch {
				case (path[0] == "spec" || path[0] == "status") && !foreignFields[path[1]] && !foreignPaths[name]:
					fields++
					if !slices.ContainsFunc(schemas, func(s any) bool { return inSchema(s, path) }) {
						t.Errorf("%s:%d: %s is no field of LLMCostBudget or ClusterLLMCostBudget", file, i+1, name)
					}
				case values[path[0]] != nil && !strings.Contains(line, "kubectl"):
					chartValues++
					if !inValues(values, path) {
						t.Errorf("%s:%d: %s is not in the chart's values.yaml", file, i+1, name)
					}
				}
			}
		}
	}
	assert.Greater(t, fields, 100, "the docs name budget fields")
	assert.Greater(t, chartValues, 20, "the docs name chart values")
}

func readYAMLFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, yaml.Unmarshal(data, &v), path)
	return v
}

// inSchema reports whether path names a field of the OpenAPI schema s, through objects and arrays.
func inSchema(s any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	node, _ := s.(map[string]any)
	if items, ok := node["items"]; ok {
		return inSchema(items, path)
	}
	if props, ok := node["properties"].(map[string]any); ok {
		child, found := props[path[0]]
		return found && inSchema(child, path[1:])
	}
	// A map (additionalProperties, x-kubernetes-preserve-unknown-fields) holds any key.
	return node["additionalProperties"] != nil || node["x-kubernetes-preserve-unknown-fields"] == true
}

// inValues reports whether path names a value of values.yaml; under a map that is empty there, any key is one.
func inValues(values map[string]any, path []string) bool {
	var node any = values
	for _, p := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if len(m) == 0 {
			return true
		}
		if node, ok = m[p]; !ok {
			return false
		}
	}
	return true
}

// objectName is an object of llmbudget's that the docs name in backticks: a policy, a controller, a role.
var objectName = regexp.MustCompile("`(llmbudget-[a-z0-9-]+)`")

// Every llmbudget object the docs name is one the manifests create (metadata.name in deploy/, metacontroller/ or
// the chart, or an example's), a name the code gives (a field manager), or the quota of an example budget.
func TestEveryObjectTheDocsNameIsCreated(t *testing.T) {
	var manifests strings.Builder
	read := func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if ext := filepath.Ext(path); ext == ".yaml" || ext == ".go" || ext == ".tpl" {
			data, err := os.ReadFile(path)
			manifests.Write(data)
			return err
		}
		return nil
	}
	for _, dir := range []string{"deploy", "metacontroller", "examples", "internal", "hooks/llmbudget"} {
		require.NoError(t, filepath.WalkDir(filepath.Join("..", "..", dir), read))
	}
	known := manifests.String()
	chartName := regexp.MustCompile(`\{\{ include "llmbudget.fullname" \. \}\}-([a-z0-9-]+)`)
	for _, m := range chartName.FindAllStringSubmatch(known, -1) {
		known += "\nname: llmbudget-" + m[1] + "\n"
	}
	for _, m := range regexp.MustCompile(`(?m)^kind: LLMCostBudget\nmetadata:\n  name: (\S+)`).FindAllStringSubmatch(
		known, -1) {
		known += "\nname: llmbudget-" + m[1] + "\n" // its quota
	}
	named := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range objectName.FindAllStringSubmatch(line, -1) {
				named++
				if !strings.Contains(known, "name: "+m[1]+"\n") && !strings.Contains(known, `"`+m[1]+`"`) {
					t.Errorf("%s:%d: %s is created by no manifest and named by no code", file, i+1, m[1])
				}
			}
		}
	}
	assert.Greater(t, named, 50, "the docs name llmbudget's objects")
}

// linkedFile is a markdown link to a YAML file of the repository.
var linkedFile = regexp.MustCompile(`\]\(((?:\.\./)?(?:deploy|examples|metacontroller)/[A-Za-z0-9_./-]+\.yaml)\)`)

// A YAML block right after a paragraph that links one YAML file of the repository shows that file: its lines are
// the file's, in order, and where it leaves lines out it says so with a line "...".
func TestEveryExcerptOfALinkedFileIsTheFilesOwnLines(t *testing.T) {
	excerpts := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		require.NoError(t, err)
		lines := strings.Split(string(data), "\n")
		for i, line := range lines {
			if strings.TrimSpace(line) != "```yaml" || i == 0 {
				continue
			}
			links := linkedFile.FindAllStringSubmatch(lines[i-1]+" "+lines[max(i-2, 0)], -1)
			if len(links) != 1 {
				continue
			}
			src, err := os.ReadFile(filepath.Join("..", "..", filepath.Dir(file), links[0][1]))
			require.NoError(t, err, "%s:%d links %s", file, i, links[0][1])
			end := i + 1
			for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
				end++
			}
			excerpts++
			if !isExcerpt(lines[i+1:end], strings.Split(string(src), "\n")) {
				t.Errorf("%s:%d: the block is not %s's own lines (a line \"...\" marks lines left out)",
					file, i+2, links[0][1])
			}
		}
	}
	assert.Positive(t, excerpts, "the docs show linked files")
}

// isExcerpt reports whether shown is src's lines in order, consecutive but where a line "..." stands for lines
// left out.
func isExcerpt(shown, src []string) bool {
	at, skip := -1, true
	for _, line := range shown {
		if strings.TrimSpace(line) == "..." {
			skip = true
			continue
		}
		next := at + 1
		if skip {
			for next < len(src) && src[next] != line {
				next++
			}
		}
		if next >= len(src) || src[next] != line {
			return false
		}
		at, skip = next, false
	}
	return true
}

func TestAnExcerptLeavesLinesOutOnlyWhereItSaysSo(t *testing.T) {
	src := []string{"a", "b", "c", "d"}
	for name, tc := range map[string]struct {
		shown []string
		want  bool
	}{
		"consecutive lines from anywhere": {[]string{"b", "c"}, true},
		"lines left out, said so":         {[]string{"a", "...", "d"}, true},
		"lines left out silently":         {[]string{"a", "c"}, false},
		"a line reworded":                 {[]string{"a", "b2"}, false},
		"lines out of order":              {[]string{"c", "...", "a"}, false},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, isExcerpt(tc.shown, src)) })
	}
}

// Every default a doc states is the code's: "`--max-body-bytes` (4 MiB)", "(`--metrics-addr`, :9090)" and a table
// of flags with a "default" column are compared with the default `llmbudget <command> -h` prints, "(Helm
// `maxListBodyBytes`, 32 MiB)" and a table of flags with their chart values with values.yaml. Docs wrap lines, so
// a paragraph (or a table) is read as one text.

// The commands whose flags have defaults, in the order a flag's command is guessed when the text names none.
var defaultedCommands = []string{"serve", "authz", "spend", "eval", "migrate"}

// A value as the docs state one: an address, or a number with an optional unit of bytes or time.
const statedValue = `:\d+|(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?` +
	`(?:\s?(?:KiB|MiB|GiB|Ki|Mi|Gi|bytes|ms|seconds?|minutes?|hours?|s|m|h)\b)?`

var (
	// "`--flag` (VALUE", "`--flag`, VALUE", "`--flag` (default VALUE", with a value that ends there.
	flagDefault = regexp.MustCompile("`--([a-z][-a-z]*)`(?: \\(|, )(?:the default,? |default:? )?(" + statedValue +
		`)(?:[;,)]|$)`)
	// "Helm `name`, VALUE", "Helm `name` (VALUE" or, with a path of values.yaml, "`resources.limits.memory`, VALUE".
	chartDefault   = regexp.MustCompile("(Helm )?`([a-z][a-zA-Z0-9.]*)`(?:,| \\() (" + statedValue + `)(?:[;,)]|$)`)
	helpFlag       = regexp.MustCompile(`(?m)^  -([a-z][-a-z]*)(?: \S+)?\n((?:    \t.*\n?)+)`)
	helpDefault    = regexp.MustCompile(`\(default (.*)\)\n?$`)
	tableValue     = regexp.MustCompile(`^(?:` + statedValue + `)`)
	tableChartKeys = regexp.MustCompile("\\((`[a-z][a-zA-Z0-9]*`(?:, `[a-z][a-zA-Z0-9]*`)*)\\)")
	tableChartKey  = regexp.MustCompile("`([a-z][a-zA-Z0-9]*)`")
	tableFlag      = regexp.MustCompile("`--([a-z][-a-z]*)`")
)

// statedDefault is a default a doc states: of a flag, or of a chart value.
type statedDefault struct {
	flag, chart string // one of them
	value       string
	where       string // the words that state it: a table's row, or the flag or value and what follows
	context     string // the paragraph or section, which says whose flag it is
}

// statedDefaults lists the defaults stated in a paragraph of a doc (a table is one paragraph).
func statedDefaults(paragraph, section string) []statedDefault {
	context := paragraph + "\n" + section
	var found []statedDefault
	if strings.HasPrefix(paragraph, "|") {
		rows := strings.Split(paragraph, "\n")
		header := strings.Split(rows[0], "|")
		if len(header) < 3 {
			return nil
		}
		byFlag := strings.Contains(strings.ToLower(header[2]), "default")
		for _, row := range rows[1:] {
			cells := strings.Split(row, "|")
			if len(cells) < 3 {
				continue
			}
			var values []string
			for v := range strings.SplitSeq(cells[2], ", ") {
				values = append(values, tableValue.FindString(strings.TrimSpace(v)))
			}
			names := tableFlag.FindAllStringSubmatch(cells[1], -1)
			if !byFlag {
				names = nil
				if keys := tableChartKeys.FindStringSubmatch(cells[1]); keys != nil {
					names = tableChartKey.FindAllStringSubmatch(keys[1], -1)
				}
			}
			for i, n := range names {
				if i >= len(values) || values[i] == "" {
					continue
				}
				d := statedDefault{chart: n[1], value: values[i], where: row, context: context}
				if byFlag {
					d.flag, d.chart = n[1], ""
				}
				found = append(found, d)
			}
		}
	}
	text := strings.Join(strings.Fields(paragraph), " ")
	for _, m := range flagDefault.FindAllStringSubmatch(text, -1) {
		found = append(found, statedDefault{flag: m[1], value: m[2], where: m[0], context: context})
	}
	for _, m := range chartDefault.FindAllStringSubmatch(text, -1) {
		if m[1] != "" || strings.Contains(m[2], ".") {
			found = append(found, statedDefault{chart: m[2], value: m[3], where: m[0], context: context})
		}
	}
	return found
}

// canonical is a stated or real default in one form: bytes and counts as an integer, durations as Go prints them,
// anything else as it is.
func canonical(v string) string {
	v = strings.Trim(strings.TrimSpace(v), `"`)
	units := map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
	durations := map[string]string{"s": "s", "second": "s", "seconds": "s", "m": "m", "minute": "m",
		"minutes": "m", "h": "h", "hour": "h", "hours": "h", "ms": "ms"}
	m := regexp.MustCompile(`^(\d[\d,]*)(?:\.0+)?\s?([A-Za-z]*)$`).FindStringSubmatch(v)
	if m != nil && m[2] == "bytes" {
		m[2] = ""
	}
	if m == nil {
		if d, err := time.ParseDuration(v); err == nil {
			return d.String()
		}
		return v
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil {
		return v
	}
	switch {
	case m[2] == "":
		return strconv.FormatInt(n, 10)
	case units[m[2]] != 0:
		return strconv.FormatInt(n*units[m[2]], 10)
	case durations[m[2]] != "":
		if d, err := time.ParseDuration(strconv.FormatInt(n, 10) + durations[m[2]]); err == nil {
			return d.String()
		}
	}
	return v
}

// flagDefaults are each command's flags with the defaults its -h prints ("" for a flag without one).
func flagDefaults(t *testing.T) map[string]map[string]string {
	t.Helper()
	defaults := map[string]map[string]string{}
	for _, c := range defaultedCommands {
		defaults[c] = map[string]string{}
		for _, m := range helpFlag.FindAllStringSubmatch(flagsHelp(t, c), -1) {
			d := ""
			if dm := helpDefault.FindStringSubmatch(m[2]); dm != nil {
				d = dm[1]
			}
			defaults[c][m[1]] = d
		}
		require.NotEmpty(t, defaults[c], "llmbudget %s -h lists its flags", c)
	}
	return defaults
}

// commandOf is the command whose flag a stated default is: the one of the commands its paragraph (then its
// section) names that has the flag, else the first command that has it.
func commandOf(flag, context string, defaults map[string]map[string]string) (string, bool) {
	paragraph, section, _ := strings.Cut(context, "\n")
	for _, text := range []string{paragraph, section} {
		var named []string
		for _, c := range defaultedCommands {
			if _, has := defaults[c][flag]; has && regexp.MustCompile(`\b`+c+`\b`).MatchString(text) {
				named = append(named, c)
			}
		}
		if len(named) == 1 {
			return named[0], true
		}
	}
	for _, c := range defaultedCommands {
		if _, has := defaults[c][flag]; has {
			return c, true
		}
	}
	return "", false
}

// chartValueOf is the values.yaml value a doc names: by its path, or by a key that only one value has.
func chartValueOf(values map[string]any, name string) (any, bool) {
	var found []any
	var walk func(node any, path []string)
	walk = func(node any, path []string) {
		m, ok := node.(map[string]any)
		if !ok {
			if strings.Join(path, ".") == name || path[len(path)-1] == name {
				found = append(found, node)
			}
			return
		}
		for k, v := range m {
			walk(v, append(slices.Clone(path), k))
		}
	}
	walk(values, nil)
	if len(found) != 1 {
		return nil, false
	}
	return found[0], true
}

// defaultMismatches compares the defaults a doc's text states with the code's and the chart's, and says where they
// differ. A flag that no llmbudget command has (Metacontroller's, the API server's) is not ours to check.
func defaultMismatches(t *testing.T, doc string, values map[string]any) (mismatches []string, checked int) {
	t.Helper()
	defaults := flagDefaults(t)
	section := ""
	lines := strings.Split(doc, "\n")
	for start := 0; start < len(lines); start++ {
		end := start
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			end++
		}
		paragraph := strings.Join(lines[start:end], "\n")
		if strings.HasPrefix(paragraph, "#") {
			section = lines[start]
		}
		for _, d := range statedDefaults(paragraph, section) {
			where := fmt.Sprintf("%d: %s", start+1, d.where) // the line its paragraph starts
			if d.chart != "" {
				v, ok := chartValueOf(values, d.chart)
				if !ok && !strings.Contains(where, "Helm `") && strings.Contains(d.chart, ".") {
					continue // a budget field's path, such as spec.costSource.maxAge
				}
				if !ok {
					mismatches = append(mismatches, fmt.Sprintf("%s: %s is no single chart value", where, d.chart))
					continue
				}
				checked++
				if f, isNumber := v.(float64); isNumber {
					v = strconv.FormatFloat(f, 'f', -1, 64) // YAML numbers are read as float64
				}
				if canonical(d.value) != canonical(fmt.Sprint(v)) {
					mismatches = append(mismatches, fmt.Sprintf("%s: the chart's %s is %v", where, d.chart, v))
				}
				continue
			}
			command, ok := commandOf(d.flag, d.context, defaults)
			if !ok {
				continue
			}
			checked++
			if code := defaults[command][d.flag]; canonical(d.value) != canonical(code) {
				mismatches = append(mismatches, fmt.Sprintf("%s: llmbudget %s --%s defaults to %q", where, command,
					d.flag, code))
			}
		}
		start = end
	}
	return mismatches, checked
}

func TestEveryDefaultTheDocsStateIsTheCodes(t *testing.T) {
	values := readYAMLFile(t, "../../deploy/helm/llmbudget/values.yaml")
	checked := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		require.NoError(t, err)
		mismatches, n := defaultMismatches(t, string(data), values)
		checked += n
		for _, m := range mismatches {
			t.Errorf("%s:%s", file, m)
		}
	}
	assert.GreaterOrEqual(t, checked, 20, "the docs state defaults")
}

func TestAStatedDefaultIsComparedWithTheCodes(t *testing.T) {
	values := map[string]any{"maxBodyBytes": 4194304,
		"spendWriter": map[string]any{"timeout": "1m", "qps": 200, "burst": 400},
		"resources":   map[string]any{"limits": map[string]any{"memory": "128Mi"}}}
	table := func(header, row string) string { return header + "\n|---|---|---|\n" + row }
	tests := map[string]struct {
		doc        string
		found      bool // a default is taken from doc
		mismatches int
	}{
		"a flag's size in MiB":             {"`--max-body-bytes` (4 MiB) is the largest request.", true, 0},
		"a flag's wrong size":              {"`--max-body-bytes` (8 MiB) is the largest request.", true, 1},
		"a size in bytes with commas":      {"(`--max-body-bytes`, 4,194,304 bytes)", true, 0},
		"a count after a comma":            {"at most (`--max-connections`, 512) at once", true, 0},
		"a wrong count":                    {"at most `--max-connections` (1024) at once", true, 1},
		"the other command's count, named": {"`llmbudget authz` takes `--max-connections` (1024) at once", true, 0},
		"an address":                       {"`/metrics` (`--metrics-addr`, :9090) exposes", true, 0},
		"a wrong address":                  {"`/metrics` (`--metrics-addr`, :8080) exposes", true, 1},
		"a duration in seconds":            {"The authz `--idle-timeout` (90 s) for keep-alive connections.", true, 0},
		"a wrong duration":                 {"The authz `--idle-timeout` (30 s) for keep-alive connections.", true, 1},
		"a duration after default":         {"spend `--deadline` (default 200s) bounds the run", true, 0},
		"a wrong duration after default":   {"spend `--deadline` (default 5m) bounds the run", true, 1},
		"a count for a duration":           {"spend `--deadline` (200) bounds the run", true, 1},
		"a line wrapped before the value":  {"`--max-in-flight-bytes`\n(16 MiB; calls past it", true, 0},
		"no value after the flag":          {"`--max-body-bytes` (Helm `maxBodyBytes`) is the largest", false, 0},
		"another program's flags":          {"its `--event-ttl` (1 hour) and `--workers` (5)", false, 0},
		"a budget field's default":         {"older than `spec.costSource.maxAge` (15 minutes)", false, 0},
		"a chart value":                    {"the largest request (Helm `maxBodyBytes`, 4 MiB)", true, 0},
		"a wrong chart value":              {"the largest request (Helm `maxBodyBytes`, 1 MiB)", true, 1},
		"a chart value by its path":        {"the limit (`resources.limits.memory`, 128Mi)", true, 0},
		"a wrong chart value by its path":  {"the limit (`resources.limits.memory`, 256Mi)", true, 1},
		"a table of flag defaults": {
			table("| flag | default | bounds |", "| `--timeout` | 2m (the CronJob: 1m) | a budget |"), true, 0},
		"a table with a wrong flag default": {
			table("| flag | default | bounds |", "| `--timeout` | 1m | a budget |"), true, 1},
		"a table of two flags' defaults": {
			table("| flag | default | bounds |", "| `--qps`, `--burst` | 200, 400 | API calls |"), true, 0},
		"a table of two defaults, one wrong": {
			table("| flag | default | bounds |", "| `--qps`, `--burst` | 200, 200 | API calls |"), true, 1},
		"a table of chart values": {
			table("| flag (chart value) | CronJob | bounds |", "| `--timeout` (`timeout`) | 1m | a budget |"), true, 0},
		"a table with a wrong chart value": {
			table("| flag (chart value) | CronJob | bounds |", "| `--timeout` (`timeout`) | 2m | a budget |"), true, 1},
		"a table of two chart values, one wrong": {
			table("| flag (chart value) | CronJob | bounds |", "| `--qps` (`qps`, `burst`) | 200, 1 | calls |"), true, 1},
		"a table row stating a flag's default": {
			table("| status | cause | fix |", "| 413 | over `--max-body-bytes` (8 MiB) | split |"), true, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mismatches, checked := defaultMismatches(t, tc.doc, values)
			assert.Len(t, mismatches, tc.mismatches, "%v", mismatches)
			assert.Equal(t, tc.found, checked > 0, "a default is found")
		})
	}
}
