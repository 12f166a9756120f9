package httpapi

import "github.com/llmbudget/llmbudget/internal/decode"

// decodeRequest decodes a hook request as Metacontroller wrote it: field
// names match case-sensitively, and the members a request type does not
// model are ignored (Metacontroller adds fields across versions).
func decodeRequest[T any](body []byte) (T, error) {
	var req T
	if err := decode.Lenient(body, &req, "request"); err != nil {
		return req, badRequest("%v", err)
	}
	return req, nil
}
