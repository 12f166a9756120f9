//go:build integration

package integration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// The spend writer's ClusterRole writes ConfigMaps in every namespace, its own too, where authz's trust
// configuration llmbudget-authz and the shared price table are. There the spend-source policy lets it, and any
// other ServiceAccount of llmbudget-system, write its checkpoints and nothing else; elsewhere it still writes spend.
func TestTheSpendWriterWritesOnlyItsCheckpointsInItsOwnNamespace(t *testing.T) {
	installSpendSourcePolicies(t)
	installSpendWriterRBAC(t)
	const home = "llmbudget-system"
	team := kube.Namespace(t, "writer-home-team")
	authzConfig := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: llmbudget-authz, namespace: " + home + "}\n" +
		"data: {config.yaml: 'gateways: []'}\n"
	kube.ApplyYAML(t, "", authzConfig)
	kube.Kubectl(t, "-n", home, "create", "configmap", "settings", "--from-literal=mode=fast")
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "-n", home, "delete", "configmap", "llmbudget-authz", "settings",
			"llmbudget-spend-checkpoints."+team, "--ignore-not-found")
	})
	asWriter := []string{"-n", home, "--as=" + spendWriter}
	cluster.WaitFor(t, time.Minute, "the writer's RBAC to be in force", func() (bool, string) {
		got := canI(t, spendWriter, home, "patch", "configmaps")
		return got == "yes", got
	})
	apply := func() []string {
		// --force-conflicts: another manager's fields are no conflict, so that admission decides.
		return append(asWriter, "apply", "--server-side", "--field-manager=llmbudget-spend", "--force-conflicts",
			"-f", "-")
	}
	configMap := func(ns, name, labels string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + ", labels: {" +
			labels + "}}\ndata: {chatbot: '{}'}\n"
	}
	refused := func(t *testing.T, name, out string, err error) {
		t.Helper()
		require.Error(t, err, out)
		assert.Contains(t, out, "ValidatingAdmissionPolicy 'llmbudget-spend-sources'")
		assert.Contains(t, out, "the service accounts of llmbudget-system may write only the spend writer's "+
			"checkpoints there (llmbudget-spend-checkpoints.<namespace>): ConfigMap llmbudget-system/"+name+
			" is not one")
	}

	attempts := []struct {
		name, stdin string
		args        []string
		configMap   string
	}{
		{"patch authz's trust configuration", "",
			append(asWriter, "patch", "configmap", "llmbudget-authz", "--type=merge",
				"-p", `{"data":{"config.yaml":"gateways: [{name: any, addresses: [0.0.0.0/0]}]"}}`), "llmbudget-authz"},
		{"apply over authz's trust configuration", configMap(home, "llmbudget-authz", ""),
			apply(), "llmbudget-authz"},
		{"patch another ConfigMap of its namespace", "",
			append(asWriter, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"mode":"slow"}}`),
			"settings"},
		{"create a ConfigMap that is no checkpoint", configMap(home, "llmbudget-authz-next", ""),
			apply(), "llmbudget-authz-next"},
		{"create one whose name only contains the checkpoints'", configMap(home, "x.llmbudget-spend-checkpoints.a", ""),
			apply(), "x.llmbudget-spend-checkpoints.a"},
	}
	for _, a := range attempts {
		t.Run("refused: "+a.name, func(t *testing.T) {
			out, err := kube.KubectlErr(t, a.stdin, a.args...)
			refused(t, a.configMap, out, err)
		})
	}
	t.Run("refused: create authz's trust configuration once it is gone", func(t *testing.T) {
		kube.Kubectl(t, "-n", home, "delete", "configmap", "llmbudget-authz")
		t.Cleanup(func() { kube.ApplyYAML(t, "", authzConfig) })
		out, err := kube.KubectlErr(t, configMap(home, "llmbudget-authz", ""), apply()...)
		refused(t, "llmbudget-authz", out, err)
	})
	assert.Equal(t, "gateways: []", kube.Kubectl(t, "-n", home, "get", "configmap", "llmbudget-authz",
		"-o", "jsonpath={.data.config\\.yaml}"), "authz's trust configuration is as its administrator wrote it")
	assert.Equal(t, "fast", kube.Kubectl(t, "-n", home, "get", "configmap", "settings",
		"-o", "jsonpath={.data.mode}"))

	t.Run("admitted: the writer creates and updates its checkpoints", func(t *testing.T) {
		name := "llmbudget-spend-checkpoints." + team
		out, err := kube.KubectlErr(t, configMap(home, name, ""), apply()...)
		require.NoError(t, err, out)
		out, err = kube.KubectlErr(t, "", append(asWriter, "patch", "configmap", name, "--type=merge",
			"-p", `{"data":{"chatbot":"{\"growth\":{}}"}}`)...)
		require.NoError(t, err, out)
	})
	t.Run("admitted: the writer writes a spend source in a budget's namespace", func(t *testing.T) {
		out, err := kube.KubectlErr(t, configMap(team, "llm-spend", "llmbudget.dev/spend-source: llm-spend"),
			"-n", team, "--as="+spendWriter, "apply", "--server-side", "--field-manager=llmbudget-spend", "-f", "-")
		require.NoError(t, err, out)
		out, err = kube.KubectlErr(t, "", "-n", team, "--as="+spendWriter, "patch", "configmap", "llm-spend",
			"--type=merge", "-p", `{"data":{"total":"{}"}}`)
		require.NoError(t, err, out)
	})
	t.Run("admitted: a cluster administrator still writes authz's trust configuration", func(t *testing.T) {
		kube.Kubectl(t, "-n", home, "patch", "configmap", "llmbudget-authz", "--type=merge",
			"-p", `{"data":{"config.yaml":"gateways: []\n"}}`)
	})
}
