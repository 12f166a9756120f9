package deploytest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// object is one Kubernetes object as decoded from YAML.
type object = deploytest.Object

// repoRoot is the llmbudget repository root.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	return root
}

// repoPath joins parts below the repository root.
func repoPath(t testing.TB, parts ...string) string {
	return filepath.Join(append([]string{repoRoot(t)}, parts...)...)
}

// kustomize renders a kustomization directory (relative to the repository root).
func kustomize(t testing.TB, dir string) []object {
	t.Helper()
	objs, err := deploytest.Kustomize(repoRoot(t), dir)
	require.NoError(t, err)
	return objs
}

// decodeObjects splits a multi-document YAML stream into objects.
func decodeObjects(t testing.TB, manifest string) []object {
	t.Helper()
	objs, err := deploytest.DecodeObjects(manifest)
	require.NoError(t, err)
	return objs
}

// readYAML decodes one YAML file (relative to the repository root) into v: strictly
// (decodeStrict) when v is a struct, as plain YAML when it is a map.
func readYAML(t testing.TB, rel string, v any) {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, rel))
	require.NoError(t, err)
	if _, isMap := v.(*object); isMap {
		require.NoError(t, yaml.Unmarshal(data, v), "%s", rel)
		return
	}
	require.NoError(t, decodeStrict(data, v), "%s", rel)
}

// decodeStrict decodes YAML into a struct the way the strictest of its consumers reads it:
// duplicate keys, unknown fields and field names that differ only in case are errors
// (encoding/json alone would accept "valuefrom" for "valueFrom", which kube-state-metrics'
// and the event exporter's YAML decoders would silently ignore).
func decodeStrict(data []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// key names an object: kind, namespace/name.
func key(o object) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	kind, _ := o["kind"].(string)
	if ns != "" {
		return fmt.Sprintf("%s %s/%s", kind, ns, name)
	}
	return kind + " " + name
}

// byKey indexes objects by key, failing on duplicates.
func byKey(t testing.TB, objs []object) map[string]object {
	t.Helper()
	m := make(map[string]object, len(objs))
	for _, o := range objs {
		k := key(o)
		require.NotContains(t, m, k, "two objects named %s", k)
		m[k] = o
	}
	return m
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// dig follows a path of map keys and list indexes (ints) through decoded YAML.
func dig(v any, path ...any) (any, bool) {
	for _, p := range path {
		switch step := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[step]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || step >= len(l) {
				return nil, false
			}
			v = l[step]
		default:
			panic(fmt.Sprintf("dig: bad path element %T", p))
		}
	}
	return v, true
}

// ofKind keeps the objects of one kind.
func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}
