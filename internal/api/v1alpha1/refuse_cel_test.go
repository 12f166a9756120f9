package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
)

// The refusal rule is written twice: as CEL in the four ValidatingAdmissionPolicies of deploy/base/admission (the
// chart's copies are kept equal to them by test/k8s/deploytest), and as Go in api.EnforcementStatus.Refuses and
// WouldRefuse. This test evaluates each policy's own expressions, as the API server would, against the function,
// for every status, caller and kind below; a disagreement names all four.
//
// The Go rule reads neither gates nor resources (see Refuses), so the two agree where the budget's gates include
// Policy and its resources list the request's kind, and the policy refuses nothing elsewhere. A status that cannot
// be decoded is asked nothing in Go; the policies refuse nothing for it. A team budget of another namespace is
// never the policy's parameter: its binding hands it only the request's namespace's budgets.

// policyFiles are the policies, by the kind of their parameter and whether they warn (Warn) or refuse (Deny).
var policyFiles = []struct {
	file string
	kind string
	mode api.Mode
}{
	{"validatingadmissionpolicy.yaml", api.Kind, api.ModeDeny},
	{"warn-validatingadmissionpolicy.yaml", api.Kind, api.ModeWarn},
	{"cluster-validatingadmissionpolicy.yaml", api.ClusterKind, api.ModeDeny},
	{"cluster-warn-validatingadmissionpolicy.yaml", api.ClusterKind, api.ModeWarn},
}

// pods is a status's gates and resources when the Policy gate refuses new Pods.
const pods = `"gates":["Policy"],"resources":["pods"]`

// statuses are the budgets' status.enforcement as the API server would hold them (JSON; "" for no status at all,
// "null" for a status without enforcement).
var statuses = map[string]string{
	"a Namespace-scoped block": `{"blocking":true,"scope":"Namespace","gates":["Policy"],` +
		`"resources":["pods","jobs.batch"],"message":"LLMCostBudget team-ml/chatbot is OverBudget"}`,
	"a Labelled block": `{"blocking":true,"scope":"Labelled","gates":["Policy"],` +
		`"resources":["pods","jobs.batch"]}`,
	"a Warn-mode block":                 `{"blocking":true,"scope":"Namespace","mode":"Warn",` + pods + `}`,
	"a Warn-mode Labelled one":          `{"blocking":true,"scope":"Labelled","mode":"Warn",` + pods + `}`,
	"an explicit Deny mode":             `{"blocking":true,"scope":"Namespace","mode":"Deny",` + pods + `}`,
	"a mode this version does not know": `{"blocking":true,"scope":"Namespace","mode":"Later",` + pods + `}`,
	"a block through both gates": `{"blocking":true,"scope":"Namespace","gates":["Policy","Quota"],` +
		`"resources":["pods"]}`,
	"a block through a ResourceQuota only": `{"blocking":true,"scope":"Namespace","gates":["Quota"],` +
		`"resources":["pods"],"quotaName":"llmbudget-chatbot"}`,
	"a block of another kind only": `{"blocking":true,"scope":"Namespace","gates":["Policy"],` +
		`"resources":["jobs.batch"]}`,
	"a block with no gates listed":   `{"blocking":true,"scope":"Namespace","resources":["pods"]}`,
	"a block with no scope":          `{"blocking":true,` + pods + `}`,
	"a block of a scope not known":   `{"blocking":true,"scope":"Team",` + pods + `}`,
	"no block":                       `{"blocking":false,"scope":"Namespace","reason":"the budget is UnderBudget"}`,
	"no block yet in Warn mode":      `{"blocking":false,"scope":"Namespace","mode":"Warn",` + pods + `}`,
	"an enforcement with no fields":  `{}`,
	"a cluster block of two":         `{"blocking":true,` + pods + `,"namespaces":["team-ml","b"]}`,
	"a cluster block in Warn mode":   `{"blocking":true,"mode":"Warn",` + pods + `,"namespaces":["team-ml"]}`,
	"a cluster block of none":        `{"blocking":true,` + pods + `,"namespaces":[]}`,
	"a cluster block of another":     `{"blocking":true,` + pods + `,"namespaces":["other"]}`,
	"a cluster block, said Labelled": `{"blocking":true,"scope":"Labelled",` + pods + `,"namespaces":["team-ml"]}`,
	"no status":                      "",
	"a status without enforcement":   "null",
	"an unreadable blocking":         `{"blocking":"yes","scope":"Namespace",` + pods + `}`,
	"an unreadable namespaces":       `{"blocking":true,` + pods + `,"namespaces":"team-ml"}`,
	"an unreadable mode":             `{"blocking":true,"scope":"Namespace","mode":7,` + pods + `}`,
}

