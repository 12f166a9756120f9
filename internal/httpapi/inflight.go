package httpapi

import (
	"net/http"
	"sync"
)

// MinCallWeight is what any hook call counts against the in-flight bound,
// however small its body: a call's goroutine, connection buffers and
// decoded request cost tens of KiB beyond the body itself.
const MinCallWeight = 64 << 10

// inFlight bounds the request bytes being worked on at once. A call reserves
// its weight before its body is read and releases it when answered; a call
// that does not fit is refused at once (429), never queued, so memory stays
// bounded whatever the number of callers.
type inFlight struct {
	mu    sync.Mutex
	used  int64
	limit int64
}

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

func (f *inFlight) tryAcquire(n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used+n > f.limit {
		return false
	}
	f.used += n
	return true
}

func (f *inFlight) release(n int64) {
	f.mu.Lock()
	f.used -= n
	f.mu.Unlock()
}
