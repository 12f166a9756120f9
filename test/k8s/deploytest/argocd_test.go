package deploytest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
)

const healthScript = "deploy/argocd/health-llmcostbudget.lua"

// toLua converts decoded JSON to Lua values the way Argo CD hands `obj` to a health script:
// objects and arrays become tables (arrays 1-based), numbers become Lua numbers.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		tbl := L.NewTable()
		for _, el := range v {
			tbl.Append(toLua(L, el))
		}
		return tbl
	case map[string]any:
		tbl := L.NewTable()
		for k, el := range v {
			tbl.RawSetString(k, toLua(L, el))
		}
		return tbl
	}
	panic("toLua: unexpected type")
}

// runHealth runs a health script on obj with only the libraries Argo CD opens for it (base,
// table, string, math; no io or os), returning hs.status and hs.message.
func runHealth(t *testing.T, script string, obj map[string]any) (status, message string) {
	t.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, obj))
	require.NoError(t, L.DoString(script))
	hs, ok := L.Get(-1).(*lua.LTable)
	require.True(t, ok, "the script returns a table")
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

// goldenBudget is the budget of a golden budget/sync case: its parent with the hook's status.
func goldenBudget(t *testing.T, name string) map[string]any {
	t.Helper()
	for _, s := range sampleBudgets(t) {
		if s.name == name {
			return s.obj
		}
	}
	t.Fatalf("no golden budget/sync case %s", name)
	return nil
}

func TestArgoCDHealthOfLLMCostBudget(t *testing.T) {
	script, err := os.ReadFile(repoPath(t, healthScript))
	require.NoError(t, err)
	var cm object
	readYAML(t, "deploy/argocd/argocd-cm-patch.yaml", &cm)
	fromCM, _ := dig(cm, "data", "resource.customizations.health.llmbudget.dev_LLMCostBudget")
	require.Equal(t, string(script), fromCM, "argocd-cm-patch.yaml carries health-llmcostbudget.lua unchanged")

	withoutStatus := goldenBudget(t, "capture-first-sync-under-budget")
	delete(withoutStatus, "status")

	specChanged := goldenBudget(t, "capture-first-sync-under-budget")
	specChanged["metadata"].(map[string]any)["generation"] = float64(2)

	readyFalse := goldenBudget(t, "warning-threshold-crossed")
	for _, c := range readyFalse["status"].(map[string]any)["conditions"].([]any) {
		if c := c.(map[string]any); c["type"] == "Ready" {
			c["status"], c["message"] = "False", "generation 1 not evaluated"
		}
	}

	noConditions := goldenBudget(t, "capture-first-sync-under-budget")
	delete(noConditions["status"].(map[string]any), "conditions")

	cases := map[string]struct {
		obj     map[string]any
		status  string
		message string
	}{
		"an under-budget budget evaluated for its generation is Healthy": {
			goldenBudget(t, "capture-first-sync-under-budget"), "Healthy", "UnderBudget: ",
		},
		"a budget past its warning threshold is still Healthy": {
			goldenBudget(t, "warning-threshold-crossed"), "Healthy", "Warning: ",
		},
		"an over-budget budget is Degraded and says it blocks": {
			goldenBudget(t, "capture-over-budget-with-children"), "Degraded", "OverBudget: spend reached its limit",
		},
		"a budget whose spend key is missing is Degraded with the reason": {
			goldenBudget(t, "cost-key-missing"), "Degraded", `Unknown: ConfigMap "llm-spend": key "total-usd" is missing`,
		},
		"an invalid spec is Degraded, not Progressing forever": {
			goldenBudget(t, "invalid-spec-zero-limit"), "Degraded", "Unknown: spec.limitUSD",
		},
		"a budget without status is Progressing": {
			withoutStatus, "Progressing", "Waiting for llmbudget to evaluate the budget",
		},
		"a spec change not evaluated yet is Progressing": {
			specChanged, "Progressing", "Waiting for generation 2 to be evaluated",
		},
		"a status whose Ready condition is not True yet is Progressing": {
			readyFalse, "Progressing", "generation 1 not evaluated",
		},
		"a status without conditions is Progressing": {
			noConditions, "Progressing", "Waiting for the Ready condition",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status, message := runHealth(t, string(script), tc.obj)
			assert.Equal(t, tc.status, status)
			assert.True(t, strings.HasPrefix(message, tc.message), "message %q starts with %q", message, tc.message)
		})
	}

	over := goldenBudget(t, "capture-over-budget-with-children")
	_, message := runHealth(t, string(script), over)
	assert.Contains(t, message, "new jobs.batch are refused", "the blocking budget's message says what is refused")
}
