package locktest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// memServer is an in-memory lock server: a correct, reentrant Locker for the
// suite to run against, and, with faults set, broken ones that its checks
// must catch. Its locks are read/write locks: the Lockers of backend are
// exclusive (writers), those of sharedBackend are the read half, with the
// writers as Blockers; waiting writers keep new readers out (writer
// preference, as a queue of readers and writers does). It starts no
// goroutines.
type memServer struct {
	faults       faults
	nonReentrant bool // re-entry is refused with ErrNotReentrant
	noTokens     bool // leases have no fencing token

	mu     sync.Mutex
	locks  map[string]*memLock
	tokens int64
}

// faults break the server on purpose.
type faults struct {
	noExclusion        bool // every acquisition takes the lock
	staticToken        bool // every holder gets token 1
	releaseTwiceNil    bool // a second Release returns nil
	keepLeaseOnLoss    bool // a lost lock frees the lock but leaves the lease live
	leakWaiters        bool // a waiter whose context ends stays registered
	ignoreCancel       bool // a waiter waits for the lock whatever its context
	keepLeaseOnRelease bool // Release frees the lock but leaves the lease live

	// Faults of the read half (sharedBackend).
	readersExclude bool // a reader takes the lock as a writer would
	writerShares   bool // a writer takes the lock as a reader would
	noReadReentry  bool // a reader's re-entry waits like a new reader

	// Faults of a non-reentrant lock.
	reentryWaits bool // a re-entry waits for the lock, which it holds

	// Faults of a lock with no tokens.
	fakeToken bool // leases give a number anyway
}

type memLock struct {
	held    *holding              // the writer, nil when none
	readers map[*holding]struct{} // the readers
	// freed is closed, and replaced, whenever a holding ends or a writer
	// stops waiting: then waiters look again.
	freed   chan struct{}
	waiters int
	writers int // writers among the waiters
}

// holding is one holder's tenure: its first lease and the leases that
// re-entered it. ctx carries the reentry key.
type holding struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	token  int64
	leases int   // not yet released
	lost   error // set by lose
}

func newMemServer(f faults) *memServer {
	return &memServer{faults: f, locks: map[string]*memLock{}}
}

// backend is the Backend of s.
func (s *memServer) backend() Backend {
	return Backend{
		New: func(_ *testing.T, name string) recipes.Locker { return &memLocker{srv: s, name: name} },
		Lose: func(t *testing.T, name string, lease recipes.Lease) {
			le, ok := lease.(*memLease)
			if !ok {
				t.Fatalf("Lose: lease %T is not from this server", lease)
			}
			s.lose(le)
		},
		Leftovers: func(_ *testing.T, name string) []string { return s.leftovers(name) },
		Reentrant: !s.nonReentrant,
		NoTokens:  s.noTokens,
	}
}

// nonReentrantBackend is the Backend of s as a lock that refuses re-entry.
func (s *memServer) nonReentrantBackend() Backend {
	s.nonReentrant = true
	return s.backend()
}

// sharedBackend is the Backend of s's read half: New gives readers, Blocker
// writers.
func (s *memServer) sharedBackend() Backend {
	b := s.backend()
	b.New = func(_ *testing.T, name string) recipes.Locker { return &memLocker{srv: s, name: name, shared: true} }
	b.Shared = true
	b.Blocker = func(_ *testing.T, name string) recipes.Locker { return &memLocker{srv: s, name: name} }
	return b
}

func (s *memServer) lock(name string) *memLock {
	lk := s.locks[name]
	if lk == nil {
		lk = &memLock{readers: map[*holding]struct{}{}, freed: make(chan struct{})}
		s.locks[name] = lk
	}
	return lk
}

// signal wakes every waiter of lk to look again. s.mu is held.
func (lk *memLock) signal() {
	close(lk.freed)
	lk.freed = make(chan struct{})
}

// holds reports whether h holds lk. s.mu is held.
func (lk *memLock) holds(h *holding) bool {
	_, reader := lk.readers[h]
	return lk.held == h || reader
}

// take makes a new holding of lk for l. s.mu is held.
func (s *memServer) take(l *memLocker, lk *memLock) *memLease {
	s.tokens++
	h := &holding{token: s.tokens, leases: 1}
	if s.faults.staticToken {
		h.token = 1
	}
	h.ctx, h.cancel = context.WithCancelCause(context.WithValue(context.Background(), reentryKey{l}, h))
	switch {
	case s.faults.noExclusion:
	case l.sharing():
		lk.readers[h] = struct{}{}
	default:
		lk.held = h
	}
	return s.newLease(l.name, h)
}

// free frees name's lock if h holds it. s.mu is held.
func (s *memServer) free(name string, h *holding) {
	lk := s.locks[name]
	if !lk.holds(h) {
		return
	}
	if lk.held == h {
		lk.held = nil
	}
	delete(lk.readers, h)
	lk.signal()
}

// lose is the fault: the lock is freed and its holding ends with ErrLockLost.
func (s *memServer) lose(le *memLease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := le.h
	if h.lost != nil || h.ctx.Err() != nil {
		return
	}
	h.lost = fmt.Errorf("%w: memlock %s deleted by the test", recipes.ErrLockLost, le.name)
	if !s.faults.keepLeaseOnLoss {
		h.cancel(h.lost)
	}
	s.free(le.name, h)
}

func (s *memServer) leftovers(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lk := s.locks[name]
	if lk == nil {
		return nil
	}
	var left []string
	if lk.held != nil {
		left = append(left, fmt.Sprintf("holder with token %d", lk.held.token))
	}
	for h := range lk.readers {
		left = append(left, fmt.Sprintf("reader with token %d", h.token))
	}
	for i := range lk.waiters {
		left = append(left, fmt.Sprintf("waiter %d", i))
	}
	return left
}
