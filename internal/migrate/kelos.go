package migrate

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	goyaml "sigs.k8s.io/yaml/goyaml.v3"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// The Kelos TaskBudget API, as read from github.com/kelos-dev/kelos at
// commit 77d9ad8e9c8d (api/v1alpha2/taskbudget_types.go, TaskUsage in
// api/v1alpha2/task_types.go, and the admission logic in
// internal/controller/task_budget_admission.go):
//
//	apiVersion: kelos.dev/v1alpha2, kind: TaskBudget (short name tb)
//	spec.taskSelector     metav1.LabelSelector, required; {} selects every Task
//	spec.period.type      Daily (the only type), required
//	spec.period.timezone  IANA name, default UTC
//	spec.maxCostUSD       resource.Quantity >= 0
//	spec.maxInputTokens   int64 >= 0
//	spec.maxOutputTokens  int64 >= 0 (at least one of the three limits is required)
//	status                observedGeneration, currentPeriodStart, currentPeriodEnd,
//	                      used{costUSD, inputTokens, outputTokens}, conditions[]
//
// Kelos sums spec.usage of the TaskRecords that match the selector and
// completed in the current local day, and keeps new matching Tasks Waiting
// while any limit is reached (used >= limit); it fails closed when it cannot
// sum. A zero limit blocks every matching Task.
const (
	kelosAPIVersion = "kelos.dev/v1alpha2"
	kelosKind       = "TaskBudget"
	kelosTasks      = "tasks.kelos.dev"
	kelosKeyPrefix  = "spend-"
	budgetLabel     = "llmbudget.dev/budget"
)

// convertKelos turns a Kelos TaskBudget into an llmbudget budget as far as
// it maps; the comments in the output say what the user must do for the
// rest: label the Tasks, and feed the spend ConfigMap.
func convertKelos(root *mapping, m meta) (*goyaml.Node, []string, error) {
	spec, err := asMapping(root.value["spec"], "spec")
	if err != nil {
		return nil, nil, err
	}
	if err := spec.allow("taskSelector", "period", "maxCostUSD", "maxInputTokens", "maxOutputTokens"); err != nil {
		return nil, nil, err
	}
	selector, err := readSelector(spec)
	if err != nil {
		return nil, nil, err
	}
	tz, err := readKelosPeriod(spec)
	if err != nil {
		return nil, nil, err
	}
	used, err := readKelosStatus(root)
	if err != nil {
		return nil, nil, err
	}

	out := newObject()
	costText, costNode, err := spec.optNumberText("maxCostUSD")
	if err != nil {
		return nil, nil, err
	}
	if costNode != nil {
		limit, err := quantityToDecimal(costText, limitDecimals)
		switch {
		case errors.Is(err, errNegative):
			return nil, nil, errAt(costNode, "spec.maxCostUSD", "%q is negative", costText)
		case err != nil:
			return nil, nil, errAt(costNode, "spec.maxCostUSD", "%v", err)
		case limit == "0":
			return nil, nil, errAt(costNode, "spec.maxCostUSD", "%q blocks every matching Task in Kelos, but an llmbudget limit must be greater than 0: "+
				"set a positive maxCostUSD, or remove it and keep a token limit", costText)
		}
		was := "was spec.maxCostUSD"
		if limit != costText {
			was += " (" + costText + ")"
		}
		out.set("limitUSD", note(money(limit), was))
	}
	out.set("period", newObject().
		set("type", note(str(string(api.Daily)), "Kelos budgets are always daily")).
		set("timeZone", note(str(tz.name), tz.origin)).node)

	tokens := newObject()
	for _, f := range []struct{ from, to string }{{"maxInputTokens", "input"}, {"maxOutputTokens", "output"}} {
		v, ok, err := spec.optInt(f.from)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		if v < 0 {
			return nil, nil, errAt(spec.get(f.from), spec.child(f.from), "%d is negative", v)
		}
		tokens.set(f.to, note(integer(v), "was spec."+f.from))
	}
	if len(tokens.node.Content) > 0 {
		out.set("tokenLimits", tokens.node)
	} else if costNode == nil {
		return nil, nil, errAt(spec.key["maxCostUSD"], "spec", "sets no limit: Kelos requires one of maxCostUSD, maxInputTokens or maxOutputTokens")
	}

	spendCM := m.name + "-spend"
	out.set("costSource", newObject().
		set("configMapName", str(spendCM)).
		set("format", str(string(api.DailyLedger))).
		set("keyPrefix", str(kelosKeyPrefix)).node,
		costSourceComment(m, selector, tz.name, used)...)
	out.set("enforcement", newObject().
		set("action", str(string(api.BlockNewWorkloads))).
		set("resources", list(kelosTasks)).
		set("failurePolicy", str(string(api.FailOpen))).
		set("scope", str(string(api.ScopeLabelled))).node,
		"Kelos keeps new matching Tasks Waiting while the budget is exceeded. The closest llmbudget",
		"gate is the admission policy with scope Labelled: while the budget is OverBudget it",
		"refuses new Tasks labelled "+budgetLabel+"="+m.name+" (install",
		"deploy/components/kelos-task so that the policy sees Tasks); other Tasks and running",
		"ones are left alone.",
		"Kelos also blocks when it cannot sum usage (fail closed). failurePolicy Open keeps the",
		"namespace open until the spend writer has run; switch to Closed then to match Kelos.")

	head := []string{
		"Converted by llmbudget migrate from " + kelosAPIVersion + " " + kelosKind + " " + m.ref() + ".",
		"Two things need you before this budget means what the TaskBudget meant:",
	}
	head = append(head, selectorComment(m, selector)...)
	head = append(head, "2. Feed the spend ConfigMap "+spendCM+": see spec.costSource below.")
	notes := []string{fmt.Sprintf("label the Tasks with %s=%s and write their daily spend to ConfigMap %s (see the comments in the output)", budgetLabel, m.name, spendCM)}
	return budgetDocument(head, m.output(), out), notes, nil
}

