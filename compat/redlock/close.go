package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ErrClosed: the Client was closed (Close); its locks take the lock no
// more.
var ErrClosed = errors.New("redlock: the Client is closed")

// ErrQuiet: servers that restarted (or lost their data) less than a TTL
// ago, and so may have forgotten the lock's holder, rule a majority out:
// they grant the lock to no one until the TTL has passed. TryAcquire's
// error is then recipes.ErrLocked and ErrQuiet (also recipes.ErrQuiet),
// not when servers that hold the lock rule it out alone; Acquire waits.
var ErrQuiet = fmt.Errorf("%w: redlock: servers restarted less than a TTL ago and may have forgotten the lock's holder", recipes.ErrQuiet)

// Close waits for the Client's clean-ups that run in the background (what
// an attempt took, or a lease held, released on servers that did not
// answer in time) for ttl.CloseWait at most, and stops those still
// running then: the servers let what they leave go at its TTL. Its error
// says how many it stopped. Later Acquires and TryAcquires of its locks
// fail with an error that is recipes.ErrNotAcquired and ErrClosed; leases
// already held go on, and their Release still frees the lock. Close a
// Client before the process exits (and before closing its go-redis
// clients), so that nothing of its locks is left on the servers.
func (c *Client) Close() error {
	c.closed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), ttl.CloseWait)
	defer cancel()
	if err := c.bg.Wait(ctx); err != nil {
		return fmt.Errorf("redlock: %w", err)
	}
	return nil
}

// checkOpen is the error of an acquisition of a lock of a closed Client.
func (l *Lock) checkOpen() error {
	if l.c.closed.Load() {
		return fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, l, ErrClosed)
	}
	return nil
}
