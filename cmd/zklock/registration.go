package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// registrar is register's "lock": taking it registers the instance, so
// that the runner's machinery (signals, COMMAND's process group, the
// loss's SIGTERM and exit 76, the release when COMMAND ends) serves a
// registration as it serves a lock.
type registrar struct {
	d       *discovery.Discovery
	inst    discovery.Instance
	restore time.Duration // how long the instance may be unregistered before it is lost
}

// String names the registration in messages, as a lock's String does.
func (g *registrar) String() string {
	return fmt.Sprintf("registration of %s/%s under %s", g.inst.Name, g.inst.ID, g.d.BasePath())
}

// Acquire registers the instance; it returns once the instance is
// registered, or ctx's end.
func (g *registrar) Acquire(ctx context.Context) (recipes.Lease, error) {
	reg, err := g.d.Register(ctx, g.inst)
	if err != nil {
		return nil, err
	}
	return newRegistrationLease(reg, g.restore), nil
}

// TryAcquire is Acquire: a registration does not wait for others.
func (g *registrar) TryAcquire(ctx context.Context) (recipes.Lease, error) { return g.Acquire(ctx) }

// registrationLease is a registration seen as a lease: its context ends
// when the instance is lost, that is not registered for longer than
// restore (its session's timeout: the session expired and no new session
// registered it again in that time, or the server refuses it), or when
// it is released (unregistered). A shorter absence (a connection cut, a
// server restart, a node deleted by someone else and made again) is not
// a loss: a registration, unlike a lock, excludes no one, so a gap in it
// harms no one's safety; COMMAND runs on.
type registrationLease struct {
	reg     *discovery.Registration
	restore time.Duration
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when watch returns
}

func newRegistrationLease(reg *discovery.Registration, restore time.Duration) *registrationLease {
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &registrationLease{reg: reg, restore: restore, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go l.watch()
	return l
}

// watch ends the lease when the registration is lost.
func (l *registrationLease) watch() {
	defer close(l.done)
	for {
		placed, err := l.reg.Registered(l.ctx)
		if err != nil {
			l.cancel(fmt.Errorf("%w: %w", recipes.ErrLockLost, err)) // nothing if released
			return
		}
		select {
		case <-placed.Done():
		case <-l.ctx.Done():
			return
		}
		wait, stop := context.WithTimeout(l.ctx, l.restore)
		_, err = l.reg.Registered(wait)
		stop()
		if err != nil && l.ctx.Err() == nil {
			l.cancel(fmt.Errorf("%w: not registered again within %v (the session timeout) after: %w",
				recipes.ErrLockLost, l.restore, context.Cause(placed.Context())))
			return
		}
	}
}

// describe is what the lease says of itself in messages.
func (l *registrationLease) describe() string { return "node " + l.reg.Path() }

func (l *registrationLease) Context() context.Context { return l.ctx }
func (l *registrationLease) Done() <-chan struct{}    { return l.ctx.Done() }

// Err is nil while registered (or briefly absent), then why it ended.
func (l *registrationLease) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Token: a registration has no fencing token.
func (l *registrationLease) Token() (int64, bool) { return 0, false }

// Release unregisters the instance: the watch stops first, so that the
// unregistering is not taken for a loss.
func (l *registrationLease) Release(ctx context.Context) error {
	lost := l.Err()
	l.cancel(recipes.ErrReleased)
	<-l.done
	err := l.reg.Unregister(ctx)
	switch {
	case errors.Is(lost, recipes.ErrReleased):
		return recipes.ErrNotHeld
	case lost != nil:
		return errors.Join(lost, err)
	}
	return err
}