// readSelector reads spec.taskSelector and returns it in kubectl's -l
// syntax, validated the way Kelos and the API server validate it.
func readSelector(spec *mapping) (string, error) {
	if spec.get("taskSelector") == nil {
		return "", errAt(spec.key["taskSelector"], "spec.taskSelector", "is required (use {} for every Task in the namespace)")
	}
	sel, err := asMapping(spec.value["taskSelector"], "spec.taskSelector")
	if err != nil {
		return "", err
	}
	if err := sel.allow("matchLabels", "matchExpressions"); err != nil {
		return "", err
	}
	var ls metav1.LabelSelector
	labels, err := sel.stringMap("matchLabels")
	if err != nil {
		return "", err
	}
	for _, k := range labels.keys {
		if ls.MatchLabels == nil {
			ls.MatchLabels = map[string]string{}
		}
		ls.MatchLabels[k] = deref(labels.value[k]).Value
	}
	exprs, err := sel.eachMapping("matchExpressions", "key", "operator", "values")
	if err != nil {
		return "", err
	}
	for _, e := range exprs {
		var r metav1.LabelSelectorRequirement
		if r.Key, err = e.reqString("key"); err != nil {
			return "", err
		}
		op, err := e.reqString("operator")
		if err != nil {
			return "", err
		}
		r.Operator = metav1.LabelSelectorOperator(op)
		if r.Values, err = e.stringList("values"); err != nil {
			return "", err
		}
		ls.MatchExpressions = append(ls.MatchExpressions, r)
	}
	s, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", errAt(spec.get("taskSelector"), "spec.taskSelector", "%v", err)
	}
	return s.String(), nil
}

type kelosZone struct{ name, origin string }

// kelosZonePattern is the CRD rule Kelos puts on spec.period.timezone.
var kelosZonePattern = regexp.MustCompile(`^[A-Za-z0-9/_+-]{1,64}$`)

func readKelosPeriod(spec *mapping) (kelosZone, error) {
	if spec.get("period") == nil {
		return kelosZone{}, errAt(spec.key["period"], "spec.period", "is required")
	}
	p, err := asMapping(spec.value["period"], "spec.period")
	if err != nil {
		return kelosZone{}, err
	}
	if err := p.allow("type", "timezone"); err != nil {
		return kelosZone{}, err
	}
	typ, err := p.reqString("type")
	if err != nil {
		return kelosZone{}, err
	}
	if typ != "Daily" {
		return kelosZone{}, errAt(p.get("type"), "spec.period.type", "%q is not a Kelos period type (only Daily)", typ)
	}
	tz, ok, err := p.optString("timezone")
	if err != nil {
		return kelosZone{}, err
	}
	if !ok || tz == "" {
		return kelosZone{name: api.DefaultTimeZone, origin: "Kelos's default time zone"}, nil
	}
	if !kelosZonePattern.MatchString(tz) {
		return kelosZone{}, errAt(p.get("timezone"), "spec.period.timezone", "%q is not an IANA time zone name (Kelos's pattern ^[A-Za-z0-9/_+-]{1,64}$)", tz)
	}
	return kelosZone{name: tz, origin: "was spec.period.timezone"}, nil
}

