package migrate

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	goyaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// The Kelos TaskBudget API, as read from github.com/kelos-dev/kelos at commit 77d9ad8e9c8d
// (api/v1alpha2/taskbudget_types.go, TaskUsage in task_types.go, the admission logic in
// internal/controller/task_budget_admission.go): spec.taskSelector is required ({} selects every Task),
// spec.period.type is Daily, the only type, in spec.period.timezone (UTC by default), and at least one of
// maxCostUSD (a resource.Quantity), maxInputTokens and maxOutputTokens is set, >= 0. Kelos sums spec.usage of the
// matching TaskRecords completed in the current local day and keeps new matching Tasks Waiting while any limit is
// reached (used >= limit); it fails closed when it cannot sum. A zero limit blocks every matching Task.
const (
	kelosAPIVersion = "kelos.dev/v1alpha2"
	kelosKind       = "TaskBudget"
	kelosTasks      = "tasks.kelos.dev"
	kelosKeyPrefix  = "spend-"
)

// taskBudget is the source object; status.used is quoted for comparison, the rest of the status is dropped.
type taskBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		TaskSelector *metav1.LabelSelector `json:"taskSelector"`
		Period       *struct {
			Type     string `json:"type"`
			Timezone string `json:"timezone"`
		} `json:"period"`
		MaxCostUSD      any    `json:"maxCostUSD"` // its literal text is read from the YAML
		MaxInputTokens  *int64 `json:"maxInputTokens"`
		MaxOutputTokens *int64 `json:"maxOutputTokens"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64  `json:"observedGeneration"`
		CurrentPeriodStart string `json:"currentPeriodStart"` // RFC 3339, parsed here to name the field if it is not
		CurrentPeriodEnd   string `json:"currentPeriodEnd"`
		Used               *struct {
			CostUSD      any   `json:"costUSD"`
			InputTokens  int64 `json:"inputTokens"`
			OutputTokens int64 `json:"outputTokens"`
		} `json:"used"`
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// convertKelos converts a TaskBudget into a budget over the same TaskRecords, which needs no spend writer; the
// output's comments say what the user must do for the rest: label the Tasks for the gate.
func convertKelos(in *input) (*goyaml.Node, []string, error) {
	var b taskBudget
	notes, err := in.decodeObject(&b, &b.ObjectMeta)
	if err != nil {
		return nil, nil, err
	}
	if b.Spec.TaskSelector == nil {
		return nil, nil, in.errAt("spec.taskSelector", "is required (use {} for every Task in the namespace)")
	}
	selector, err := metav1.LabelSelectorAsSelector(b.Spec.TaskSelector)
	if err != nil {
		return nil, nil, in.errAt("spec.taskSelector", "%v", err)
	}
	// kubectl's arguments for the budget's Tasks, and how the comments word them
	ns, where := "", "the budget's namespace"
	if b.Namespace != "" {
		ns, where = " -n "+b.Namespace, "namespace "+b.Namespace
	}
	sel, matched, target := "", "The empty selector matched every Task in ", " --all"
	if s := selector.String(); s != "" {
		sel = " -l '" + s + "'"
		matched, target = "Put it on the Tasks the selector matched in ", sel
	}
	label := api.LabelBudget + "=" + b.Name
	tz, tzOrigin, err := kelosZone(in, &b)
	if err != nil {
		return nil, nil, err
	}
	used, err := kelosUsed(in, &b)
	if err != nil {
		return nil, nil, err
	}

	out := newObject()
	costText, hasCost, err := in.literal("spec.maxCostUSD", b.Spec.MaxCostUSD)
	if err != nil {
		return nil, nil, err
	}
	if hasCost {
		limit, err := kelosLimit(costText)
		if err != nil {
			return nil, nil, in.errAt("spec.maxCostUSD", "%v", err)
		}
		was := "was spec.maxCostUSD"
		if limit != costText {
			was += " (" + costText + ")"
		}
		out.set("limitUSD", note(usd(limit), was))
	}
	out.set("period", newObject().
		set("type", note(str(string(api.Daily)), "Kelos budgets are always daily")).
		set("timeZone", note(str(tz), tzOrigin)).node)

	tokens := newObject()
	for _, f := range []struct {
		from, to string
		v        *int64
	}{{"maxInputTokens", "input", b.Spec.MaxInputTokens}, {"maxOutputTokens", "output", b.Spec.MaxOutputTokens}} {
		switch {
		case f.v == nil:
			continue
		case *f.v < 0:
			return nil, nil, in.errAt("spec."+f.from, "%d is negative", *f.v)
		}
		tokens.set(f.to, note(integer(*f.v), "was spec."+f.from))
	}
	if len(tokens.node.Content) > 0 {
		out.set("tokenLimits", tokens.node)
	} else if !hasCost {
		return nil, nil, in.errAt("spec",
			"sets no limit: Kelos requires one of maxCostUSD, maxInputTokens or maxOutputTokens")
	}

	costComment := []string{
		"Kelos sums the usage its Tasks report, in the TaskRecords it writes when a Task finishes, with",
		"the Task's labels: so does this budget, over the records the TaskBudget's taskSelector matches:",
		"  kubectl get taskrecords.kelos.dev" + ns + sel,
		"Nothing needs to write spend; install deploy/components/kelos-task so that Metacontroller may",
		"watch TaskRecords.",
	}
	if used != "" {
		costComment = append(costComment, used)
	}
	out.set("costSource", newObject().
		set("format", str(string(api.TaskRecords))).
		set("selector", selectorNode(b.Spec.TaskSelector)).node,
		costComment...)
	out.set("enforcement", newObject().
		set("action", str(string(api.BlockNewWorkloads))).
		set("resources", &goyaml.Node{Kind: goyaml.SequenceNode, Content: []*goyaml.Node{str(kelosTasks)}}).
		set("failurePolicy", str(string(api.FailClosed))).
		set("scope", str(string(api.ScopeLabelled))).node,
		"Kelos keeps new matching Tasks Waiting while the budget is exceeded. The closest llmbudget",
		"gate is the admission policy with scope Labelled: while the budget is OverBudget it",
		"refuses new Tasks labelled "+label+" (install",
		"deploy/components/kelos-task so that the policy sees Tasks); other Tasks and running",
		"ones are left alone.",
		"Kelos also blocks when it cannot sum usage (fail closed), and so does failurePolicy Closed:",
		"a TaskRecord whose usage does not read makes the budget Unknown, which blocks.")

	notes = append(notes, fmt.Sprintf("label the Tasks with %s (see the comments in the output)", label))
	head := []string{
		"One thing needs you before this budget blocks what the TaskBudget blocked: spec.taskSelector",
		"selects the TaskRecords to sum (spec.costSource.selector), but the gate knows the Tasks that",
		"draw on a budget by the label " + label + ". " + matched + where + ":",
		"  kubectl label " + kelosTasks + ns + target + " " + label,
		"and on whatever creates new ones (a TaskSpawner's taskTemplate labels, your Task manifests).",
		"llmbudget then annotates them with the budget's state (add deploy/components/kelos-task).",
	}
	return budgetDocument(kelosAPIVersion+" "+kelosKind, &b.ObjectMeta, out, head...), notes, nil
}

// kelosZonePattern is the CRD rule Kelos puts on spec.period.timezone.
var kelosZonePattern = regexp.MustCompile(`^[A-Za-z0-9/_+-]{1,64}$`)

func kelosZone(in *input, b *taskBudget) (name, origin string, err error) {
	p := b.Spec.Period
	switch {
	case p == nil:
		return "", "", in.errAt("spec.period", "is required")
	case p.Type != "Daily":
		return "", "", in.errAt("spec.period.type", "%q is not a Kelos period type (only Daily)", p.Type)
	case p.Timezone == "":
		return api.DefaultTimeZone, "Kelos's default time zone", nil
	case !kelosZonePattern.MatchString(p.Timezone):
		return "", "", in.errAt("spec.period.timezone",
			"%q is not an IANA time zone name (Kelos's pattern ^[A-Za-z0-9/_+-]{1,64}$)", p.Timezone)
	}
	return p.Timezone, "was spec.period.timezone", nil
}

// kelosUsed words what Kelos had counted for its current period when the object was exported, to compare with the
// converted budget's first status; "" without status.used.
func kelosUsed(in *input, b *taskBudget) (string, error) {
	used := b.Status.Used
	if used == nil {
		return "", nil
	}
	when := "its current period"
	if start := b.Status.CurrentPeriodStart; start != "" {
		t, err := time.Parse(time.RFC3339, start)
		if err != nil {
			return "", in.errAt("status.currentPeriodStart", "%q is not an RFC 3339 time", start)
		}
		when = "the day from " + t.UTC().Format(time.RFC3339)
	}
	text, ok, err := in.literal("status.used.costUSD", used.CostUSD)
	cost := "0"
	switch {
	case err != nil:
		return "", err
	case ok:
		if cost, _, err = quantity(text); err != nil {
			cost = strconv.Quote(text)
		}
	}
	return fmt.Sprintf("When exported, Kelos had counted %s USD, %d input and %d output tokens for %s.",
		cost, used.InputTokens, used.OutputTokens, when), nil
}

// quantity reads a Kubernetes quantity ("12500m", "50", "1.5e2", "2Ki") as the exact plain decimal it stands for,
// without trailing zeros ("12.5"), as spend reads a TaskRecord's cost.
func quantity(s string) (string, money.Amount, error) {
	a, err := source.ParseQuantity(s)
	if err != nil {
		return "", money.Amount{}, err
	}
	return trimZeros(a.String()), a, nil
}

// kelosLimit reads Kelos's maxCostUSD as a limit; a zero, blocking everything in Kelos, has no llmbudget match.
func kelosLimit(text string) (string, error) {
	limit, a, err := quantity(text)
	switch {
	case err != nil:
		return "", err
	case a.Sign() == 0:
		return "", fmt.Errorf("%q blocks every matching Task in Kelos, but an llmbudget limit must be greater than 0: "+
			"set a positive maxCostUSD, or remove it and keep a token limit", text)
	}
	if err := exactLimit(limit); err != nil {
		if limit != text {
			err = fmt.Errorf("%q reads as %s: %w", text, limit, err)
		}
		return "", err
	}
	return limit, nil
}

// selectorNode renders a label selector as the API writes one: matchLabels in key order, then matchExpressions.
func selectorNode(sel *metav1.LabelSelector) *goyaml.Node {
	out := newObject()
	if len(sel.MatchLabels) > 0 {
		out.set("matchLabels", pairs(sel.MatchLabels))
	}
	if len(sel.MatchExpressions) > 0 {
		exprs := &goyaml.Node{Kind: goyaml.SequenceNode}
		for _, e := range sel.MatchExpressions {
			expr := newObject().set("key", str(e.Key)).set("operator", str(string(e.Operator)))
			if len(e.Values) > 0 {
				values := &goyaml.Node{Kind: goyaml.SequenceNode}
				for _, v := range e.Values {
					values.Content = append(values.Content, str(v))
				}
				expr.set("values", values)
			}
			exprs.Content = append(exprs.Content, expr.node)
		}
		out.set("matchExpressions", exprs)
	}
	return out.node
}
