package httpapi_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hook service never calls the API server: none of its packages may import client-go (or
// controller-runtime). Only the spend writer (internal/spendwriter, wired by the command's
// spend --all) and authz's cache (internal/authzcache, wired by the command's authz) do, and no
// other package of internal/ may depend on them.
func TestNoPackageOfTheHookServiceDependsOnClientGo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go list needs the go command on PATH")
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`,
		"github.com/llmbudget/llmbudget/internal/...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(lines), 10, "go list found the packages: %s", out)
	seen := false
	for _, line := range lines {
		pkg, deps, _ := strings.Cut(line, " ")
		if strings.HasSuffix(pkg, "/internal/spendwriter") || strings.HasSuffix(pkg, "/internal/authzcache") {
			assert.Contains(t, " "+deps+" ", " k8s.io/client-go/kubernetes ", "the check sees client-go where it is")
			continue
		}
		seen = seen || strings.HasSuffix(pkg, "/internal/httpapi")
		for _, dep := range strings.Fields(deps) {
			for _, banned := range []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime",
				"github.com/llmbudget/llmbudget/internal/spendwriter",
				"github.com/llmbudget/llmbudget/internal/authzcache"} {
				assert.False(t, dep == banned || strings.HasPrefix(dep, banned+"/"), "%s depends on %s", pkg, dep)
			}
		}
	}
	assert.True(t, seen, "internal/httpapi was checked")
}
