// Package v1alpha1 holds the LLMCostBudget API (llmbudget.dev/v1alpha1): the Go types whose JSON tags are the
// contract with the CRD, their defaults, and the validation the hook repeats because stored objects can predate
// a CRD rule. A Spec which passes Validate can be evaluated: its money parses, its period is computable and its
// thresholds are unique.
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
	LabelSpendSource   = Group + "/spend-source"   // marks a spend ConfigMap as a cluster budget's source
	// AnnotationPeriodStart is where a cluster budget's Total source says when (RFC 3339) its key's period starts.
	AnnotationPeriodStart = Group + "/period-start"
	// AnnotationSpendAsOf is where a spend ConfigMap says (RFC 3339) the instant its figures are for: the time its
	// writer evaluated them. Any pipeline may write it; spec.costSource.maxAge is checked against it.
	AnnotationSpendAsOf = Group + "/spend-as-of"
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

// Spec is what a platform team declares; NamespaceSelector and CostSource.SpendSource belong to ClusterKind only.
type Spec struct {
	NamespaceSelector    *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	LimitUSD             *string               `json:"limitUSD,omitempty"`
	Period               Period                `json:"period"`
	WarnThresholdPercent *int32                `json:"warnThresholdPercent,omitempty"`
	Thresholds           []Threshold           `json:"thresholds,omitempty"`
	TokenLimits          *TokenLimits          `json:"tokenLimits,omitempty"`
	ModelLimits          []ModelLimit          `json:"modelLimits,omitempty"`
	CostSource           CostSource            `json:"costSource"`
	Enforcement          Enforcement           `json:"enforcement"`
	Suspend              bool                  `json:"suspend,omitempty"`
}

// Period selects the calendar window a budget covers.
type Period struct {
	Type     PeriodType `json:"type,omitempty"`
	TimeZone string     `json:"timeZone,omitempty"`
	StartDay *int32     `json:"startDay,omitempty"`
}

// Threshold is a percentage of the limit whose crossing is announced once a period.
type Threshold struct {
	Percent int32 `json:"percent"`
	Basis   Basis `json:"basis,omitempty"`
}

// TokenLimits caps token usage in a period; each limit is optional.
type TokenLimits struct {
	Input  *int64 `json:"input,omitempty"`
	Output *int64 `json:"output,omitempty"`
	Total  *int64 `json:"total,omitempty"`
}

// ModelLimit caps one model's spend or tokens within the budget's period.
type ModelLimit struct {
	Model       string       `json:"model"`
	LimitUSD    *string      `json:"limitUSD,omitempty"`
	TokenLimits *TokenLimits `json:"tokenLimits,omitempty"`
}

// CostSource says where spend comes from: the ConfigMap a cost pipeline writes spend into, or, with format
// TaskRecords, the Kelos TaskRecords that Selector matches.
type CostSource struct {
	ConfigMapName string `json:"configMapName,omitempty"`
	// SpendSource is, for ClusterKind, the LabelSpendSource value on the selected namespaces' spend ConfigMaps.
	SpendSource string       `json:"spendSource,omitempty"`
	Format      SourceFormat `json:"format,omitempty"`
	Key         string       `json:"key,omitempty"`
	KeyPrefix   string       `json:"keyPrefix,omitempty"`
	// MaxAge is how old the spend ConfigMap's figures (by its AnnotationSpendAsOf) may be before they are stale:
	// a Go duration of whole hours, minutes and seconds from 1m to 744h. Default DefaultMaxAge with Prometheus;
	// otherwise unset, and figures are used however old.
	MaxAge string `json:"maxAge,omitempty"`
	// Selector picks, for format TaskRecords, the Kelos TaskRecords whose usage is the budget's spend: in the
	// budget's namespace, or in the namespaces a ClusterKind selects.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Prometheus says, for an LLMCostBudget's ConfigMap, which Prometheus counters the spend writer
	// (`llmbudget spend`) computes the spend from. The hooks never read it: they read the ConfigMap.
	Prometheus *PrometheusSource `json:"prometheus,omitempty"`
}

// PrometheusSource is where the spend writer finds a budget's usage: a known exporter's counters (Source) narrowed
// by Selector, or the budget's own Series.
type PrometheusSource struct {
	Source   PrometheusPreset    `json:"source,omitempty"`
	Series   *PrometheusSeries   `json:"series,omitempty"`
	Selector *PrometheusSelector `json:"selector,omitempty"`
	Prices   *PriceTableRef      `json:"prices,omitempty"`
	// Step is the evaluation step, a Go duration of one unit that divides 15 minutes (default 15s).
	Step string `json:"step,omitempty"`
}

// PrometheusSeries is a budget's own counters: a series selector per measure and the label naming the model.
type PrometheusSeries struct {
	Cost       string `json:"cost,omitempty"`
	Input      string `json:"input,omitempty"`
	Output     string `json:"output,omitempty"`
	ModelLabel string `json:"modelLabel,omitempty"`
}

