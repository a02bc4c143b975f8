package multilock_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// memServer is an in-memory lock server for the unit tests: exclusive,
// reentrant (unless the Locker says not) locks by name, with fencing
// tokens, a log of what was taken and freed, and faults to inject. It
// starts no goroutines.
type memServer struct {
	mu         sync.Mutex
	held       map[string]*hold.Holding[hold.FreeFunc]
	waiting    map[string]int
	freed      chan struct{} // closed and replaced whenever a lock is freed
	tokens     int64
	log        []string
	acquireErr map[string]error // Acquire of the name fails with it
	releaseErr map[string]error // Release of the name frees it but returns it
}

func newMemServer() *memServer {
	return &memServer{
		held: map[string]*hold.Holding[hold.FreeFunc]{}, waiting: map[string]int{}, freed: make(chan struct{}),
		acquireErr: map[string]error{}, releaseErr: map[string]error{},
	}
}

// memLocker is a contender for one lock of a memServer.
type memLocker struct {
	s            *memServer
	name         string
	nonReentrant bool
}

func (s *memServer) locker(name string) *memLocker { return &memLocker{s: s, name: name} }

// String names the in-memory lock in messages, as every lock of zkrecipes
// names itself ("mutex /locks/orders", "redislock orders"): multilock's
// errors and MultiLock.String use it.
func (l *memLocker) String() string { return "memlock " + l.name }

func (l *memLocker) Acquire(ctx context.Context) (recipes.Lease, error) { return l.take(ctx, true) }

func (l *memLocker) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.take(ctx, false) }

func (l *memLocker) take(ctx context.Context, wait bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if h := hold.HeldBy[hold.FreeFunc](ctx, l); h != nil {
		if l.nonReentrant {
			return nil, fmt.Errorf("%w: mem %s", recipes.ErrNotReentrant, l.name)
		}
		if le := h.Reenter(); le != nil {
			return le, nil
		}
	}
	s := l.s
	for {
		s.mu.Lock()
		if err := s.acquireErr[l.name]; err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if s.held[l.name] == nil {
			s.tokens++
			var rh *hold.Holding[hold.FreeFunc]
			rh, first := hold.New(ctx, l, s.tokens, true, hold.FreeFunc(func(context.Context) error {
				return s.free(l.name, rh)
			}))
			s.held[l.name] = rh
			s.log = append(s.log, "take "+l.name)
			s.mu.Unlock()
			return first, nil
		}
		if !wait {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: mem %s", recipes.ErrLocked, l.name)
		}
		s.waiting[l.name]++
		freed := s.freed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.waiting[l.name]--
		s.mu.Unlock()
		if ctx.Err() != nil {
			return nil, recipes.NotAcquired(ctx)
		}
	}
}

// free frees name if rh holds it. s.mu is not held.
func (s *memServer) free(name string, rh *hold.Holding[hold.FreeFunc]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[name] != rh {
		return fmt.Errorf("%w: mem %s: gone", recipes.ErrLockLost, name)
	}
	delete(s.held, name)
	s.log = append(s.log, "free "+name)
	close(s.freed)
	s.freed = make(chan struct{})
	return s.releaseErr[name]
}

// lose is the fault: name is freed under its holder, whose leases end with
// ErrLockLost.
func (s *memServer) lose(name string) {
	s.mu.Lock()
	rh := s.held[name]
	delete(s.held, name)
	s.log = append(s.log, "lose "+name)
	close(s.freed)
	s.freed = make(chan struct{})
	s.mu.Unlock()
	if rh != nil {
		rh.Lose(fmt.Errorf("%w: mem %s deleted by the test", recipes.ErrLockLost, name))
	}
}

// leftovers lists what is held or waited for among names.
func (s *memServer) leftovers(names ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var left []string
	for _, name := range names {
		if s.held[name] != nil {
			left = append(left, "holder of "+name)
		}
		if n := s.waiting[name]; n > 0 {
			left = append(left, fmt.Sprintf("%d waiters of %s", n, name))
		}
	}
	return left
}

// isWaiting reports whether someone waits for name.
func (s *memServer) isWaiting(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting[name] > 0
}

// events returns the log so far and clears it.
func (s *memServer) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.log
	s.log = nil
	return log
}
