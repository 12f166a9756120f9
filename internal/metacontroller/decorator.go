package metacontroller

import "encoding/json"

// DecoratorRequest is sent to a DecoratorController's sync and finalize hooks.
type DecoratorRequest struct {
	Object     json.RawMessage `json:"object"`
	Related    ObjectMap       `json:"related"`
	Finalizing bool            `json:"finalizing"`
}

// DecoratorResponse is a decorator's sync or finalize answer; a nil Labels or Annotations value removes its key.
type DecoratorResponse struct {
	Labels      map[string]*string `json:"labels"`
	Annotations map[string]*string `json:"annotations"`
	Status      any                `json:"status,omitempty"`
	Attachments []any              `json:"attachments"`
	Tail
}

// CarriedBy reports whether an object with these labels and annotations already carries what r asks for: every key
// r sets has its value, and every key r removes is absent.
func (r DecoratorResponse) CarriedBy(labels, annotations map[string]string) bool {
	return carries(labels, r.Labels) && carries(annotations, r.Annotations)
}

func carries(have map[string]string, want map[string]*string) bool {
	for k, v := range want {
		if got, ok := have[k]; (v == nil && ok) || (v != nil && (!ok || got != *v)) {
			return false
		}
	}
	return true
}
