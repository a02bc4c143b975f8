package barrier

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The errors of package barrier; test them with errors.Is.
var (
	// ErrInvalidArgument: bad input (nil context or client, invalid path,
	// a threshold below 1). It is recipes.ErrInvalidArgument too.
	ErrInvalidArgument = fmt.Errorf("barrier: %w", recipes.ErrInvalidArgument)
	// ErrNotThrough: a wait (WaitOnBarrier, Enter, Leave) returned before
	// the barrier let the caller through. The error is also the reason:
	// the context's error and its cause, ErrMemberLost, session.ErrClosed
	// or the server's error.
	ErrNotThrough = errors.New("barrier: not through")
	// ErrMemberLost: a double barrier member's node went away while it
	// waited, with the session that owned it (expired, or given up by the
	// client after a suspension longer than the session timeout) or
	// deleted by someone else. The others no longer count the member. It
	// is always ErrNotThrough too.
	ErrMemberLost = errors.New("barrier: member node lost")
	// ErrEntered: Enter on a Double that is in the barrier already.
	ErrEntered = errors.New("barrier: already entered")
	// ErrNotEntered: Leave on a Double that has not entered.
	ErrNotEntered = errors.New("barrier: not entered")
	// ErrBusy: Enter or Leave on a Double whose Enter or Leave is running
	// (one Double is one member: give each goroutine its own).
	ErrBusy = errors.New("barrier: Enter or Leave already running")
)

// Barrier is Curator's DistributedBarrier: a persistent node at a path
// that, while it exists, holds back everyone who waits on it. Its methods
// are safe for concurrent use.
type Barrier struct {
	c    *session.Client
	path string
}

// NewBarrier returns the barrier at path on c. It does no I/O; it returns
// an ErrInvalidArgument error for a nil client or an invalid path.
func NewBarrier(c *session.Client, path string) (*Barrier, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return &Barrier{c: c, path: path}, nil
}

// Path is the barrier node's path.
func (b *Barrier) Path() string { return b.path }

// SetBarrier creates the barrier node (persistent, empty; missing parents
// as containers). A barrier already set is no error.
func (b *Barrier) SetBarrier(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	_, err := b.c.Create(ctx, b.path, nil, session.Persistent)
	if err != nil && !errors.Is(err, session.ErrNodeExists) {
		return fmt.Errorf("barrier: set %s: %w", b.path, err)
	}
	return nil
}

// RemoveBarrier deletes the barrier node, which lets every waiter
// through. A barrier not set is no error.
func (b *Barrier) RemoveBarrier(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if err := b.c.Delete(ctx, b.path, -1); err != nil && !errors.Is(err, session.ErrNoNode) {
		return fmt.Errorf("barrier: remove %s: %w", b.path, err)
	}
	return nil
}

// WaitOnBarrier returns nil once the barrier node does not exist (at
// once when it is not set), or an ErrNotThrough error when ctx ends or the
// client is closed first. The node is persistent, so a suspended
// connection or a new session changes nothing: the wait goes on, and looks
// again once connected (a watch set in a lost session is gone).
func (b *Barrier) WaitOnBarrier(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watches left behind
	for {
		ok, _, watch, err := b.c.ExistsW(wctx, b.path)
		if err != nil {
			return notThrough(ctx, err)
		}
		if !ok {
			return nil
		}
		// Any wakeup (the node deleted, changed, a watch ended by a new
		// connection) is only a reason to look again.
		select {
		case <-watch:
		case <-ctx.Done():
			return notThrough(ctx, nil)
		}
	}
}

// checkContext refuses a nil or finished context.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if ctx.Err() != nil {
		return notThrough(ctx, nil)
	}
	return nil
}

// notThrough is the ErrNotThrough error for err, or, when ctx has ended,
// for ctx's error and its cause (the request's own error is then only
// its symptom), or the error that ended a member's wait (see follower).
func notThrough(ctx context.Context, err error) error {
	var e *ended
	if errors.As(context.Cause(ctx), &e) {
		return e.err // the member's end, not a cancellation by the caller
	}
	if ctx.Err() != nil {
		err, cause := ctx.Err(), context.Cause(ctx)
		if errors.Is(cause, err) {
			return fmt.Errorf("%w: %w", ErrNotThrough, cause)
		}
		return fmt.Errorf("%w: %w (%w)", ErrNotThrough, err, cause)
	}
	return fmt.Errorf("%w: %w", ErrNotThrough, err)
}
