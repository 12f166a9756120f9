// The renderer: what an evaluation decided, as the Kubernetes objects a budget's CompositeController keeps: v1
// Events and a ResourceQuota. Its output is stable: an object's name and content depend only on the occurrence it
// describes, so Metacontroller, which updates children in place, never rewrites an Event it already created, and
// an Event's name is unique to its occurrence, so it is never created twice.

package controller

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
)

// The labels and annotations this service sets on what it creates; Component is its Events' source and its
// managed-by value.
const (
	Component      = "llmbudget"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	AnnotationWhy  = "llmbudget.dev/why"
	AnnotationLift = "llmbudget.dev/how-to-lift"
)

// Event is a core v1 Event, with only the fields we set.
type Event struct {
	APIVersion     string            `json:"apiVersion"`
	Kind           string            `json:"kind"`
	Metadata       metav1.ObjectMeta `json:"metadata"`
	InvolvedObject Owner             `json:"involvedObject"`
	Reason         string            `json:"reason"`
	Message        string            `json:"message"`
	Type           string            `json:"type"`
	Source         struct {
		Component string `json:"component"`
	} `json:"source"`
	FirstTimestamp metav1.Time `json:"firstTimestamp"`
	LastTimestamp  metav1.Time `json:"lastTimestamp"`
	Count          int32       `json:"count"`
}

// ResourceQuota is a core v1 ResourceQuota, with only the fields we set.
type ResourceQuota struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Hard map[string]string `json:"hard"`
	} `json:"spec"`
}

// Owner is the object children are about, and an Event's involvedObject.
type Owner struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// Namespace is empty for a cluster-scoped object and then left out, as the API server stores it, so that
	// Metacontroller sees no difference to patch.
	Namespace string `json:"namespace,omitempty"`
	UID       string `json:"uid,omitempty"`
	Budget    string `json:"-"` // the budget the object belongs to, named in its children's budget label
}

// BudgetOwner is the Owner for a budget.
func BudgetOwner(m api.ObjectMeta) Owner {
	return Owner{
		APIVersion: api.APIVersion, Kind: api.Kind, Name: m.Name, Namespace: m.Namespace, UID: m.UID, Budget: m.Name,
	}
}

// ClusterOwner is the Owner for a cluster budget.
func ClusterOwner(m api.ObjectMeta) Owner {
	return Owner{APIVersion: api.APIVersion, Kind: api.ClusterKind, Name: m.Name, UID: m.UID, Budget: m.Name}
}

// labels marks a child as ours and names its budget.
func (o Owner) labels() map[string]string {
	key := api.LabelBudget
	if o.Kind == api.ClusterKind { // a key of its own: LabelBudget names a budget of the child's namespace
		key = api.LabelClusterBudget
	}
	return map[string]string{LabelManagedBy: Component, key: o.Budget}
}

// Events renders announcements as Events about owner, sorted by name.
func Events(owner Owner, anns []evaluate.Announcement) []Event {
	out := make([]Event, 0, len(anns))
	for _, a := range anns {
		out = append(out, NewEvent(owner, a))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })
	return out
}

// NewEvent renders one announcement.
func NewEvent(owner Owner, a evaluate.Announcement) Event {
	at := metav1.NewTime(a.At.UTC().Truncate(1e9))
	ev := Event{
		APIVersion: "v1",
		Kind:       "Event",
		Metadata: metav1.ObjectMeta{
			Name: EventName(owner.Name, a.Slug, a.At.Unix()),
			// Events about a cluster-scoped object go to default, as the API server and kubectl describe do.
			Namespace: cmp.Or(owner.Namespace, "default"),
			Labels:    owner.labels(),
		},
		InvolvedObject: owner,
		Reason:         a.Reason,
		Message:        a.Message,
		Type:           a.Type,
		FirstTimestamp: at,
		LastTimestamp:  at,
		Count:          1,
	}
	ev.Source.Component = Component
	return ev
}

// EventName is "<object>.<slug>.<unix seconds>", shortened with a hash past the API server's 253 characters.
func EventName(object, slug string, unix int64) string {
	const maxLength, hashBytes = 253, 5
	name := fmt.Sprintf("%s.%s.%d", object, slug, unix)
	if len(name) <= maxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "." + hex.EncodeToString(sum[:hashBytes])
	return strings.TrimRight(name[:maxLength-len(suffix)], ".-") + suffix
}

// Quotas renders the blocking ResourceQuota in each namespace q closes. They differ only in their namespace, so they
// share one rendering's labels, annotations and limits: a cluster budget closing 10,000 namespaces holds those
// once, not 10,000 times, while its answer is written.
func Quotas(owner Owner, q *evaluate.Quota) []ResourceQuota {
	rq := Quota(owner, q, "")
	out := make([]ResourceQuota, len(q.Namespaces))
	for i, ns := range q.Namespaces {
		out[i] = rq
		out[i].Metadata.Namespace = ns
	}
	return out
}

// Quota renders the blocking ResourceQuota in namespace: the budget's own, or one a cluster budget closes.
func Quota(owner Owner, q *evaluate.Quota, namespace string) ResourceQuota {
	patch := fmt.Sprintf("kubectl -n %s patch llmcostbudget %s", owner.Namespace, owner.Name)
	if owner.Kind == api.ClusterKind {
		patch = "kubectl patch clusterllmcostbudget " + owner.Name
	}
	rq := ResourceQuota{
		APIVersion: "v1",
		Kind:       "ResourceQuota",
		Metadata: metav1.ObjectMeta{
			Name:      q.Name,
			Namespace: namespace,
			Labels:    owner.labels(),
			Annotations: map[string]string{
				AnnotationWhy: q.Why,
				AnnotationLift: "raise spec.limitUSD, set spec.suspend: true, or wait for the next period: " + patch +
					` --type=merge -p '{"spec":{"suspend":true}}'`,
			},
		},
	}
	rq.Spec.Hard = make(map[string]string, len(q.Resources))
	for _, r := range q.Resources {
		rq.Spec.Hard["count/"+r] = "0"
	}
	return rq
}
