package benchkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// SpendWriterManifest holds the spend writer's Deployment, from the repository's root.
const SpendWriterManifest = "deploy/components/spend-writer/spend-writer.yaml"

// WriterNamespace is the namespace the Deployment runs in, which holds the writer's checkpoints.
const WriterNamespace = "llmbudget-system"

// SpendWriter is one run of the spend writer as deploy/components/spend-writer's Deployment runs it: its
// arguments but --prometheus and those of the loop, and GOMEMLIMIT, which the Downward API sets to its memory
// limit. A measured run is one run of the writer, as a leader's run is. Loop holds the Deployment's flags of the
// loop (--loop, its interval and Lease) but --metrics-addr and --identity, for a replica run as the Deployment
// runs it.
type SpendWriter struct {
	Args     []string
	Loop     []string
	MemLimit int64
}

// DeployedSpendWriter reads the Deployment of deploy/components/spend-writer.
func DeployedSpendWriter() (SpendWriter, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return SpendWriter{}, err
	}
	path := filepath.Join(root, SpendWriterManifest)
	docs, err := cluster.ReadDocuments(path)
	if err != nil {
		return SpendWriter{}, err
	}
	for _, d := range docs {
		if d.Kind != "Deployment" {
			continue
		}
		var dep appsv1.Deployment
		if err := yaml.Unmarshal([]byte(d.YAML), &dep); err != nil {
			return SpendWriter{}, fmt.Errorf("%s: %w", path, err)
		}
		c := dep.Spec.Template.Spec.Containers[0]
		out := SpendWriter{MemLimit: c.Resources.Limits.Memory().Value()}
		for _, a := range c.Args {
			// The Downward API's namespace: where the writer keeps its checkpoints and its Lease.
			a = strings.ReplaceAll(a, "$(POD_NAMESPACE)", WriterNamespace)
			name, _, _ := strings.Cut(a, "=")
			switch {
			case name == "--prometheus" || name == "--metrics-addr" || name == "--identity":
			case loopFlag(a):
				out.Loop = append(out.Loop, a)
			default:
				out.Args = append(out.Args, a)
			}
		}
		return out, nil
	}
	return SpendWriter{}, fmt.Errorf("%s holds no Deployment", path)
}

// loopFlag reports whether a is a flag of the Deployment's loop: --loop, its interval, Lease and metrics.
func loopFlag(a string) bool {
	name, _, _ := strings.Cut(a, "=")
	switch name {
	case "--loop", "--interval", "--lease-name", "--lease-namespace", "--identity", "--lease-duration",
		"--renew-deadline", "--retry-period", "--metrics-addr":
		return true
	}
	return false
}

// WriterRun is what one run of the spend writer shows: its wall time, peak resident memory (the kernel's
// ru_maxrss), exit code and the lines it logged.
type WriterRun struct {
	Wall  time.Duration
	RSS   int64
	Exit  int
	Lines []string
}

// Run runs bin once with w's arguments followed by args, GOMEMLIMIT its memory limit. The error is one of
// starting bin; a writer that exits non-zero is a run all the same.
func (w SpendWriter) Run(bin string, args ...string) (WriterRun, error) {
	cmd := exec.Command(bin, slices.Concat(w.Args, args)...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+strconv.FormatInt(w.MemLimit, 10))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	r := WriterRun{Wall: time.Since(start)}
	if cmd.ProcessState == nil {
		return r, err
	}
	r.Exit = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.RSS = ru.Maxrss << 10
	}
	r.Lines = strings.Split(strings.TrimSpace(stderr.String()), "\n")
	return r, nil
}

// Tail is the run's last n lines, each cut to width bytes and on a line of its own, indented under a table's row.
func (r WriterRun) Tail(n, width int) string {
	var b strings.Builder
	for _, l := range r.Lines[max(0, len(r.Lines)-n):] {
		b.WriteString("\n         " + l[:min(len(l), width)])
	}
	return b.String()
}
