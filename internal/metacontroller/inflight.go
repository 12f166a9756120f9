package metacontroller

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"golang.org/x/sync/semaphore"
)

// errBusy stops a body's read when the in-flight bound has no room for more of it.
var errBusy = errors.New("busy")

// chunkSize is the step a body is read and held in: most syncs fit one chunk, and a body costs at most one
// chunk more than what has arrived of it.
const chunkSize = 16 << 10

// chunkPool holds read chunks (*[chunkSize]byte) for reuse; every chunk in use is held against the bound.
var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// meteredBody reads a body into chunks while holding in-flight weight for the chunks it fills, so a call holds
// what has arrived of its body (rounded up to a chunk) and its memory grows only as the bytes arrive, whatever
// the length it declares, chunked or not: a caller that trickles its body after 64 KiB, or declares 4 MiB and
// sends none of it, holds what it sent, and slow callers cannot starve the others of the bound. A chunk that
// does not fit fails the read at once with errBusy (never waits).
type meteredBody struct {
	r        io.Reader // bounded by limit
	limit    int64
	declared int64 // the request's Content-Length; -1 when not declared (chunked)
	inFlight *semaphore.Weighted
	held     int64
	chunks   []*[chunkSize]byte
}

// readAll reads the body until EOF. A body of one chunk is answered from the chunk itself; a longer one is joined
// into one buffer of its length, which takes over the weight its chunks held (it is no larger than they were).
func (m *meteredBody) readAll() ([]byte, error) {
	n := 0 // bytes read
	for {
		var p []byte
		switch {
		case int64(n) >= m.limit:
			p = make([]byte, 1) // only sees EOF or trips the limit: never a byte of the body, so never held
		case n == len(m.chunks)*chunkSize && m.direct(n):
			return m.readRest(n)
		case n == len(m.chunks)*chunkSize:
			if !m.hold(min(int64(n+chunkSize), m.limit)) {
				return nil, errBusy
			}
			c := chunkPool.Get().(*[chunkSize]byte)
			m.chunks = append(m.chunks, c)
			p = c[:]
		default:
			p = m.chunks[len(m.chunks)-1][n%chunkSize:]
		}
		k, err := m.r.Read(p)
		n += k
		if err == io.EOF {
			return m.join(n), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// direct reports whether a body that has sent n bytes is read from here on into one buffer of its declared length
// rather than into chunks: once it is large (past pooledChunks) and half of it has arrived. Its memory is then
// the body's once, not chunks and their join twice, and holding it in full costs at most twice what has arrived.
func (m *meteredBody) direct(n int) bool {
	return m.declared > pooledChunks*chunkSize && m.declared <= m.limit && int64(n)*2 >= m.declared
}

// readRest holds the declared length, moves the n bytes read into one buffer of that length and reads the rest
// into it.
func (m *meteredBody) readRest(n int) ([]byte, error) {
	if !m.hold(m.declared) {
		return nil, errBusy
	}
	body := make([]byte, m.declared)
	m.joinInto(body)
	// The chunks are garbage now, half the body's size; the collector would next run only once the heap doubled
	// from them and the body together. For a cluster-sized body, collecting here is cheap (the body holds no
	// pointers) and lets the decoding that follows grow the heap from the body alone.
	if m.declared >= collectFrom {
		runtime.GC()
	}
	for n < len(body) {
		k, err := m.r.Read(body[n:])
		n += k
		if err == io.EOF && n < len(body) {
			return nil, fmt.Errorf("the body ended after %d of the %d bytes its Content-Length declares", n, len(body))
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
	}
	return body, nil
}

// join is the n bytes read, in one slice.
func (m *meteredBody) join(n int) []byte {
	switch len(m.chunks) {
	case 0:
		return nil
	case 1:
		return m.chunks[0][:n]
	}
	body := make([]byte, n)
	m.joinInto(body)
	return body
}

// joinInto copies the chunks into body and lets them go.
func (m *meteredBody) joinInto(body []byte) {
	for i, c := range m.chunks {
		copy(body[i*chunkSize:], c[:])
		if i < pooledChunks {
			chunkPool.Put(c)
		}
		m.chunks[i] = nil // garbage now: a large body's chunks must not stay live beside the body
	}
	m.chunks = nil
}

// collectFrom is the least body a collection follows: one larger than any ordinary sync (DefaultMaxBodyBytes).
const collectFrom = DefaultMaxBodyBytes

// pooledChunks is how many of a body's chunks go back to the pool: enough for the ordinary calls in flight at
// once. The pool keeps what it holds alive across a garbage collection, so the chunks of a 30 MB body, put back,
// would stay beside the body the hook is reading.
const pooledChunks = 8

// hold tops the weight held up to at least n: the chunks a body is read into, then what a call holds while its
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

// release gives back the weight held and the chunks, once nothing reads the body any more.
func (m *meteredBody) release() {
	m.inFlight.Release(m.held)
	m.held = 0
	for _, c := range m.chunks {
		chunkPool.Put(c)
	}
	m.chunks = nil
}
