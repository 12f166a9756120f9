// Package v1alpha1 holds the LLMCostBudget API (llmbudget.dev/v1alpha1): the Go types whose JSON tags are the
// contract with the CRD, their defaults, and the validation the hook repeats because stored objects can predate
// a CRD rule. A Spec which passes Validate can be evaluated: its money parses, its period is computable and its
// thresholds are unique.
//
// Each field's rules are written twice beside it, in the two languages that check them: the kubebuilder markers
// are the CRD's schema (package crd holds the roots, `make generate` writes deploy/crd), and the `validate` tags
// are the same rules for go-playground/validator, reported as a field.ErrorList with the CRD's messages. Rules
// that relate fields are Go code beside the comment that names their CEL twin. A field is optional unless marked
// required.
//
// +kubebuilder:validation:Optional
package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmbudget/llmbudget/internal/period"
)

// Identity of the API, and the labels and annotations it defines.
const (
	Group      = "llmbudget.dev"
	Version    = "v1alpha1"
	Kind       = "LLMCostBudget"
	Resource   = "llmcostbudgets"
	APIVersion = Group + "/" + Version

	// ClusterKind is the cluster-scoped budget over the namespaces its namespaceSelector matches; it shares
	// Spec and Status with Kind.
	ClusterKind = "ClusterLLMCostBudget"

	LabelBudget        = Group + "/budget"         // puts a workload (and a budget's children) under the budget it names
	LabelClusterBudget = Group + "/cluster-budget" // takes LabelBudget's place on a cluster budget's children
	LabelSpendSource   = Group + "/spend-source"   // marks a ConfigMap as a spend source, written by the writers only
	// AnnotationPeriodStart is where a cluster budget's Total source says when (RFC 3339) its key's period starts.
	AnnotationPeriodStart = Group + "/period-start"
	// AnnotationSpendAsOf is where a spend ConfigMap says (RFC 3339) the instant its figures are for: the time its
	// writer evaluated them. Any pipeline may write it; spec.costSource.maxAge is checked against it.
	AnnotationSpendAsOf = Group + "/spend-as-of"
	// AnnotationBurnRate is where a spend writer says, with its figures, how fast the spend grew just before them:
	// a BurnRate in JSON. A budget whose enforcement.blockOn is Projected blocks where that rate takes the spend
	// to a USD limit.
	AnnotationBurnRate = Group + "/burn-rate"
)

// LLMCostBudget caps what a team may spend on LLM calls in a calendar period.
type LLMCostBudget struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       Spec       `json:"spec"`
	Status     *Status    `json:"status,omitempty"`
}

// ObjectMeta is the part of Kubernetes object metadata the hooks read, deliberately smaller than
// metav1.ObjectMeta: decoding managedFields on every hook call would cost more than the evaluation itself.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	CreationTimestamp metav1.Time       `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *metav1.Time      `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
}

// Spec is what a platform team declares. Both kinds share it: NamespaceSelector and CostSource.SpendSource belong
// to ClusterKind only, CostSource.ConfigMapName and CostSource.Prometheus to Kind only, and each kind's root type
// (package crd) carries the CEL rules that say so, the twins of Validate and ValidateCluster.
//
// What the budget allows and where its spend is read from (for a ClusterLLMCostBudget, which namespaces it covers
// too). Set limitUSD, or tokenLimits, or both.
// +kubebuilder:validation:XValidation:rule=`has(self.limitUSD) || (has(self.tokenLimits) && (has(self.tokenLimits.input) || has(self.tokenLimits.output) || has(self.tokenLimits.total)))`,fieldPath=.limitUSD,reason=FieldValueRequired,message="spec.limitUSD is required unless spec.tokenLimits sets input, output or total"
type Spec struct {
	// For a ClusterLLMCostBudget only, where it is required: the namespaces the budget covers, by their labels (a
	// standard label selector: matchLabels and matchExpressions, ANDed). An empty selector {} covers every
	// namespace. A namespace that stops matching is released at once: nothing of this budget is enforced there any
	// more.
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
	// Spending limit per period, in US dollars, written as a plain decimal string with at most 6 decimals, for
	// example "500" or "1250.75". Must be greater than 0 and below a billion (at most 9 digits before the point).
	// Quote it in YAML so it stays a string. Required unless tokenLimits sets a limit.
	// +kubebuilder:validation:MaxLength=24
	// +kubebuilder:validation:XValidation:rule=`self.matches('^(0|[1-9][0-9]{0,8})([.][0-9]{1,6})?$') && self.matches('[1-9]')`,messageExpression=`'must be a decimal greater than 0 with at most 6 decimals (and at most 9 digits before the point), got "' + self + '"'`
	LimitUSD *string `json:"limitUSD,omitempty" validate:"omitnil,decimal"`
	// The calendar window that spend is counted over. Spend starts again from zero at the start of every period.
	// Defaults to monthly periods starting on the 1st, midnight UTC.
	// +kubebuilder:default={}
	Period Period `json:"period"`
	// Percent of the limit at which the budget enters the Warning state, 1 to 100. Also the default first entry of
	// thresholds. Default 80.
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	WarnThresholdPercent *int32 `json:"warnThresholdPercent,omitempty" validate:"required,min=1,max=100"`
	// Points at which a Warning Event announces the budget's progress, once per period each. At most 10, no
	// (percent, basis) pair twice. When omitted: warnThresholdPercent and 100, both on Actual spend. Example:
	// [{percent: 50}, {percent: 90}, {percent: 100, basis: Forecasted}].
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:XValidation:rule=`self.all(t, self.filter(u, u.percent == t.percent && (has(u.basis) ? u.basis : 'Actual') == (has(t.basis) ? t.basis : 'Actual')).size() == 1)`,message="spec.thresholds must not repeat a (percent, basis) pair"
	Thresholds []Threshold `json:"thresholds,omitempty" validate:"max=10,dive"`
	// Limits on tokens used per period, read from the spend data. Reaching any of them puts the budget OverBudget,
	// like reaching limitUSD. Each is optional; set at least one when limitUSD is not set.
	TokenLimits *TokenLimits `json:"tokenLimits,omitempty"`
	// Limits for single models within the budget's period, like LiteLLM's model_max_budget. Each is evaluated like
	// the budget against the model's share of the spend data (the "models" breakdown of a JSON value: {"costUSD":
	// "9", "models": {"gpt-4o": {"costUSD": "7"}}}); a model absent from the data has spent nothing. The budget is
	// OverBudget (and enforces) when any limited model is.
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=model
	ModelLimits []ModelLimit `json:"modelLimits,omitempty" validate:"max=20,dive"`
	// Where the observed spend comes from. For an LLMCostBudget: a ConfigMap in the budget's namespace that a cost
	// pipeline keeps up to date. For a ClusterLLMCostBudget: in every selected namespace, the ConfigMaps labelled
	// llmbudget.dev/spend-source=<spendSource> (all of them, summed); with format Total each must declare the period
	// its key covers in the annotation llmbudget.dev/period-start (RFC 3339, the period's start), and one that
	// declares another period makes the budget Unknown. Values are plain USD decimals ("12.34") or JSON objects
	// {"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340}.
	// +required
	CostSource CostSource `json:"costSource"`
	// What happens in the namespace while the budget is exhausted (in every selected namespace, for a
	// ClusterLLMCostBudget). By default nothing: the budget only reports and announces.
	// +kubebuilder:default={}
	Enforcement Enforcement `json:"enforcement"`
	// When true the budget is still evaluated and its status kept up to date, but it announces nothing and
	// enforces nothing (any quota it created is removed). Default false.
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`
}

// Period selects the calendar window a budget covers.
// +kubebuilder:validation:XValidation:rule=`!has(self.type) || self.type != 'Weekly' || !has(self.startDay) || self.startDay <= 7`,fieldPath=.startDay,message="period.startDay must be between 1 (Monday) and 7 (Sunday) when period.type is Weekly"
type Period struct {
	// Length of a period: Daily (from local midnight), Weekly (from midnight of the weekday given by startDay) or
	// Monthly (from midnight of the day of month given by startDay). Default Monthly.
	// +kubebuilder:default=Monthly
	// +kubebuilder:validation:Enum=Daily;Weekly;Monthly
	Type period.Kind `json:"type,omitempty" validate:"oneof=Daily Weekly Monthly"`
	// IANA time zone whose local midnight starts a period, for example "UTC", "Europe/Berlin" or
	// "America/New_York". Periods follow the zone's daylight saving changes. A name that is not in the time zone
	// database puts the budget in the Unknown state. Default "UTC".
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[A-Za-z][-+_A-Za-z0-9]*(/[-+_A-Za-z0-9]+)*$')`,messageExpression=`'must be an IANA time zone, for example Europe/Berlin, got "' + self + '"'`
	TimeZone string `json:"timeZone,omitempty" validate:"iana_zone"`
	// First day of each period. Monthly: day of the month, 1 to 28 (so every month has it). Weekly: day of the
	// week, 1 = Monday to 7 = Sunday. Ignored for Daily. Default 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=28
	StartDay *int32 `json:"startDay,omitempty" validate:"omitnil,min=1,max=28"`
}

