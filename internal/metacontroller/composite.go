package metacontroller

import "encoding/json"

// CompositeRequest is sent to a CompositeController's sync and finalize hooks.
type CompositeRequest struct {
	Parent     json.RawMessage `json:"parent"`
	Children   ObjectMap       `json:"children"`
	Related    ObjectMap       `json:"related"`
	Finalizing bool            `json:"finalizing"`
}

// CompositeResponse is a CompositeController sync or finalize answer.
type CompositeResponse struct {
	Status   any   `json:"status"`
	Children []any `json:"children"`
	Tail
}

// Tail ends each sync and finalize answer: when to resync (0: only on a watched change) and whether the object may go.
type Tail struct {
	ResyncAfterSeconds float64 `json:"resyncAfterSeconds,omitempty"`
	Finalized          bool    `json:"finalized,omitempty"`
}
