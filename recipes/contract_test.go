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

func TestWithLockBadInput(t *testing.T) {
	assert.ErrorIs(t, WithLock(context.Background(), nil, func(context.Context) error { return nil }), ErrInvalidArgument)
}

func TestDriftMargin(t *testing.T) {
	assert.Equal(t, 70*time.Millisecond, DriftMargin(6*time.Second))
	assert.Equal(t, 110*time.Millisecond, DriftMargin(10*time.Second))
}
