// Command llmbudget is the llmbudget hook service (serve) and its offline tools (eval, migrate, spend).
// `llmbudget help` or -h lists the commands (`llmbudget` alone too, on stderr with status 2); `llmbudget <command>
// -h` prints a command's flags with their defaults. Exit status: 0 success, 1 failure, 2 usage (no or an unknown
// command, an unknown flag or flag value, a missing or an extra argument), 3 eval --fail-on.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitFailedOn = 3 // eval --fail-on: the input was valid, and a budget ended in a state named
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand. To add one, add an entry to commands.
type command struct {
	name     string
	synopsis string // arguments after the name, for the usage line
	summary  string // one line for `llmbudget help`
	about    string // paragraphs for `llmbudget <name> -h`, after the usage line
	run      func(args []string, std stdio) error
}

// commands are listed in this order by `llmbudget help`.
var commands = []command{
	serveCommand,
	authzCommand,
	admissionCheckCommand,
	evalCommand,
	migrateCommand,
	spendCommand,
	versionCommand,
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	who := "llmbudget"
	if len(args) == 0 { // not asking for help: a usage error, so that a script that forgot the command fails
		fmt.Fprintf(stderr, "llmbudget: no command given\n\n%s", usage())
		return exitUsage
	}
	if slices.Contains([]string{"help", "-h", "-help", "--help"}, args[0]) {
		if len(args) < 2 {
			fmt.Fprint(stdout, usage())
			return exitOK
		}
		who, args = "llmbudget help", []string{args[1], "-h"}
	} else if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "llmbudget: %s given before a command: flags follow the command, "+
			"as in llmbudget serve --addr :8080\n\n%s", args[0], usage())
		return exitUsage
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == args[0] })
	if i < 0 {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", who, args[0], usage())
		return exitUsage
	}
	c := commands[i]
	err := c.run(args[1:], stdio{in: stdin, out: stdout, err: stderr})
	ue, isUsage := errors.AsType[*usageError](err)
	switch {
	case err == nil:
		return exitOK
	case isUsage && errors.Is(ue.err, flag.ErrHelp):
		fmt.Fprint(stdout, commandHelp(c, ue.fs))
		return exitOK
	case isUsage:
		fmt.Fprintf(stderr, "llmbudget %s: %v\n\n%s", c.name, ue.err, commandHelp(c, ue.fs))
		return exitUsage
	}
	if _, ok := errors.AsType[reported](err); ok {
		return exitFailure
	}
	// One prefixed line per problem, as a compiler prints them.
	prefix := "llmbudget " + c.name + ": "
	fmt.Fprintf(stderr, "%s%s\n", prefix, strings.ReplaceAll(err.Error(), "\n", "\n"+prefix))
	if _, ok := errors.AsType[failedOn](err); ok {
		return exitFailedOn
	}
	return exitFailure
}

func usage() string {
	var b strings.Builder
	b.WriteString("llmbudget: LLM cost budgets for Kubernetes, as Metacontroller hooks.\n\n")
	b.WriteString("usage: llmbudget <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-14s %s\n", c.name, c.summary)
	}
	b.WriteString("\n\"llmbudget <command> -h\" prints a command's flags. Exit status: 0 success, 1 failure, " +
		"2 usage,\n3 a budget in an eval --fail-on state.\n")
	return b.String()
}

func commandHelp(c command, fs *flag.FlagSet) string {
	help := fmt.Sprintf("usage: %s\n\n%s\n", strings.TrimSpace("llmbudget "+c.name+" "+c.synopsis), c.about)
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	if flags.Len() > 0 {
		help += "\nflags:\n" + flags.String()
	}
	return help
}

// reported is a failure the command has already logged: run prints nothing more and exits 1.
type reported struct{ error }

// newFlagSet returns a command's flag set, which prints nothing itself: parseFlags reports its errors and run
// prints its help.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// usageError reports a command line that cannot be run, or -h. run prints the command's help: to stdout with
// status 0 for -h, else to stderr with status 2.
type usageError struct {
	fs  *flag.FlagSet
	err error
}

func (e *usageError) Error() string { return e.err.Error() }

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return &usageError{fs: fs, err: err}
	}
	return nil
}

// badUsage is a usageError for a command line the flags accepted.
func badUsage(fs *flag.FlagSet, format string, args ...any) error {
	return &usageError{fs: fs, err: fmt.Errorf(format, args...)}
}

// parseFileFlags parses the flags of a command that reads the -f files, which it requires.
func parseFileFlags(fs *flag.FlagSet, files *fileList, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badUsage(fs, "unexpected argument %q: give files with -f", fs.Arg(0))
	}
	return checkFiles(fs, *files)
}

// parseFileArgs is parseFileFlags for a command that also takes its files as arguments, before, between or after
// its flags ("-" is stdin).
func parseFileArgs(fs *flag.FlagSet, files *fileList, args []string) error {
	for {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		args = fs.Args()
		i := slices.IndexFunc(args, func(a string) bool { return a != "-" && strings.HasPrefix(a, "-") })
		if i < 0 {
			*files = append(*files, args...)
			return checkFiles(fs, *files)
		}
		*files, args = append(*files, args[:i]...), args[i:]
	}
}

func checkFiles(fs *flag.FlagSet, files fileList) error {
	if len(files) == 0 {
		return badUsage(fs, "no input: give at least one -f FILE (- for stdin)")
	}
	if stdinTwice(files) {
		return badUsage(fs, "-f - given twice: stdin can be read only once")
	}
	return nil
}

// stdinTwice is whether files names stdin ("-") more than once: the second would silently read nothing.
func stdinTwice(files []string) bool {
	i := slices.Index(files, "-")
	return i >= 0 && slices.Contains(files[i+1:], "-")
}

// fileList collects repeated -f flags.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// parseClock returns the clock a --now flag asks for: time.Now when the flag is empty, else a clock stopped at
// that RFC 3339 instant. example is the instant the error shows as a model.
func parseClock(now, example string) (func() time.Time, error) {
	if now == "" {
		return time.Now, nil
	}
	t, err := time.Parse(time.RFC3339, now)
	if err != nil {
		return nil, fmt.Errorf("--now %q: must be RFC 3339, like %s", now, example)
	}
	return func() time.Time { return t }, nil
}