// Threshold is a percentage of the limit whose crossing is announced once a period.
type Threshold struct {
	// Percent of the limit that crosses this threshold, 1 to 1000 (above 100 announces a large overspend).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Percent int32 `json:"percent" validate:"min=1,max=1000"`
	// What is compared with the threshold: Actual (spend so far) or Forecasted (spend projected to the end of the
	// period, available once 10% of the period has passed). Default Actual.
	// +kubebuilder:default=Actual
	// +kubebuilder:validation:Enum=Actual;Forecasted
	Basis Basis `json:"basis,omitempty" validate:"oneof=Actual Forecasted"`
}

// TokenLimits caps token usage in a period; each limit is optional. Reaching any of them puts the budget (or the
// model) OverBudget, like reaching a limit in US dollars.
type TokenLimits struct {
	// Maximum input (prompt) tokens per period, for example 50000000.
	// +kubebuilder:validation:Minimum=0
	Input *int64 `json:"input,omitempty" validate:"omitnil,min=0"`
	// Maximum output (completion) tokens per period, for example 10000000.
	// +kubebuilder:validation:Minimum=0
	Output *int64 `json:"output,omitempty" validate:"omitnil,min=0"`
	// Maximum input plus output tokens per period.
	// +kubebuilder:validation:Minimum=0
	Total *int64 `json:"total,omitempty" validate:"omitnil,min=0"`
}

// ModelLimit caps one model's spend or tokens within the budget's period.
// +kubebuilder:validation:XValidation:rule=`has(self.limitUSD) || (has(self.tokenLimits) && (has(self.tokenLimits.input) || has(self.tokenLimits.output) || has(self.tokenLimits.total)))`,message="each modelLimits entry needs limitUSD or a tokenLimits field"
type ModelLimit struct {
	// Model name exactly as the spend data names it, for example "gpt-4o" or "anthropic/claude-3-5-sonnet":
	// printable characters without spaces, quotes or backslashes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self.matches(r'^[!#-\[\]-~]+$')`,messageExpression=`'"' + self + '" must be a model name: 1-253 printable characters without spaces or quotes'`
	Model string `json:"model" validate:"required,model_name"`
	// The model's spending limit per period in US dollars, a plain decimal with at most 6 decimals and at most 9
	// digits before the point.
	// +kubebuilder:validation:MaxLength=24
	// +kubebuilder:validation:XValidation:rule=`self.matches('^(0|[1-9][0-9]{0,8})([.][0-9]{1,6})?$') && self.matches('[1-9]')`,messageExpression=`'must be a decimal greater than 0 with at most 6 decimals (and at most 9 digits before the point), got "' + self + '"'`
	LimitUSD *string `json:"limitUSD,omitempty" validate:"omitnil,decimal"`
	// The model's token limits per period.
	TokenLimits *TokenLimits `json:"tokenLimits,omitempty"`
}

