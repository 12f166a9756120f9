package deploytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// Object is one Kubernetes object as decoded from YAML.
type Object = map[string]any

// Release is where the chart is rendered: the name and namespace that make the chart's
// objects match deploy/ (`helm install llmbudget deploy/helm/llmbudget -n llmbudget-system`).
const (
	ChartDir         = "deploy/helm/llmbudget"
	ReleaseName      = "llmbudget"
	ReleaseNamespace = "llmbudget-system"
)

// Kubectl finds kubectl as the cluster harness does: LLMBUDGET_KUBECTL, else the one
// build.sh put beside the server binaries, else kubectl on PATH.
func Kubectl() (string, error) {
	candidates := []string{os.Getenv("LLMBUDGET_KUBECTL"), filepath.Join(cluster.DefaultBinDir(), "kubectl"), "kubectl"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if path, err := exec.LookPath(c); err == nil {
			return path, nil
		}
	}
	return "", errors.New("no kubectl: set LLMBUDGET_KUBECTL, run test/k8s/build.sh, or put kubectl on PATH")
}

// Kustomize renders a kustomization directory of the repository (root: the repository
// root, dir relative to it) with `kubectl kustomize`, as `make manifests` does.
func Kustomize(root, dir string) ([]Object, error) {
	kubectl, err := Kubectl()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", filepath.Join(root, dir))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, errOut.String())
	}
	return DecodeObjects(out.String())
}

// RenderChart renders the chart of the repository at root as `helm template llmbudget
// deploy/helm/llmbudget -n llmbudget-system` would, with values over values.yaml, in strict
// mode (a template that reads a value which does not exist fails), followed by the CRDs of
// crds/. NOTES.txt is left out.
func RenderChart(root string, values map[string]any) ([]Object, error) {
	ch, err := loader.Load(filepath.Join(root, ChartDir))
	if err != nil {
		return nil, err
	}
	if err := ch.Validate(); err != nil {
		return nil, err
	}
	opts := chartutil.ReleaseOptions{Name: ReleaseName, Namespace: ReleaseNamespace, IsInstall: true, Revision: 1}
	rv, err := chartutil.ToRenderValues(ch, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []Object
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		o, err := DecodeObjects(rendered[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		objs = append(objs, o...)
	}
	for _, crd := range ch.CRDObjects() {
		o, err := DecodeObjects(string(crd.File.Data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", crd.Filename, err)
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// DecodeObjects splits a multi-document YAML stream into objects, skipping empty documents.
func DecodeObjects(manifest string) ([]Object, error) {
	var objs []Object
	for i, doc := range splitDocuments(manifest) {
		var o Object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// splitDocuments splits YAML on `---` lines.
func splitDocuments(manifest string) []string {
	var docs []string
	var cur strings.Builder
	for _, line := range strings.Split(manifest, "\n") {
		if strings.TrimRight(line, " \t") == "---" || strings.HasPrefix(line, "--- ") {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	return append(docs, cur.String())
}
