package metacontroller

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CustomizeRequest is sent to a customize hook; the watched object is its "parent" for either controller kind.
type CustomizeRequest struct {
	Parent json.RawMessage `json:"parent"`
}

// CustomizeResponse names the related objects Metacontroller should watch and pass to sync.
type CustomizeResponse struct {
	RelatedResources []RelatedResourceRule `json:"relatedResources"`
}

// RelatedResourceRule selects related objects by resource and names.
type RelatedResourceRule struct {
	APIVersion        string                `json:"apiVersion"`
	Resource          string                `json:"resource"`
	LabelSelector     *metav1.LabelSelector `json:"labelSelector,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"` // never with Namespace or Names
	Namespace         string                `json:"namespace,omitempty"`
	Names             []string              `json:"names,omitempty"`
}