// CostSource says where spend comes from: the ConfigMap a cost pipeline writes spend into, or, with format
// TaskRecords, the Kelos TaskRecords that Selector matches. The rules that name configMapName and spendSource by
// kind are on the kinds' root types; the rules here hold for both.
// +kubebuilder:validation:XValidation:rule=`!has(self.configMapName) || !has(self.format) || self.format != 'TaskRecords'`,fieldPath=.configMapName,reason=FieldValueForbidden,message="costSource.configMapName is not used when costSource.format is TaskRecords: the spend is the usage of the TaskRecords costSource.selector matches"
// +kubebuilder:validation:XValidation:rule=`!has(self.spendSource) || !has(self.format) || self.format != 'TaskRecords'`,fieldPath=.spendSource,reason=FieldValueForbidden,message="costSource.spendSource is not used when costSource.format is TaskRecords: the spend is the usage of the TaskRecords costSource.selector matches"
// +kubebuilder:validation:XValidation:rule=`!has(self.key) || !has(self.format) || self.format != 'TaskRecords'`,fieldPath=.key,reason=FieldValueForbidden,message="costSource.key is not used when costSource.format is TaskRecords: the spend is the usage of the TaskRecords costSource.selector matches"
// +kubebuilder:validation:XValidation:rule=`has(self.selector) || !has(self.format) || self.format != 'TaskRecords'`,fieldPath=.selector,reason=FieldValueRequired,message="costSource.selector is required when costSource.format is TaskRecords"
// +kubebuilder:validation:XValidation:rule=`!has(self.selector) || (has(self.format) && self.format == 'TaskRecords')`,fieldPath=.selector,reason=FieldValueForbidden,message="costSource.selector is only allowed when costSource.format is TaskRecords"
// An absent format means Total, its default.
// +kubebuilder:validation:XValidation:rule=`(has(self.format) && self.format != 'Total') || has(self.key)`,fieldPath=.key,reason=FieldValueRequired,message="costSource.key is required when costSource.format is Total"
// +kubebuilder:validation:XValidation:rule=`!has(self.keyPrefix) || (has(self.format) && self.format == 'DailyLedger')`,fieldPath=.keyPrefix,reason=FieldValueForbidden,message="costSource.keyPrefix is only allowed when costSource.format is DailyLedger"
// A DailyLedger reads the keys keyPrefix names: a key there would go unread, unnoticed. The hook does not repeat
// this rule, so that a budget stored before it still evaluates.
// +kubebuilder:validation:XValidation:rule=`!has(self.key) || !has(self.format) || self.format != 'DailyLedger'`,fieldPath=.key,reason=FieldValueForbidden,message="costSource.key is only allowed when costSource.format is Total; a DailyLedger reads keyPrefix"
// +kubebuilder:validation:XValidation:rule=`!has(self.maxAge) || !has(self.format) || self.format != 'TaskRecords'`,fieldPath=.maxAge,reason=FieldValueForbidden,message="costSource.maxAge is not used when costSource.format is TaskRecords: TaskRecords are read as they are, and carry no llmbudget.dev/spend-as-of stamp to age"
// +kubebuilder:validation:XValidation:rule=`!has(self.prometheus) || !has(self.format) || self.format != 'TaskRecords'`,fieldPath=.prometheus,reason=FieldValueForbidden,message="costSource.prometheus is not used when costSource.format is TaskRecords: the spend is the usage of the TaskRecords costSource.selector matches"
type CostSource struct {
	// For an LLMCostBudget only, where it is required unless format is TaskRecords: the name of the ConfigMap, in
	// the budget's namespace, that holds the spend. If it does not exist the budget is Unknown with reason
	// CostSourceMissing.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')`,messageExpression=`'"' + self + '" must be a ConfigMap name (lower-case DNS subdomain)'`
	ConfigMapName string `json:"configMapName,omitempty" validate:"omitempty,configmap_name"`
	// For a ClusterLLMCostBudget only, where it is required unless format is TaskRecords: the value of the label
	// llmbudget.dev/spend-source that marks the spend ConfigMaps of the selected namespaces. A selected namespace
	// without one is unreadable (reason CostSourceMissing).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`self.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')`,messageExpression=`'"' + self + '" must be a label value (at most 63 letters, digits, \'-\', \'_\', \'.\')'`
	SpendSource string `json:"spendSource,omitempty" validate:"omitempty,label_value"`
	// How the ConfigMap holds spend. Total: one key holds the spend of the current period, and the writer resets
	// it when a period starts. DailyLedger: one key per local day, <keyPrefix>YYYY-MM-DD, and the days inside the
	// current period are added up. TaskRecords: no ConfigMap; the spend is the usage of the Kelos TaskRecords that
	// selector matches, completed in the current period. Default Total.
	// +kubebuilder:default=Total
	// +kubebuilder:validation:Enum=Total;DailyLedger;TaskRecords
	Format SourceFormat `json:"format,omitempty" validate:"oneof=Total DailyLedger TaskRecords"`
	// ConfigMap key holding the current period's spend, for example "spend-usd". Required for format Total. If
	// the key is absent the budget is Unknown with reason CostKeyMissing.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && self != '..'`,messageExpression=`'"' + self + '" must be a valid ConfigMap key (letters, digits, \'-\', \'_\', \'.\')'`
	Key string `json:"key,omitempty" validate:"omitempty,configmap_key"`
	// Prefix of the daily keys for format DailyLedger only, for example "team-a." for keys like
	// "team-a.2026-03-14". Keys without the prefix are ignored. Default "" (keys are just the dates).
	// +kubebuilder:validation:MaxLength=242
	// +kubebuilder:validation:XValidation:rule=`self == '' || (self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && self != '..')`,messageExpression=`'"' + self + '" must be a valid ConfigMap key (letters, digits, \'-\', \'_\', \'.\')'`
	KeyPrefix string `json:"keyPrefix,omitempty" validate:"omitempty,max=242,configmap_key"`
	// How old the spend may be: past it the budget reports the condition SpendStale (and, with failurePolicy
	// Closed, counts the spend as unknown). The age is that of the annotation llmbudget.dev/spend-as-of, the RFC
	// 3339 instant a writer computed the figures for, on the spend ConfigMap (for a ClusterLLMCostBudget, the
	// oldest among the selected namespaces' spend ConfigMaps); a ConfigMap without it is stale. A duration of
	// whole hours, minutes or seconds from 1m to 744h, like 15m or 1h30m. Default 15m when prometheus is set
	// (three times the 5 minutes within which the spend writer stamps even unchanged figures); otherwise
	// unset, and the figures are used however old. Not used with format TaskRecords.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule=`self.matches('^([0-9]{1,6}(h|m|s))+$') && duration(self) >= duration('1m') && duration(self) <= duration('744h')`,messageExpression=`'"' + self + '" must be a duration of whole hours, minutes or seconds from 1m to 744h (31 days), like 15m or 1h30m'`
	MaxAge string `json:"maxAge,omitempty" validate:"omitempty,max=16,max_age"`
	// For format TaskRecords only: the Kelos TaskRecords (taskrecords.kelos.dev) whose spec.usage is the spend, by
	// their labels (a standard label selector; Kelos copies a Task's labels onto its record). {} matches every
	// record. Records are read in the budget's namespace (for a ClusterLLMCostBudget, in the namespaces it
	// selects). A record completed (spec.completionTime) in the current period counts; one whose usage does not
	// parse makes the budget Unknown (InvalidCostData).
	Selector *LabelSelector `json:"selector,omitempty"`
	// For an LLMCostBudget only: where the spend writer (llmbudget spend --all, one Deployment in llmbudget-system)
	// computes this budget's spend from: the Prometheus counters of a known exporter (source, narrowed by
	// selector) or your own (series). The writer writes the figures into the ConfigMap configMapName names; the
	// budget itself reads only that ConfigMap.
	Prometheus *PrometheusSource `json:"prometheus,omitempty"`
}

