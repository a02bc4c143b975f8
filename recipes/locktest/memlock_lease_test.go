package locktest

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
)

type memLease struct {
	srv      *memServer
	name     string
	h        *holding
	ctx      context.Context
	cancel   context.CancelCauseFunc
	released bool // guarded by srv.mu
}

func (s *memServer) newLease(name string, h *holding) *memLease {
	le := &memLease{srv: s, name: name, h: h}
	le.ctx, le.cancel = context.WithCancelCause(h.ctx)
	return le
}

func (le *memLease) Context() context.Context { return le.ctx }
func (le *memLease) Done() <-chan struct{}    { return le.ctx.Done() }
func (le *memLease) Token() (int64, bool) {
	if le.srv.faults.fakeToken {
		return le.h.token, true
	}
	if le.srv.noTokens {
		return 0, false
	}
	return le.h.token, true
}

func (le *memLease) Err() error {
	if le.ctx.Err() == nil {
		return nil
	}
	return context.Cause(le.ctx)
}

func (le *memLease) Release(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("memlock %s: %w: nil context", le.name, recipes.ErrInvalidArgument)
	}
	s := le.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if le.released {
		if s.faults.releaseTwiceNil {
			return nil
		}
		return fmt.Errorf("memlock %s: %w", le.name, recipes.ErrNotHeld)
	}
	le.released = true
	h := le.h
	if h.lost != nil {
		le.cancel(h.lost)
		return fmt.Errorf("memlock %s: release: %w", le.name, h.lost)
	}
	if !s.faults.keepLeaseOnRelease {
		le.cancel(recipes.ErrReleased)
	}
	if h.leases--; h.leases == 0 {
		if !s.faults.keepLeaseOnRelease {
			h.cancel(recipes.ErrReleased)
		}
		s.free(le.name, h)
	}
	return nil
}
