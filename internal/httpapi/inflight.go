package httpapi

import "net/http"

// MinCallWeight is what any hook call counts against the in-flight bound,
// however small its body: a call's goroutine, connection buffers and
// decoded request cost tens of KiB beyond the body itself.
const MinCallWeight = 64 << 10

// weight is what r counts: its declared length, or the body limit when it
// declares none, and never less than MinCallWeight. A declared length over
// the body limit counts the minimum: readBody refuses it without reading.
func weight(r *http.Request, maxBody int64) int64 {
	n := r.ContentLength
	switch {
	case n < 0:
		n = maxBody
	case n > maxBody:
		n = 0
	}
	return max(n, MinCallWeight)
}