// LabelSelector is metav1.LabelSelector with the bounds the CRD puts on it, so that what the API server admits
// stays cheap to evaluate in CEL and to read in the hooks. Meta turns it into the apimachinery type.
type LabelSelector struct {
	// Labels an object must carry, each with this value.
	// +kubebuilder:validation:MaxProperties=32
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`
	// Requirements on an object's labels, all of which must hold.
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelValue is a label's value in a LabelSelector.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// LabelSelectorRequirement is one requirement of a LabelSelector.
// +kubebuilder:validation:XValidation:rule=`(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)`,message="values must be non-empty for operators In and NotIn, and empty for Exists and DoesNotExist"
type LabelSelectorRequirement struct {
	// The label the requirement is about.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// In, NotIn, Exists or DoesNotExist.
	// +required
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// The values for In and NotIn; empty for Exists and DoesNotExist.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// PrometheusSource is where the spend writer finds a budget's usage: a known exporter's counters (Source) narrowed
// by Selector, or the budget's own Series.
// +kubebuilder:validation:XValidation:rule=`has(self.source) != has(self.series)`,reason=FieldValueRequired,message="costSource.prometheus needs exactly one of source and series"
// +kubebuilder:validation:XValidation:rule=`!has(self.source) || has(self.selector)`,fieldPath=.selector,reason=FieldValueRequired,message="costSource.prometheus.selector is required with a source: name the team, key, namespace, pod labels or service whose spend this is, or write {} for every series of the exporter"
// +kubebuilder:validation:XValidation:rule=`!has(self.series) || !has(self.selector)`,fieldPath=.selector,reason=FieldValueForbidden,message="costSource.prometheus.selector narrows a source's series; write the matchers of your own series into them"
// +kubebuilder:validation:XValidation:rule=`!(has(self.source) || has(self.series)) || has(self.prices) == (has(self.series) ? !has(self.series.cost) : self.source != 'litellm')`,fieldPath=.prices,reason=FieldValueInvalid,message="costSource.prometheus.prices is required when, and only used when, the source counts tokens only (vllm, otel-genai, or series without cost)"
type PrometheusSource struct {
	// A known exporter's counters. litellm: the LiteLLM proxy's spend and token counters (label model). vllm:
	// vLLM's prompt and generation token counters (label model_name; needs prices). otel-genai: the OpenTelemetry
	// GenAI token usage (label gen_ai_request_model; needs prices).
	// +kubebuilder:validation:Enum=litellm;vllm;otel-genai
	Source PrometheusPreset `json:"source,omitempty" validate:"omitempty,oneof=litellm vllm otel-genai"`
	// Your own counters instead of a source: a PromQL series selector per measure (at least one), like
	// my_llm_cost_usd_total{team="ml"}. Without cost the tokens are priced from prices.
	Series *PrometheusSeries `json:"series,omitempty"`
	// Which of a source's series are this budget's: each field set adds a label matcher, all of which must hold.
	// Required with source; {} says explicitly that every series of the exporter counts.
	Selector *PrometheusSelector `json:"selector,omitempty"`
	// The price table (USD per million tokens) of a source that counts tokens only: a ConfigMap key, so that one
	// table serves many budgets. Required for vllm, otel-genai and series without cost.
	Prices *PriceTableRef `json:"prices,omitempty"`
	// Evaluation step: at most the scrape interval, one number and unit (ms, s or m) between 1s and 15m that
	// divides 15m. Default 15s.
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[1-9][0-9]{0,5}(ms|s|m)$') && [self.endsWith('ms') ? int(self.substring(0, size(self) - 2)) : self.endsWith('s') ? int(self.substring(0, size(self) - 1)) * 1000 : int(self.substring(0, size(self) - 1)) * 60000].all(ms, ms >= 1000 && 900000 % ms == 0)`,messageExpression=`'"' + self + '" must be one number and unit (ms, s or m) between 1s and 15m that divides 15m, like 15s or 1m'`
	Step string `json:"step,omitempty" validate:"omitempty,step"`
}

