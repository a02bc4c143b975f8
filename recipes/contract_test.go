package recipes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNotAcquired(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := NotAcquired(ctx)
	assert.ErrorIs(t, err, ErrNotAcquired)
	assert.ErrorIs(t, err, context.Canceled)

	cause := errors.New("shutting down")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	err = NotAcquired(ctx)
	assert.ErrorIs(t, err, ErrNotAcquired)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, cause)

	assert.ErrorIs(t, ErrLocked, ErrNotAcquired)
	var nilCtx context.Context
	assert.ErrorIs(t, CheckContext(nilCtx), ErrInvalidArgument)
	assert.ErrorIs(t, CheckContext(ctx), ErrNotAcquired)
	assert.NoError(t, CheckContext(context.Background()))
}

// An Acquire whose last attempt failed says so: ErrUnreachable and that
// attempt's error, besides ErrNotAcquired and ctx's; without a failed
// attempt it is NotAcquired's error.
func TestNotAcquiredAfter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	last := errors.New("dial tcp 127.0.0.1:1: connection refused")
	err := NotAcquiredAfter(ctx, last)
	assert.ErrorIs(t, err, ErrNotAcquired)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, ErrUnreachable)
	assert.ErrorIs(t, err, last)
	assert.Contains(t, err.Error(), "last attempt: ")

	err = NotAcquiredAfter(ctx, nil)
	assert.ErrorIs(t, err, ErrNotAcquired)
	assert.NotErrorIs(t, err, ErrUnreachable)
}

func TestWithLockBadInput(t *testing.T) {
	assert.ErrorIs(t, WithLock(context.Background(), nil, func(context.Context) error { return nil }), ErrInvalidArgument)
}

func TestDriftMargin(t *testing.T) {
	assert.Equal(t, 70*time.Millisecond, DriftMargin(6*time.Second))
	assert.Equal(t, 110*time.Millisecond, DriftMargin(10*time.Second))
}
