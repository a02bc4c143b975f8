package recipes

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type owner struct{ _ int } // not zero-sized: distinct owners have distinct pointers

func TestHoldingReentryAndRelease(t *testing.T) {
	freed := 0
	o := &owner{}
	impl := &countFree{n: &freed}
	h, first := NewHolding(context.Background(), o, 7, true, impl)
	assert.Same(t, impl, h.Impl())
	assert.Same(t, h, HeldBy(first.Context(), o), "the lease's context carries the holding")
	assert.Nil(t, HeldBy(first.Context(), &owner{}), "another lock's key")
	var nilCtx context.Context
	assert.Nil(t, HeldBy(nilCtx, o))

	second := HeldBy(first.Context(), o).Reenter()
	require.NotNil(t, second)
	token, ok := second.Token()
	assert.True(t, ok)
	assert.Equal(t, int64(7), token)

	require.NoError(t, first.Release(context.Background()))
	assert.ErrorIs(t, first.Err(), ErrReleased)
	assert.NoError(t, second.Err(), "the re-entered lease lives on")
	assert.Zero(t, freed, "the lock is freed by the last lease only")
	assert.ErrorIs(t, first.Release(context.Background()), ErrNotHeld)

	require.NoError(t, second.Release(context.Background()))
	assert.Equal(t, 1, freed)
	assert.ErrorIs(t, context.Cause(h.Context()), ErrReleased)
	assert.Nil(t, HeldBy(second.Context(), o), "an ended holding is not re-entered")
	assert.Nil(t, h.Reenter())
	assert.ErrorIs(t, second.Release(nilCtx), ErrInvalidArgument, "a nil context is refused")
}

func TestHoldingLost(t *testing.T) {
	freed := false
	h, first := NewHolding(context.Background(), &owner{}, 0, false, FreeFunc(func(context.Context) error { freed = true; return nil }))
	second := h.Reenter()
	cause := errors.Join(ErrLockLost, errors.New("session expired"))
	h.Lose(cause)
	for _, l := range []*HeldLease{first, second} {
		select {
		case <-l.Done():
		case <-time.After(time.Second):
			t.Fatal("a lease of a lost holding did not end")
		}
		assert.ErrorIs(t, l.Err(), ErrLockLost)
		assert.ErrorIs(t, l.Release(context.Background()), ErrLockLost, "Release reports the loss")
	}
	assert.False(t, freed, "a lost holding is not freed by Release: the implementation cleans up")
	token, ok := first.Token()
	assert.False(t, ok, "no token: the backend said it has none")
	assert.Zero(t, token)
}

// A loss whose cause wraps ErrReleased (a member released on its own,
// ending a holding built on it) is a loss, not a release.
func TestHoldingLostWithAReleasedCause(t *testing.T) {
	freed := false
	h, l := NewHolding(context.Background(), &owner{}, 1, true, FreeFunc(func(context.Context) error { freed = true; return nil }))
	h.Lose(fmt.Errorf("%w: member gone: %w", ErrLockLost, ErrReleased))
	assert.ErrorIs(t, l.Release(context.Background()), ErrLockLost)
	assert.False(t, freed)
}

func TestHoldingFreeErrorIsReturned(t *testing.T) {
	boom := errors.New("delete failed")
	_, l := NewHolding(context.Background(), &owner{}, 1, true, FreeFunc(func(context.Context) error { return boom }))
	assert.ErrorIs(t, l.Release(context.Background()), boom)
	assert.ErrorIs(t, l.Err(), ErrReleased, "the lease ends even when freeing fails")
}

func TestDriftMargin(t *testing.T) {
	assert.Equal(t, 70*time.Millisecond, DriftMargin(6*time.Second))
	assert.Equal(t, 110*time.Millisecond, DriftMargin(10*time.Second))
}

// countFree counts its Frees.
type countFree struct{ n *int }

func (c *countFree) Free(context.Context) error { *c.n++; return nil }