// PrometheusSeries is a budget's own counters: a series selector per measure and the label naming the model.
// +kubebuilder:validation:XValidation:rule=`has(self.cost) || has(self.input) || has(self.output)`,message="costSource.prometheus.series needs at least one of cost, input and output"
type PrometheusSeries struct {
	// Selector of a counter of USD spent.
	Cost SeriesSelector `json:"cost,omitempty" validate:"omitempty,max=1024,promql_series"`
	// Selector of a counter of input (prompt) tokens.
	Input SeriesSelector `json:"input,omitempty" validate:"omitempty,max=1024,promql_series"`
	// Selector of a counter of output (generated) tokens.
	Output SeriesSelector `json:"output,omitempty" validate:"omitempty,max=1024,promql_series"`
	// The label naming the model on these series. Default "model".
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[a-zA-Z_][a-zA-Z0-9_]*$')`,messageExpression=`'"' + self + '" must be a Prometheus label name (letters, digits and \'_\', not starting with a digit)'`
	ModelLabel string `json:"modelLabel,omitempty" validate:"omitempty,prom_label"`
}

// SeriesSelector is a PromQL series selector: a metric name and optional label matchers in braces.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule=`self.matches('^[a-zA-Z_:][a-zA-Z0-9_:]*(\\{\\s*([a-zA-Z_][a-zA-Z0-9_]*\\s*(=~|!~|!=|=)\\s*"([^"\\\\]|\\\\.)*"(\\s*,\\s*[a-zA-Z_][a-zA-Z0-9_]*\\s*(=~|!~|!=|=)\\s*"([^"\\\\]|\\\\.)*")*\\s*,?)?\\s*\\})?$')`,messageExpression=`'"' + self + '" must be a PromQL series selector: a metric name and optional label matchers in braces'`
type SeriesSelector = string

// PrometheusSelector narrows a preset's series; each field adds a label matcher, and an empty selector (`{}`) is
// the explicit choice of every series the exporter has.
type PrometheusSelector struct {
	// LiteLLM team id (label team).
	// +kubebuilder:validation:MaxLength=1024
	Team string `json:"team,omitempty" validate:"max=1024"`
	// LiteLLM hashed API key (label hashed_api_key).
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key,omitempty" validate:"max=1024"`
	// Namespace of the vLLM pods (label namespace).
	// +kubebuilder:validation:MaxLength=1024
	Namespace string `json:"namespace,omitempty" validate:"max=1024"`
	// Labels copied from the pods onto the series (vLLM), each with this value, like {app: vllm-chat}.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches('^[a-zA-Z_][a-zA-Z0-9_]*$'))`,message="every key must be a Prometheus label name (letters, digits and '_', not starting with a digit)"
	PodLabels map[string]PodLabelValue `json:"podLabels,omitempty" validate:"max=16,dive,keys,prom_label,endkeys,max=1024"`
	// OpenTelemetry service.name (label job).
	// +kubebuilder:validation:MaxLength=1024
	Service string `json:"service,omitempty" validate:"max=1024"`
	// Extra PromQL label matchers for every series, like env="prod" or region=~"eu-.*".
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:XValidation:rule=`self.matches('^[a-zA-Z_][a-zA-Z0-9_]*\\s*(=~|!~|!=|=)\\s*"([^"\\\\]|\\\\.)*"$')`,messageExpression=`'"' + self + '" must be a PromQL label matcher: a label name, one of = != =~ !~, and a double-quoted value'`
	Match []string `json:"match,omitempty" validate:"max=16,dive,max=1024,promql_matcher"`
}

// PodLabelValue is a pod label's value in a PrometheusSelector, matched exactly.
// +kubebuilder:validation:MaxLength=1024
type PodLabelValue = string

// PriceTableRef names the ConfigMap key holding a price table (USD per million tokens) for token-only sources.
type PriceTableRef struct {
	// Namespace of the ConfigMap. Default the budget's.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')`,messageExpression=`'"' + self + '" must be a namespace name (lower-case DNS label)'`
	Namespace string `json:"namespace,omitempty" validate:"omitempty,namespace_name"`
	// Name of the ConfigMap holding the table.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')`,messageExpression=`'"' + self + '" must be a ConfigMap name (lower-case DNS subdomain)'`
	ConfigMapName string `json:"configMapName" validate:"required,configmap_name"`
	// Key holding the table in YAML. Default "prices.yaml".
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && self != '..'`,messageExpression=`'"' + self + '" must be a valid ConfigMap key (letters, digits, \'-\', \'_\', \'.\')'`
	Key string `json:"key,omitempty" validate:"omitempty,configmap_key"`
}

// Enforcement says what happens when a budget is exhausted.
// +kubebuilder:validation:XValidation:rule=`!has(self.action) || self.action != 'BlockNewWorkloads' || (has(self.resources) && self.resources.size() > 0)`,fieldPath=.resources,reason=FieldValueRequired,message="enforcement.resources must list at least one resource when enforcement.action is BlockNewWorkloads"
// +kubebuilder:validation:XValidation:rule=`!has(self.scope) || self.scope != 'Labelled' || !has(self.gate) || self.gate == 'Policy'`,fieldPath=.scope,reason=FieldValueInvalid,message="enforcement.scope Labelled needs enforcement.gate Policy: a ResourceQuota counts every object of a kind and cannot select by label"
type Enforcement struct {
	// None: report only. BlockNewWorkloads: while the budget is OverBudget, the API server refuses new objects of
	// each kind in resources in the namespace, through the gate enforcement.gate names; running workloads are left
	// alone. The block ends when a new period starts or the limit rises. Default None.
	// +kubebuilder:default=None
	// +kubebuilder:validation:Enum=None;BlockNewWorkloads
	Action Action `json:"action,omitempty" validate:"oneof=None BlockNewWorkloads"`
	// Kinds of objects that may not be created while blocking, each written as a ResourceQuota object-count
	// resource: "<plural>" for the core group or "<plural>.<group>", for example "pods", "jobs.batch",
	// "deployments.apps". Required when action is BlockNewWorkloads.
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule=`self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')`,messageExpression=`'"' + self + '" must be <plural> or <plural>.<group> in lower case, for example jobs.batch'`
	Resources []string `json:"resources,omitempty" validate:"max=20,dive,max=63,resource_name"`
	// What an Unknown state (spend unreadable) means for enforcement. Open: do not block. Closed: block as if
	// OverBudget. Default Open.
	// +kubebuilder:default=Open
	// +kubebuilder:validation:Enum=Open;Closed
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty" validate:"oneof=Open Closed"`
	// How new workloads are refused while blocking. Policy: the ValidatingAdmissionPolicy llmbudget-budgets reads
	// status.enforcement and refuses at once, with a message naming the budget, its spend and limit and when the
	// period ends. Quota: a ResourceQuota named llmbudget-<budget> allows zero objects of each kind in resources
	// (for clusters where admission policies are not allowed; the quota controller's lag applies). Both: the two
	// together. Default Policy.
	// +kubebuilder:default=Policy
	// +kubebuilder:validation:Enum=Policy;Quota;Both
	Gate Gate `json:"gate,omitempty" validate:"oneof=Policy Quota Both"`
	// Which new workloads are refused while blocking. Namespace: every new object of the listed resources in the
	// namespace. Labelled: only those labelled llmbudget.dev/budget=<this budget>; needs gate Policy. A
	// ClusterLLMCostBudget admits only Namespace: the llmbudget.dev/budget label names a team budget, not it.
	// Default Namespace.
	// +kubebuilder:default=Namespace
	// +kubebuilder:validation:Enum=Namespace;Labelled
	Scope Scope `json:"scope,omitempty" validate:"oneof=Namespace Labelled"`
	// What blocking does. Deny: the gates refuse new workloads. Warn: nothing is refused and no ResourceQuota is
	// kept, whatever the gate; the ValidatingAdmissionPolicy llmbudget-budgets-warn (llmbudget-cluster-budgets-warn
	// for a ClusterLLMCostBudget) admits each new workload that would be refused in the namespace and the client
	// prints the refusal's sentence as a warning (and the API server's audit log records it). Status, conditions
	// and Events say what it would refuse. For rolling a budget out before it enforces. Default Deny.
	// +kubebuilder:default=Deny
	// +kubebuilder:validation:Enum=Deny;Warn
	Mode Mode `json:"mode,omitempty" validate:"oneof=Deny Warn"`
	// When a block on a USD limit starts. Projected: at the instant the spend, growing at the burn rate its spend
	// writer measured with the figures (annotation llmbudget.dev/burn-rate), reaches the limit, if that is within
	// 5 minutes of the figures' latest sample; so a fast burn is stopped on time, not a writer cycle late. Such a
	// block may start slightly before measured spend reaches the limit, never before the projection says, and
	// lifts if later figures project the limit further off. Measured: only once measured spend reaches a limit.
	// Spend without a burn rate, and token limits, block on measured spend either way. Default Projected.
	// +kubebuilder:default=Projected
	// +kubebuilder:validation:Enum=Projected;Measured
	BlockOn BlockOn `json:"blockOn,omitempty" validate:"oneof=Projected Measured"`
}

type (
	// PeriodType is Daily, Weekly or Monthly: the calendar's own kind, so that the spec and period.Spec agree.
	PeriodType = period.Kind
	// Basis is what a threshold compares: spend so far (Actual) or the forecast (Forecasted).
	Basis string
	// SourceFormat is where spend is: a ConfigMap's Total key or DailyLedger of keys, or Kelos TaskRecords.
	SourceFormat string
	// Action is what an exhausted budget does: None or BlockNewWorkloads.
	Action string
	// FailurePolicy is whether Unknown spend blocks (Closed) or not (Open).
	FailurePolicy string
	// Gate is how new workloads are refused: by the admission Policy, a ResourceQuota, or Both.
	Gate string
	// Scope is which new workloads blocking refuses: all in its Namespace, or only the Labelled ones.
	Scope string
	// Mode is whether blocking refuses (Deny) or admits with a warning what it would refuse (Warn).
	Mode string
	// BlockOn is what starts a block on a USD limit: the Projected crossing or Measured spend.
	BlockOn string
	// State is where a budget stands.
	State string
	// PrometheusPreset is a known exporter's counters: litellm, vllm or otel-genai.
	PrometheusPreset string
)

// The values of the spec's and the status's enums, spelled as in the CRD.
const (
	Daily   = period.Daily
	Weekly  = period.Weekly
	Monthly = period.Monthly

	Actual     Basis = "Actual"
	Forecasted Basis = "Forecasted"

	// Total is one key holding the current period's spend; the writer resets it when a period starts.
	Total SourceFormat = "Total"
	// DailyLedger is a ledger: each key "<prefix>YYYY-MM-DD" holds one local day's spend; a period's is the sum of
	// its days.
	DailyLedger SourceFormat = "DailyLedger"
	// TaskRecords is the usage of the Kelos TaskRecords the selector matches, completed in the period.
	TaskRecords SourceFormat = "TaskRecords"

	ActionNone        Action = "None"
	BlockNewWorkloads Action = "BlockNewWorkloads"

	FailOpen   FailurePolicy = "Open"
	FailClosed FailurePolicy = "Closed"

	GatePolicy Gate = "Policy"
	GateQuota  Gate = "Quota"
	GateBoth   Gate = "Both"

	ScopeNamespace Scope = "Namespace"
	ScopeLabelled  Scope = "Labelled"

	ModeDeny Mode = "Deny"
	ModeWarn Mode = "Warn"

	BlockOnProjected BlockOn = "Projected"
	BlockOnMeasured  BlockOn = "Measured"

	PresetLiteLLM   PrometheusPreset = "litellm"
	PresetVLLM      PrometheusPreset = "vllm"
	PresetOTelGenAI PrometheusPreset = "otel-genai"

	UnderBudget State = "UnderBudget"
	Warning     State = "Warning"
	OverBudget  State = "OverBudget"
	Unknown     State = "Unknown"
)

// Status is written by the sync hook.
//
// The budget's evaluation, written by llmbudget. Read it with kubectl get (or kubectl describe) on the budget;
// wait for it with kubectl wait --for=condition=Ready.
type Status struct {
	// The metadata.generation of the spec this status was computed from.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// UnderBudget; Warning (spend reached warnThresholdPercent of a limit); OverBudget (spend or tokens reached a
	// limit); Unknown (spend could not be read or the spec is invalid: see the BudgetEvaluated condition).
	// +kubebuilder:validation:Enum=UnderBudget;Warning;OverBudget;Unknown
	State State `json:"state,omitempty"`
	// The limit in US dollars this evaluation used, for example "500.00".
	LimitUSD string `json:"limitUSD,omitempty"`
	// Spend in the current period, in US dollars, for example "123.45".
	ObservedSpendUSD string `json:"observedSpendUSD,omitempty"`
	// Limit minus spend, in US dollars; "0.00" once the limit is reached.
	RemainingUSD string `json:"remainingUSD,omitempty"`
	// Spend as a percentage of the limit, rounded down (may exceed 100).
	PercentUsed *int64 `json:"percentUsed,omitempty"`
	// Spend projected linearly to the end of the period, in US dollars, from the spend so far and the whole hours
	// elapsed (recomputed hourly). Absent until 10% of the period has passed.
	ForecastSpendUSD string `json:"forecastSpendUSD,omitempty"`
	// Tokens used in the current period, as reported in the spend data.
	Tokens *TokenUsage `json:"tokens,omitempty"`
	// The burn rate the spend writer measured with the figures, and when spend growing at it reaches a USD limit.
	// Absent when the spend source says no rate (annotation llmbudget.dev/burn-rate).
	Projection *ProjectionStatus `json:"projection,omitempty"`
	// How far the measured spend went past limitUSD in the current period. Absent while it has not.
	Overshoot *OvershootStatus `json:"overshoot,omitempty"`
	// The current period, as computed in spec.period.timeZone.
	Period *PeriodStatus `json:"period,omitempty"`
	// Thresholds crossed in the current period, each recorded once; reset when a new period begins.
	Thresholds []ThresholdStatus `json:"thresholds,omitempty"`
	// One entry per spec.modelLimits model, evaluated like the budget.
	Models []ModelStatus `json:"models,omitempty"`
	// Whether the budget is currently blocking new workloads.
	Enforcement *EnforcementStatus `json:"enforcement,omitempty"`
	// Final figures of past periods, oldest first; the last 12 are kept.
	// +kubebuilder:validation:MaxItems=12
	History []HistoryEntry `json:"history,omitempty"`
	// For a ClusterLLMCostBudget: how many namespaces the selector matches.
	NamespaceCount *int32 `json:"namespaceCount,omitempty"`
	// For a ClusterLLMCostBudget, who spent it: the selected namespaces, unreadable ones first, then by spend
	// (largest first), at most 50; namespacesOmitted counts the rest.
	// +kubebuilder:validation:MaxItems=50
	Namespaces []NamespaceStatus `json:"namespaces,omitempty"`
	// For a ClusterLLMCostBudget: how many selected namespaces status.namespaces leaves out.
	NamespacesOmitted int32 `json:"namespacesOmitted,omitempty"`
	// The Events llmbudget is announcing right now, each kept for 55 minutes after its occurrence. They are
	// recorded here so that an Event stays exactly as first created for its whole window, whatever the budget does
	// meanwhile, and is never created a second time.
	Announcements []AnnouncementStatus `json:"announcements,omitempty"`
	// When an evaluation last changed this status. A sync that finds nothing new leaves the status, this field
	// included, exactly as it was, so that Metacontroller does not sync the budget again for its own write.
	LastEvaluatedTime *metav1.Time `json:"lastEvaluatedTime,omitempty"`
	// Conditions: BudgetEvaluated (reasons Evaluated, CostSourceMissing, CostKeyMissing, InvalidCostData,
	// CostPeriodMismatch, InvalidSpec), OverBudget, Blocking and Ready (true once the current generation has been
	// evaluated).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NamespaceStatus is a selected namespace's part of a cluster budget; Reading is ReadingOK or why it went unread.
type NamespaceStatus struct {
	// The namespace.
	Namespace string `json:"namespace"`
	// Its spend this period, in US dollars (absent when unreadable).
	ObservedSpendUSD string `json:"observedSpendUSD,omitempty"`
	// Its share of the budget's total spend, in % (rounded down).
	SharePercent *int64 `json:"sharePercent,omitempty"`
	// Read, or why its spend could not be read (CostSourceMissing, CostKeyMissing, InvalidCostData,
	// CostPeriodMismatch).
	Reading string `json:"reading"`
	// What is wrong with its spend ConfigMap, when unreadable.
	Message string `json:"message,omitempty"`
}

// ReadingOK is the Reading of a namespace whose spend was read.
const ReadingOK = "Read"

// ModelStatus is where one limited model stands in the current period.
type ModelStatus struct {
	// The model name.
	Model string `json:"model"`
	// UnderBudget, Warning or OverBudget against the model's own limits.
	State State `json:"state"`
	// The model's limit in US dollars.
	LimitUSD string `json:"limitUSD,omitempty"`
	// The model's spend in the current period, in US dollars.
	ObservedSpendUSD string `json:"observedSpendUSD"`
	// floor(spend x 100 / limit) for the model (the largest token percent when it has no USD limit).
	PercentUsed int64 `json:"percentUsed"`
	// The model's tokens in the current period.
	Tokens *TokenUsage `json:"tokens,omitempty"`
	// When each Actual threshold was first crossed by this model in the current period.
	Thresholds []ThresholdStatus `json:"thresholds,omitempty"`
}

// ProjectionStatus is the recent rate of spend and where it leads. Every field follows from the spend source's
// figures and rate, never from the time of the sync.
type ProjectionStatus struct {
	// The recent rate of spend, in US dollars per hour, for example "12.50".
	BurnRateUSDPerHour string `json:"burnRateUSDPerHour,omitempty"`
	// The window the rate was measured over, for example "1m0s".
	// +kubebuilder:validation:MaxLength=32
	Window string `json:"window,omitempty"`
	// The latest sample the figures count, to the second: the projection runs from here.
	SampledAt *metav1.Time `json:"sampledAt,omitempty"`
	// When spend growing at that rate reaches a USD limit, rounded up to the second: the first limit it reaches, in
	// the current period. Absent when no limit is reached in the period at that rate.
	LimitReachedAt *metav1.Time `json:"limitReachedAt,omitempty"`
	// The limit reached then, with its figures now: "spend 99.50 of 100.00 USD" or "model gpt-4o spend ...".
	// +kubebuilder:validation:MaxLength=1024
	Limit string `json:"limit,omitempty"`
	// Why the spend source's rate is not used, when it is not (too old, or not for these figures).
	// +kubebuilder:validation:MaxLength=1024
	Unused string `json:"unused,omitempty"`
}

// OvershootStatus is how far the measured spend went past the USD limit: what a block cost.
type OvershootStatus struct {
	// Spend past the limit in US dollars, for example "0.42".
	USD string `json:"usd"`
	// The same as a percentage of the limit, two decimals rounded down, for example "0.42".
	Percent string `json:"percent"`
}

// TokenUsage is the tokens observed in the current period.
type TokenUsage struct {
	// Input (prompt) tokens used in the current period.
	Input int64 `json:"input"`
	// Output (completion) tokens used in the current period.
	Output int64 `json:"output"`
	// Input plus output tokens used in the current period.
	Total int64 `json:"total"`
}

// PeriodStatus is the current window, as RFC 3339 times in the budget's zone.
type PeriodStatus struct {
	// When the current period began (inclusive).
	// +kubebuilder:validation:Format=date-time
	Start string `json:"start"`
	// When the current period ends (exclusive) and the next begins.
	// +kubebuilder:validation:Format=date-time
	End string `json:"end"`
}

// ThresholdStatus records when a threshold was crossed in the current period.
type ThresholdStatus struct {
	// The threshold's percent of the limit (of the model's limit, under status.models).
	Percent int32 `json:"percent"`
	// Actual or Forecasted (always Actual for models).
	Basis Basis `json:"basis"`
	// When llmbudget first saw the threshold crossed in this period.
	CrossedAt *metav1.Time `json:"crossedAt,omitempty"`
}

// EnforcementStatus says whether the namespace is closed to new workloads. While blocking, it holds everything the
// admission policy reads (the gates, the scope, the resources and the first sentence of the policy's message), so
// that the policy computes nothing.
type EnforcementStatus struct {
	// True while new workloads are refused.
	Blocking bool `json:"blocking"`
	// The gates refusing new workloads right now, Policy and/or Quota.
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=16
	Gates []Gate `json:"gates,omitempty"`
	// Namespace or Labelled, from spec.enforcement.scope.
	// +kubebuilder:validation:MaxLength=16
	Scope Scope `json:"scope,omitempty"`
	// The resources refused while blocking, from spec.enforcement.resources.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=63
	Resources []string `json:"resources,omitempty"`
	// Name of the ResourceQuota used for blocking (in each namespace), llmbudget-<budget> or
	// llmbudget-cluster-<budget> (gate Quota or Both).
	QuotaName string `json:"quotaName,omitempty"`
	// For a ClusterLLMCostBudget, the namespaces closed while blocking: every selected namespace. The admission
	// policy llmbudget-cluster-budgets refuses only in these.
	// +kubebuilder:validation:items:MaxLength=63
	Namespaces []string `json:"namespaces,omitempty"`
	// The sentence the admission policy refuses with, before it names the refused resource and namespace.
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// Why the budget is or is not blocking, in one sentence.
	Reason string `json:"reason,omitempty"`
	// Warn while a budget with spec.enforcement.mode Warn would refuse: the policy warns instead of refusing.
	// Absent otherwise, so that an enforcing budget's status reads as before.
	// +kubebuilder:validation:MaxLength=16
	Mode Mode `json:"mode,omitempty"`
	// True while the block rests on the projection (status.projection) rather than on measured spend: it lifts
	// when later figures project the limit further off, or when the projection is too old to use.
	Projected bool `json:"projected,omitempty"`
	// While blocking on spend read in the current period, that reading. A spend source that becomes unreadable
	// does not lift the block until readable spend is under the limit, the period ends or the spec changes.
	BlockedOn *SpendReading `json:"blockedOn,omitempty"`
}

// SpendReading is a reading of spend that reached a limit.
type SpendReading struct {
	// The limit reached and its figures, e.g. "spend 612.00 of 500.00 USD".
	// +kubebuilder:validation:MaxLength=1024
	Reading string `json:"reading"`
	// When that reading was first made.
	ReadAt metav1.Time `json:"readAt"`
}

// AnnouncementStatus records an Event while it is announced (55 minutes from its occurrence), so that the Event
// stays exactly as first created until then, whatever the budget does meanwhile.
type AnnouncementStatus struct {
	// What occurred, as it appears in the Event's name.
	Slug string `json:"slug"`
	// Normal or Warning.
	Type string `json:"type"`
	// The Event's reason, for example BudgetWarning.
	Reason string `json:"reason"`
	// The Event's message.
	Message string `json:"message"`
	// When it occurred; the Event goes 55 minutes later.
	At metav1.Time `json:"at"`
}

// HistoryEntry holds a finished period's final figures.
type HistoryEntry struct {
	// When that period began.
	// +kubebuilder:validation:Format=date-time
	Start string `json:"start"`
	// When that period ended.
	// +kubebuilder:validation:Format=date-time
	End string `json:"end"`
	// Spend last observed in that period, in US dollars.
	SpentUSD string `json:"spentUSD,omitempty"`
	// The limit in force at the end of that period, in US dollars.
	LimitUSD string `json:"limitUSD,omitempty"`
	// The state at the end of that period.
	State State `json:"state,omitempty"`
}

// Condition types, then the reasons for BudgetEvaluated (and Unknown-state Events).
const (
	ConditionBudgetEvaluated = "BudgetEvaluated"
	ConditionOverBudget      = "OverBudget"
	ConditionBlocking        = "Blocking"
	ConditionReady           = "Ready"
	// ConditionSpendStale is set while spec.costSource.maxAge applies: True once the spend is older than it.
	ConditionSpendStale = "SpendStale"

	ReasonEvaluated         = "Evaluated"
	ReasonCostSourceMissing = "CostSourceMissing"
	ReasonCostKeyMissing    = "CostKeyMissing"
	ReasonInvalidCostData   = "InvalidCostData"
	ReasonInvalidSpec       = "InvalidSpec"
	// ReasonPeriodMismatch: a cluster budget's Total source covers another period, or does not say which it covers.
	ReasonPeriodMismatch = "CostPeriodMismatch"
	// ReasonSpendStale: the spend is older than spec.costSource.maxAge (the reason of BudgetEvaluated too, under
	// failurePolicy Closed, where stale spend counts as unknown).
	ReasonSpendStale = "SpendStale"
	ReasonSpendFresh = "SpendFresh"
	// ReasonSpendUntrusted: the ConfigMap a budget names carries no label llmbudget.dev/spend-source, so no spend
	// writer made or labelled it (the admission policy over spend sources admits only the writers to create a
	// labelled ConfigMap, and a cluster administrator to label one): it is not read.
	ReasonSpendUntrusted = "SpendSourceUntrusted"
	// ReasonTooManyNamespaces: a ClusterLLMCostBudget selects more namespaces than MaxSelectedNamespaces (or, with
	// a quota in each, MaxQuotaNamespaces): its spend is not read, and a block of this period holds on the
	// namespaces it closed.
	ReasonTooManyNamespaces = "TooManyNamespaces"
)

// MaxModelNameLength bounds a model name in the spend data and in spec.modelLimits.
const MaxModelNameLength = 253

// ValidModelName reports whether name can name a model: 1 to 253 printable ASCII characters without spaces,
// quotes or backslashes, which covers "gpt-4o", "anthropic/claude-3-5-sonnet@20241022" and "llama3.1:70b".
func ValidModelName(name string) bool {
	return name != "" && len(name) <= MaxModelNameLength && !strings.ContainsFunc(name, func(c rune) bool {
		return c <= ' ' || c >= 0x7f || c == '"' || c == '\\'
	})
}