// policyReads is what the policies make of each status above that Go cannot read, as a status Go can ("" for
// none): a blocking that is not true refuses nothing, nor do namespaces that are not a list (the expression fails,
// and failurePolicy Ignore admits), while a mode that is not a string is not 'Warn', so it refuses as Deny does.
// None of them passes the CRD's schema: only a status written under another version's can be one. The hooks and
// authz refuse nothing for any of them; the gate decorator labels each, so that the policies decide.
var policyReads = map[string]string{
	"an unreadable blocking":   "",
	"an unreadable namespaces": "",
	"an unreadable mode":       `{"blocking":true,"scope":"Namespace",` + pods + `}`,
}

// callers are the requests' workloads: a namespace and the label llmbudget.dev/budget ("" for none).
var callers = []api.Caller{
	{Namespace: "team-ml"}, {Namespace: "team-ml", Budget: "chatbot"}, {Namespace: "team-ml", Budget: "research"},
	{Namespace: "team-ml", Budget: "other"}, {Namespace: "other"}, {Namespace: "other", Budget: "chatbot"},
}

// kinds are the requests' kinds, as request.resource gives them: group and resource.
var kinds = [][2]string{{"", "pods"}, {"batch", "jobs"}, {"apps", "deployments"}}

// budgets are the parameters: each kind of budget, named as a caller's label may name it.
var budgets = []api.BudgetRef{
	{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"},
	{Kind: api.ClusterKind, Name: "research"},
}

func TestEachAdmissionPolicyRefusesWhereTheGoRuleDoes(t *testing.T) {
	for name, status := range statuses {
		_, readable := readEnforcement(t, status)
		_, listed := policyReads[name]
		require.Equal(t, !listed, readable, "%s: Go reads it unless policyReads says what the policies make of it", name)
	}
	for _, d := range disagreements(t, loadPolicies(t, nil)) {
		t.Error(d)
	}
}

// The comparison is only worth its name if it fails: a policy copy whose mode test is flipped, and one that forgets
// the Labelled scope's label, are each caught.
func TestAPolicyThatDisagreesWithTheGoRuleIsCaught(t *testing.T) {
	plants := map[string][2]string{
		"a flipped mode test": {"mode.orValue('Deny') != 'Warn'", "mode.orValue('Deny') == 'Warn'"},
		"a Labelled scope that reads no label": {
			"object.?metadata.?labels[?'llmbudget.dev/budget'].orValue('') == params.metadata.name", "true"},
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			policies := loadPolicies(t, func(expr string) string { return strings.Replace(expr, plant[0], plant[1], 1) })
			assert.NotEmpty(t, disagreements(t, policies), "the planted disagreement goes unnoticed")
		})
	}
}

// Every caller a policy refuses or warns is of a budget MayRefuse says so of: the gate decorator labels it, and so
// the policies' bindings hand it to them.
func TestTheGateLabelCoversEveryRefusalOfThePolicies(t *testing.T) {
	policies := loadPolicies(t, nil)
	for _, p := range policies {
		for name, status := range statuses {
			for _, of := range budgets {
				if of.Kind != p.kind {
					continue
				}
				enf, readable := readEnforcement(t, status)
				for _, c := range callers {
					for _, k := range kinds {
						if p.refuses(t, of, status, c, k) {
							assert.True(t, !readable || enf.MayRefuse(of), "%s, %s: %s refuses %+v, unlabelled",
								p.file, name, of.Name, c)
						}
					}
				}
			}
		}
	}
}

// disagreements evaluates every policy for every status, budget, caller and kind, and names each case where the
// policy and the Go rule differ.
func disagreements(t *testing.T, policies []policy) []string {
	var out []string
	for _, p := range policies {
		for name, status := range statuses {
			enf, readable := readEnforcement(t, status)
			if !readable {
				enf, _ = readEnforcement(t, policyReads[name])
			}
			for _, of := range budgets {
				if of.Kind != p.kind {
					continue
				}
				for _, c := range callers {
					for _, k := range kinds {
						resource := k[1]
						if k[0] != "" {
							resource += "." + k[0]
						}
						want := false
						if enf != nil && slices.Contains(enf.Gates, api.GatePolicy) && slices.Contains(enf.Resources, resource) {
							if p.mode == api.ModeWarn {
								want = enf.WouldRefuse(of, c)
							} else {
								want = enf.Refuses(of, c)
							}
						}
						if got := p.refuses(t, of, status, c, k); got != want {
							out = append(out, fmt.Sprintf("%s, %s, %s %s, caller %+v, new %s: the policy says %t, Go %t",
								p.file, name, of.Kind, of.Name, c, resource, got, want))
						}
					}
				}
			}
		}
	}
	return out
}

