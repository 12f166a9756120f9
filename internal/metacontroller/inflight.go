package metacontroller

import (
	"errors"
	"io"

	"golang.org/x/sync/semaphore"
)

// errBusy stops a body's read when the in-flight bound has no room for more of it.
var errBusy = errors.New("busy")

// meteredBody reads a body while holding in-flight weight for the room it reads into, and makes that room as the
// bytes arrive, not for the length the caller declares: a caller that trickles its body, or declares 4 MiB and
// sends none of it, holds a few KiB (at most MinCallWeight), so slow callers cannot starve the others of the bound.
// Room that does not fit fails the read at once with errBusy (never waits).
type meteredBody struct {
	r        io.Reader // bounded by limit
	limit    int64
	inFlight *semaphore.Weighted
	held     int64
}

// readAll appends the body to buf until EOF; declared is the length the caller declared, or -1.
func (m *meteredBody) readAll(buf []byte, declared int64) ([]byte, error) {
	end := 0 // buf is read up to here: the room held so far
	for {
		if len(buf) == end {
			// Never room past the limit and the one byte that reads EOF or trips it, which is not held.
			end = int(min(int64(end+room(len(buf), declared)), m.limit+1))
			if !m.hold(min(int64(end), m.limit)) {
				return buf, errBusy
			}
			if cap(buf) < end {
				grown := make([]byte, len(buf), end)
				buf = grown[:copy(grown, buf)]
			}
		}
		n, err := m.r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// room is how many bytes to add to a full buffer of n bytes. A declared length is made room for, and held, whole
// once the caller has sent MinCallWeight of it (what every call holds once read anyway), or at once when it is no
// more: a caller that declares 4 MiB and trickles it holds at most 64 KiB, while a real large body is read into one
// buffer of its size, and a call that cannot have it is refused after reading 64 KiB, not megabytes. Until then, and
// for a body of undeclared length, the room grows fourfold each time it fills, from 4 KiB.
func room(n int, declared int64) int {
	if declared > int64(n) && (declared <= MinCallWeight || n >= MinCallWeight) {
		return int(declared) - n + 1 // and the read that sees EOF
	}
	more := max(3*n, 4<<10)
	if declared > int64(n) {
		more = min(more, int(declared)-n+1)
	}
	return more
}

// hold tops the weight held up to at least n: the room a body is read into, then what a call holds while its
// request is decoded and answered.
func (m *meteredBody) hold(n int64) bool {
	if m.held >= n {
		return true
	}
	if !m.inFlight.TryAcquire(n - m.held) {
		return false
	}
	m.held = n
	return true
}

func (m *meteredBody) release() {
	m.inFlight.Release(m.held)
	m.held = 0
}
