package promspend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
)

// ErrOverMemory is wrapped by the error of an answer read past what its plan's Share could take of a Memory.
var ErrOverMemory = errors.New("answers past the memory a run gives the answers of the budgets computed at once")

// shareStep is the least a Share grows by, so that an answer of a few MiB takes the semaphore a few times, not once
// per read.
const shareStep = 256 << 10

// Memory is what the answers of the plans asked at once may hold together: bytes of answer bodies, after
// decompression, shared by the plans of one run through a weighted semaphore. A plan's Allowance bounds one plan;
// a Memory bounds them all, however many are asked at once.
type Memory struct {
	sem  *semaphore.Weighted
	size int64
}

// NewMemory is a Memory of size bytes.
func NewMemory(size int64) *Memory {
	return &Memory{sem: semaphore.NewWeighted(size), size: size}
}

// Size is the bytes the Memory holds.
func (m *Memory) Size() int64 { return m.size }

// Share is one plan's part of a Memory: the bytes of the answers it has read, which it holds until Release.
type Share struct {
	m          *Memory
	mu         sync.Mutex
	held, used int64
	grows      bool
}

// Take waits, until ctx ends, for n bytes of m (at most its size) for one plan. A share that grows takes more, as
// the plan's answers pass n, only while m has them free: past that, an answer fails with ErrOverMemory rather
// than wait while holding memory, so that plans waiting for each other never stall the run. One that does not grow
// fails past n.
func (m *Memory) Take(ctx context.Context, n int64, grows bool) (*Share, error) {
	n = min(max(n, 0), m.size)
	if err := m.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return &Share{m: m, held: n, grows: grows}, nil
}

// Held is the bytes the share holds.
func (s *Share) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// Release gives the share's bytes back; its plan's answers must no longer be held.
func (s *Share) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.sem.Release(s.held)
	s.held, s.used = 0, 0
}

// use counts n more bytes read, taking more of the Memory when the share grows and it has them free.
func (s *Share) use(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used += n
	need := s.used - s.held
	if need <= 0 {
		return nil
	}
	if s.grows {
		step := min(max(need, shareStep), s.m.size-s.held)
		if step >= need && s.m.sem.TryAcquire(step) {
			s.held += step
			return nil
		}
	}
	if !s.grows {
		return fmt.Errorf("%w: past its %s of the run's %s", ErrOverMemory, bytesIn(s.held), bytesIn(s.m.size))
	}
	return fmt.Errorf("%w: %s of the run's %s, and no more free", ErrOverMemory, bytesIn(s.held),
		bytesIn(s.m.size))
}

type shareKey struct{}

// WithShare is ctx whose queries, by a Client, count the bytes of their answers against share.
func WithShare(ctx context.Context, share *Share) context.Context {
	return context.WithValue(ctx, shareKey{}, share)
}
