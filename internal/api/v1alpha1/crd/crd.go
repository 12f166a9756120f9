// Package crd holds the two kinds of llmbudget.dev/v1alpha1 as their CustomResourceDefinitions declare them: the
// root types that controller-gen writes deploy/crd from (`make generate`). Everything below the root is
// v1alpha1's, so that the schema, the hooks and `llmbudget eval` read one set of types; the hooks decode with
// v1alpha1.LLMCostBudget, whose metadata is smaller than a root type's.
//
// Each root carries the rules that tell the kinds apart, the CEL twins of v1alpha1's Spec.Validate and
// Spec.ValidateCluster: which of costSource.configMapName and costSource.spendSource is the kind's, and what a
// cluster budget refuses besides.
//
// +groupName=llmbudget.dev
// +versionName=v1alpha1
package crd

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// The Resets columns are strings, not dates: kubectl renders a date column as the age of the timestamp, which is
// "<invalid>" for a time in the future such as the end of the period.

// LLMCostBudget caps what the LLM workloads of a namespace may spend per calendar period (day, week or month). A
// cost pipeline writes the observed spend into a ConfigMap; llmbudget compares it with the limit, reports the state
// in status, announces threshold crossings as Events and, when asked to, stops new workloads from being created in
// the namespace while the budget is exhausted. Workloads draw on a budget by carrying the label
// llmbudget.dev/budget=<budget name>.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=llmb;llmbudget,categories=llmbudget
// +kubebuilder:metadata:labels="app.kubernetes.io/name=llmbudget";"app.kubernetes.io/component=crd"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Limit",type=string,JSONPath=`.spec.limitUSD`,description="Spending limit per period, in US dollars."
// +kubebuilder:printcolumn:name="Spent",type=string,JSONPath=`.status.observedSpendUSD`,description="Spend observed so far in the current period, in US dollars."
// +kubebuilder:printcolumn:name="Used",type=integer,JSONPath=`.status.percentUsed`,description="Share of the limit spent in the current period, in % (rounded down)."
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="UnderBudget, Warning, OverBudget or Unknown."
// +kubebuilder:printcolumn:name="Enforced",type=string,JSONPath=`.status.conditions[?(@.type=="Enforced")].status`,description="True while every enforcement point the budget asks for is in force (status.enforcementPoints)."
// +kubebuilder:printcolumn:name="Resets",type=string,JSONPath=`.status.period.end`,description="When the current period ends and spend starts again from zero (RFC 3339)."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule=`self.metadata.name.size() <= 63`,message="metadata.name must be at most 63 characters: workloads name their budget in the llmbudget.dev/budget label, whose values are limited to 63 characters"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || !has(self.spec.namespaceSelector)`,fieldPath=.spec.namespaceSelector,reason=FieldValueForbidden,message="only for ClusterLLMCostBudget"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || !has(self.spec.costSource) || has(self.spec.costSource.configMapName) || (has(self.spec.costSource.format) && self.spec.costSource.format == 'TaskRecords')`,fieldPath=.spec.costSource.configMapName,reason=FieldValueRequired,message="costSource.configMapName is required unless costSource.format is TaskRecords"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || !has(self.spec.costSource) || !has(self.spec.costSource.spendSource) || (has(self.spec.costSource.format) && self.spec.costSource.format == 'TaskRecords')`,fieldPath=.spec.costSource.spendSource,reason=FieldValueForbidden,message="only for ClusterLLMCostBudget; name the ConfigMap in configMapName"
type LLMCostBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// What the budget allows and where its spend is read from. Set limitUSD, or tokenLimits, or both.
	// +required
	Spec v1alpha1.Spec `json:"spec"`
	// The budget's evaluation, written by llmbudget. Read it with kubectl get llmcostbudget or kubectl describe;
	// wait for it with kubectl wait --for=condition=Ready.
	Status *v1alpha1.Status `json:"status,omitempty"`
}

// ClusterLLMCostBudget caps what the LLM workloads of several namespaces (a department, the organisation) may spend
// together per calendar period. It reads the spend ConfigMaps that the team budgets of those namespaces read (found
// by the label llmbudget.dev/spend-source), sums them, and evaluates the sum exactly as an LLMCostBudget evaluates
// its own spend. status.namespaces says which namespace spent how much; while blocking, new workloads are refused
// in every selected namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cllmb,categories=llmbudget
// +kubebuilder:metadata:labels="app.kubernetes.io/name=llmbudget";"app.kubernetes.io/component=crd"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Limit",type=string,JSONPath=`.spec.limitUSD`,description="Spending limit per period, in US dollars."
// +kubebuilder:printcolumn:name="Spent",type=string,JSONPath=`.status.observedSpendUSD`,description="Spend observed so far in the current period, in US dollars."
// +kubebuilder:printcolumn:name="Used",type=integer,JSONPath=`.status.percentUsed`,description="Share of the limit spent in the current period, in % (rounded down)."
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="UnderBudget, Warning, OverBudget or Unknown."
// +kubebuilder:printcolumn:name="Enforced",type=string,JSONPath=`.status.conditions[?(@.type=="Enforced")].status`,description="True while every enforcement point the budget asks for is in force (status.enforcementPoints)."
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.namespaceCount`,description="How many namespaces the selector matches."
// +kubebuilder:printcolumn:name="Resets",type=string,JSONPath=`.status.period.end`,description="When the current period ends and spend starts again from zero (RFC 3339)."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule=`self.metadata.name.size() <= 63`,message="metadata.name must be at most 63 characters, as for LLMCostBudget, so that the names derived from it (llmbudget-cluster-<name>) stay valid"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || has(self.spec.namespaceSelector)`,fieldPath=.spec.namespaceSelector,reason=FieldValueRequired,message="spec.namespaceSelector is required"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || !has(self.spec.costSource) || has(self.spec.costSource.spendSource) || (has(self.spec.costSource.format) && self.spec.costSource.format == 'TaskRecords')`,fieldPath=.spec.costSource.spendSource,reason=FieldValueRequired,message="costSource.spendSource is required unless costSource.format is TaskRecords"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || !has(self.spec.costSource) || !has(self.spec.costSource.configMapName) || (has(self.spec.costSource.format) && self.spec.costSource.format == 'TaskRecords')`,fieldPath=.spec.costSource.configMapName,reason=FieldValueForbidden,message="not used by ClusterLLMCostBudget; set spendSource, the value of the label llmbudget.dev/spend-source"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || !has(self.spec.costSource) || !has(self.spec.costSource.prometheus)`,fieldPath=.spec.costSource.prometheus,reason=FieldValueForbidden,message="not used by ClusterLLMCostBudget: it sums the spend sources of its namespaces, each written for its LLMCostBudget"
// +kubebuilder:validation:XValidation:rule=`!has(self.spec) || !has(self.spec.enforcement) || !has(self.spec.enforcement.scope) || self.spec.enforcement.scope == 'Namespace'`,fieldPath=.spec.enforcement.scope,reason=FieldValueInvalid,messageExpression=`'Unsupported value: "' + self.spec.enforcement.scope + '": supported values: "Namespace"'`
type ClusterLLMCostBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// What the budget allows, which namespaces it covers and where their spend is read from. Set limitUSD, or
	// tokenLimits, or both.
	// +required
	Spec v1alpha1.Spec `json:"spec"`
	// The budget's evaluation, written by llmbudget. Read it with kubectl get clusterllmcostbudget or kubectl
	// describe; wait for it with kubectl wait --for=condition=Ready.
	Status *v1alpha1.Status `json:"status,omitempty"`
}
