package locktest

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
)

type reentryKey struct{ l *memLocker }

type memLocker struct {
	srv    *memServer
	name   string
	shared bool // the read half
}

// sharing reports whether l takes the lock as a reader, faults included.
func (l *memLocker) sharing() bool {
	f := l.srv.faults
	return l.shared && !f.readersExclude || !l.shared && f.writerShares
}

// free reports whether l may take lk now. s.mu is held.
func (l *memLocker) free(lk *memLock) bool {
	if l.sharing() {
		return lk.held == nil && lk.writers == 0
	}
	return lk.held == nil && len(lk.readers) == 0
}

func (l *memLocker) Acquire(ctx context.Context) (recipes.Lease, error) {
	return l.acquire(ctx, true)
}

func (l *memLocker) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return l.acquire(ctx, false)
}

func (l *memLocker) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, fmt.Errorf("memlock %s: %w", l.name, err)
	}
	own, _ := ctx.Value(reentryKey{l}).(*holding)
	s := l.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	reenter := own != nil && !s.nonReentrant && !(l.shared && s.faults.noReadReentry)
	refuse := own != nil && s.nonReentrant && !s.faults.reentryWaits
	writer := !l.sharing()
	for {
		lk := s.lock(l.name)
		switch {
		case refuse && lk.holds(own):
			return nil, fmt.Errorf("memlock %s: %w", l.name, recipes.ErrNotReentrant)
		case reenter && lk.holds(own):
			own.leases++
			return s.newLease(l.name, own), nil
		case l.free(lk) || s.faults.noExclusion:
			return s.take(l, lk), nil
		case !wait:
			return nil, fmt.Errorf("memlock %s: %w", l.name, recipes.ErrLocked)
		}
		freed, done := lk.freed, ctx.Done()
		if s.faults.ignoreCancel {
			done = nil
		}
		lk.waiters++
		if writer {
			lk.writers++
		}
		s.mu.Unlock()
		select {
		case <-freed:
		case <-done:
		}
		s.mu.Lock()
		if writer {
			lk.writers--
		}
		if ctx.Err() != nil && !s.faults.ignoreCancel {
			if !s.faults.leakWaiters {
				lk.waiters--
			}
			if writer {
				lk.signal() // readers held back by this writer may go
			}
			return nil, fmt.Errorf("memlock %s: %w", l.name, recipes.NotAcquired(ctx))
		}
		lk.waiters--
	}
}