// kelosUsage is what Kelos had counted for its current period when the
// object was exported; it helps seed the first ledger key.
type kelosUsage struct {
	start               string
	cost, input, output string
}

// readKelosStatus refuses unknown status fields and keeps status.used.
func readKelosStatus(root *mapping) (*kelosUsage, error) {
	st, err := asMapping(root.value["status"], "status")
	if err != nil {
		return nil, err
	}
	if err := st.allow("observedGeneration", "currentPeriodStart", "currentPeriodEnd", "used", "conditions"); err != nil {
		return nil, err
	}
	if _, err := st.eachMapping("conditions", conditionFields...); err != nil {
		return nil, err
	}
	used, err := asMapping(st.value["used"], "status.used")
	if err != nil {
		return nil, err
	}
	if err := used.allow("costUSD", "inputTokens", "outputTokens"); err != nil {
		return nil, err
	}
	if st.get("used") == nil {
		return nil, nil
	}
	u := &kelosUsage{cost: "0", input: "0", output: "0"}
	if start := st.get("currentPeriodStart"); start != nil && start.Kind == goyaml.ScalarNode {
		if t, err := time.Parse(time.RFC3339, start.Value); err == nil {
			u.start = t.UTC().Format(time.RFC3339)
		}
	}
	if text, n, err := used.optNumberText("costUSD"); err == nil && n != nil {
		if d, err := quantityToDecimal(text, 9); err == nil {
			u.cost = d
		} else {
			u.cost = strconv.Quote(text)
		}
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"inputTokens", &u.input}, {"outputTokens", &u.output}} {
		if v, ok, err := used.optInt(f.name); err == nil && ok {
			*f.to = strconv.FormatInt(v, 10)
		}
	}
	return u, nil
}

// selectorComment tells the user which workloads to label, with a command.
func selectorComment(m meta, selector string) []string {
	ns := ""
	where := "the budget's namespace"
	if m.namespace != "" {
		ns = " -n " + m.namespace
		where = "namespace " + m.namespace
	}
	label := budgetLabel + "=" + m.name
	lines := []string{"1. spec.taskSelector has no field here: llmbudget knows the workloads that draw on a budget"}
	if selector == "" {
		lines = append(lines,
			"   by the label "+label+". The empty selector matched every Task in "+where+":",
			"     kubectl label tasks.kelos.dev"+ns+" --all "+label)
	} else {
		lines = append(lines,
			"   by the label "+label+". Put it on the Tasks the selector matched in "+where+":",
			"     kubectl label tasks.kelos.dev"+ns+" -l '"+selector+"' "+label)
	}
	return append(lines,
		"   and on whatever creates new ones (a TaskSpawner's taskTemplate labels, your Task manifests).",
		"   llmbudget then annotates them with the budget's state (add deploy/components/kelos-task).")
}

// costSourceComment says where the spend data must come from.
func costSourceComment(m meta, selector, tz string, used *kelosUsage) []string {
	sel := ""
	if selector != "" {
		sel = " -l '" + selector + "'"
	}
	ns := ""
	if m.namespace != "" {
		ns = " -n " + m.namespace
	}
	lines := []string{
		"Kelos sums the usage its Tasks report (TaskRecords); llmbudget reads spend from a ConfigMap,",
		"and nothing writes this one yet. Run a writer that keeps one key per local day in " + tz + ",",
		kelosKeyPrefix + "YYYY-MM-DD, holding that day's cost and tokens, for example",
		`  ` + kelosKeyPrefix + `2026-11-29: '{"costUSD": "3.75", "inputTokens": 120000, "outputTokens": 30000}'`,
		"The same numbers Kelos used: spec.usage of the TaskRecords whose spec.completionTime falls",
		"on that day, from kubectl get taskrecords.kelos.dev" + ns + sel + " -o yaml.",
		"See docs/coming-from.md and examples/migrate/spend-writer-cronjob.yaml.",
	}
	if used != nil {
		when := "its current period"
		if used.start != "" {
			when = "the day from " + used.start
		}
		lines = append(lines, fmt.Sprintf("When exported, Kelos had counted %s USD, %s input and %s output tokens for %s.",
			used.cost, used.input, used.output, when))
	}
	return lines
}