// readEnforcement decodes a status as the hooks do (package decode), ok false when it cannot be; nil when there is
// no status or no status.enforcement.
func readEnforcement(t *testing.T, status string) (*api.EnforcementStatus, bool) {
	t.Helper()
	if status == "" || status == "null" {
		return nil, true
	}
	var enf api.EnforcementStatus
	if err := decode.Lenient([]byte(status), &enf, "status.enforcement"); err != nil {
		return nil, false
	}
	return &enf, true
}

// policy is a ValidatingAdmissionPolicy compiled as the API server compiles it.
type policy struct {
	file      string
	kind      string
	mode      api.Mode
	variables []compiled
	matches   []cel.Program
	checks    []cel.Program
}

type compiled struct {
	name string
	prg  cel.Program
}

// loadPolicies reads and compiles the four policies, each expression passed through edit first when it is not nil.
func loadPolicies(t *testing.T, edit func(string) string) []policy {
	t.Helper()
	env, err := celEnv()
	require.NoError(t, err)
	compile := func(file, expr string) cel.Program {
		if edit != nil {
			expr = edit(expr)
		}
		ast, iss := env.Compile(expr)
		require.NoError(t, iss.Err(), "%s: %s", file, expr)
		prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
		require.NoError(t, err, "%s: %s", file, expr)
		return prg
	}
	var out []policy
	for _, f := range policyFiles {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "base", "admission", f.file))
		require.NoError(t, err)
		var vap admissionv1.ValidatingAdmissionPolicy
		require.NoError(t, yaml.UnmarshalStrict(data, &vap), f.file)
		require.Equal(t, f.kind, vap.Spec.ParamKind.Kind, "%s: its paramKind", f.file)
		// A policy that fails admits (failurePolicy Ignore): p.refuses reads an error as an admission.
		require.Equal(t, admissionv1.Ignore, *vap.Spec.FailurePolicy, "%s: its failurePolicy", f.file)
		p := policy{file: f.file, kind: f.kind, mode: f.mode}
		for _, v := range vap.Spec.Variables {
			p.variables = append(p.variables, compiled{name: v.Name, prg: compile(f.file, v.Expression)})
		}
		for _, m := range vap.Spec.MatchConditions {
			p.matches = append(p.matches, compile(f.file, m.Expression))
		}
		require.NotEmpty(t, vap.Spec.Validations, f.file)
		for _, v := range vap.Spec.Validations {
			p.checks = append(p.checks, compile(f.file, v.Expression))
		}
		out = append(out, p)
	}
	return out
}

// celEnv is the API server's CEL environment for admission policies (k8s.io/apiserver/pkg/cel/environment) as far
// as these policies reach: its language options and libraries, with the policy's variables declared dynamically
// (the API server types object, params and request from their schemas, which read the same here).
func celEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		cel.ASTValidators(cel.ValidateHomogeneousAggregateLiterals()),
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("params", cel.DynType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("request", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
	)
}

// refuses is whether the policy refuses (or, for a Warn policy, warns) a new workload of kind k by caller c, with the
// budget of as its parameter. A team budget of another namespace is not: its binding never hands it over.
func (p policy) refuses(t *testing.T, of api.BudgetRef, status string, c api.Caller, k [2]string) bool {
	t.Helper()
	if of.Kind == api.Kind && of.Namespace != c.Namespace {
		return false
	}
	meta := map[string]any{"name": of.Name}
	if of.Namespace != "" {
		meta["namespace"] = of.Namespace
	}
	params := map[string]any{"apiVersion": api.APIVersion, "kind": of.Kind, "metadata": meta}
	switch status {
	case "":
	case "null":
		params["status"] = map[string]any{"state": "UnderBudget"}
	default:
		var enf any
		require.NoError(t, json.Unmarshal([]byte(status), &enf))
		params["status"] = map[string]any{"enforcement": enf}
	}
	labels := map[string]any{}
	if c.Budget != "" {
		labels[api.LabelBudget] = c.Budget
	}
	vars := map[string]any{}
	in := map[string]any{
		"object":          map[string]any{"metadata": map[string]any{"namespace": c.Namespace, "labels": labels}},
		"oldObject":       nil,
		"params":          params,
		"namespaceObject": map[string]any{"metadata": map[string]any{"name": c.Namespace}},
		"request": map[string]any{"namespace": c.Namespace, "operation": "CREATE",
			"resource": map[string]any{"group": k[0], "version": "v1", "resource": k[1]}},
		"variables": vars,
	}
	for _, m := range p.matches {
		out, _, err := m.Eval(in)
		if err != nil || out != types.True {
			return false // not matched, or failed: admitted either way (failurePolicy Ignore)
		}
	}
	for _, v := range p.variables {
		out, _, err := v.prg.Eval(in)
		if err != nil {
			return false
		}
		vars[v.name] = out
	}
	for _, check := range p.checks {
		if out, _, err := check.Eval(in); err == nil && out == types.False {
			return true
		}
	}
	return false
}
