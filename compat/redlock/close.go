package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ErrClosed: the Lock was closed (Close); it takes the lock no more.
var ErrClosed = errors.New("redlock: the Lock is closed")

// Close waits for the Lock's clean-ups that run in the background (what
// an attempt took, or a lease held, released on servers that did not
// answer in time) for ttl.CloseWait at most, and stops those still
// running then: the servers let what they leave go at its TTL. Its error
// says how many it stopped. Later Acquires and TryAcquires fail with an
// error that is recipes.ErrNotAcquired and ErrClosed; leases already
// held go on, and their Release still frees the lock. Close a Lock before
// the process exits (and before closing its go-redis clients), so that
// nothing of it is left on the servers.
func (l *Lock) Close() error {
	l.closed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), ttl.CloseWait)
	defer cancel()
	if err := l.bg.Wait(ctx); err != nil {
		return fmt.Errorf("%s: %w", l, err)
	}
	return nil
}

// checkOpen is the error of an acquisition of a closed Lock.
func (l *Lock) checkOpen() error {
	if l.closed.Load() {
		return fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, l, ErrClosed)
	}
	return nil
}