// PrometheusSelector narrows a preset's series; each field adds a label matcher, and an empty selector (`{}`) is
// the explicit choice of every series the exporter has.
type PrometheusSelector struct {
	Team      string            `json:"team,omitempty"`
	Key       string            `json:"key,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	PodLabels map[string]string `json:"podLabels,omitempty"`
	Service   string            `json:"service,omitempty"`
	Match     []string          `json:"match,omitempty"`
}

// PriceTableRef names the ConfigMap key holding a price table (USD per million tokens) for token-only sources.
type PriceTableRef struct {
	Namespace     string `json:"namespace,omitempty"` // default: the budget's
	ConfigMapName string `json:"configMapName"`
	Key           string `json:"key,omitempty"` // default DefaultPricesKey
}

// Enforcement says what happens when a budget is exhausted.
type Enforcement struct {
	Action        Action        `json:"action,omitempty"`
	Resources     []string      `json:"resources,omitempty"`
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	Gate          Gate          `json:"gate,omitempty"`
	Scope         Scope         `json:"scope,omitempty"`
	Mode          Mode          `json:"mode,omitempty"`
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

	PresetLiteLLM   PrometheusPreset = "litellm"
	PresetVLLM      PrometheusPreset = "vllm"
	PresetOTelGenAI PrometheusPreset = "otel-genai"

	UnderBudget State = "UnderBudget"
	Warning     State = "Warning"
	OverBudget  State = "OverBudget"
	Unknown     State = "Unknown"
)

// Status is written by the sync hook.
type Status struct {
	ObservedGeneration int64                `json:"observedGeneration,omitempty"`
	State              State                `json:"state,omitempty"`
	LimitUSD           string               `json:"limitUSD,omitempty"`
	ObservedSpendUSD   string               `json:"observedSpendUSD,omitempty"`
	RemainingUSD       string               `json:"remainingUSD,omitempty"`
	PercentUsed        *int64               `json:"percentUsed,omitempty"`
	ForecastSpendUSD   string               `json:"forecastSpendUSD,omitempty"`
	Tokens             *TokenUsage          `json:"tokens,omitempty"`
	Period             *PeriodStatus        `json:"period,omitempty"`
	Thresholds         []ThresholdStatus    `json:"thresholds,omitempty"`
	Models             []ModelStatus        `json:"models,omitempty"`
	Enforcement        *EnforcementStatus   `json:"enforcement,omitempty"`
	History            []HistoryEntry       `json:"history,omitempty"`
	NamespaceCount     *int32               `json:"namespaceCount,omitempty"`
	Namespaces         []NamespaceStatus    `json:"namespaces,omitempty"`
	NamespacesOmitted  int32                `json:"namespacesOmitted,omitempty"`
	Announcements      []AnnouncementStatus `json:"announcements,omitempty"`
	LastEvaluatedTime  *metav1.Time         `json:"lastEvaluatedTime,omitempty"`
	Conditions         []metav1.Condition   `json:"conditions,omitempty"`
}

// NamespaceStatus is a selected namespace's part of a cluster budget; Reading is ReadingOK or why it went unread.
type NamespaceStatus struct {
	Namespace        string `json:"namespace"`
	ObservedSpendUSD string `json:"observedSpendUSD,omitempty"`
	SharePercent     *int64 `json:"sharePercent,omitempty"`
	Reading          string `json:"reading"`
	Message          string `json:"message,omitempty"`
}

// ReadingOK is the Reading of a namespace whose spend was read.
const ReadingOK = "Read"

// ModelStatus is where one limited model stands in the current period.
type ModelStatus struct {
	Model            string            `json:"model"`
	State            State             `json:"state"`
	LimitUSD         string            `json:"limitUSD,omitempty"`
	ObservedSpendUSD string            `json:"observedSpendUSD"`
	PercentUsed      int64             `json:"percentUsed"`
	Tokens           *TokenUsage       `json:"tokens,omitempty"`
	Thresholds       []ThresholdStatus `json:"thresholds,omitempty"`
}

// TokenUsage is the tokens observed in the current period.
type TokenUsage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Total  int64 `json:"total"`
}

// PeriodStatus is the current window, as RFC 3339 times in the budget's zone.
type PeriodStatus struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// ThresholdStatus records when a threshold was crossed in the current period.
type ThresholdStatus struct {
	Percent   int32        `json:"percent"`
	Basis     Basis        `json:"basis"`
	CrossedAt *metav1.Time `json:"crossedAt,omitempty"`
}

// EnforcementStatus says whether the namespace is closed to new workloads. While blocking, it holds everything the
// admission policy reads (the gates, the scope, the resources and the first sentence of the policy's message), so
// that the policy computes nothing.
type EnforcementStatus struct {
	Blocking   bool     `json:"blocking"`
	Gates      []Gate   `json:"gates,omitempty"`
	Scope      Scope    `json:"scope,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	QuotaName  string   `json:"quotaName,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"` // for ClusterKind: the namespaces closed while blocking
	Message    string   `json:"message,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	// Mode is Warn while a warn-mode budget would refuse: the Policy gate then warns instead of refusing, and no
	// ResourceQuota is kept. It is empty otherwise, so that an enforcing budget's status reads as before.
	Mode Mode `json:"mode,omitempty"`
	// BlockedOn is, while blocking on spend read this period, the reading that blocks: a spend source that
	// becomes unreadable cannot lift the block until readable spend is below the limit, the period ends, or the
	// spec changes.
	BlockedOn *SpendReading `json:"blockedOn,omitempty"`
}

// SpendReading is a reading of spend that reached a limit.
type SpendReading struct {
	Reading string      `json:"reading"` // the limit reached and its figures: "spend 612.00 of 500.00 USD"
	ReadAt  metav1.Time `json:"readAt"`  // when that reading was first made
}

// AnnouncementStatus records an Event while it is announced (55 minutes from its occurrence), so that the Event
// stays exactly as first created until then, whatever the budget does meanwhile.
type AnnouncementStatus struct {
	Slug    string      `json:"slug"`
	Type    string      `json:"type"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	At      metav1.Time `json:"at"`
}

// HistoryEntry holds a finished period's final figures.
type HistoryEntry struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	SpentUSD string `json:"spentUSD,omitempty"`
	LimitUSD string `json:"limitUSD,omitempty"`
	State    State  `json:"state,omitempty"`
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
