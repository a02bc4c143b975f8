package hold

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
)

type owner struct{ _ int } // not zero-sized: distinct owners have distinct pointers

func TestHoldingReentryAndRelease(t *testing.T) {
	freed := 0
	o := &owner{}
	impl := &countFree{n: &freed}
	h, first := New(context.Background(), o, 7, true, impl)
	assert.Same(t, impl, h.Impl())
	assert.Same(t, h, HeldBy[*countFree](first.Context(), o), "the lease's context carries the holding")
	assert.Nil(t, HeldBy[*countFree](first.Context(), &owner{}), "another lock's key")
	var nilCtx context.Context
	assert.Nil(t, HeldBy[*countFree](nilCtx, o))

	second := HeldBy[*countFree](first.Context(), o).Reenter()
	require.NotNil(t, second)
	token, ok := second.Token()
	assert.True(t, ok)
	assert.Equal(t, int64(7), token)

	require.NoError(t, first.Release(context.Background()))
	assert.ErrorIs(t, first.Err(), recipes.ErrReleased)
	assert.NoError(t, second.Err(), "the re-entered lease lives on")
	assert.Zero(t, freed, "the lock is freed by the last lease only")
	assert.ErrorIs(t, first.Release(context.Background()), recipes.ErrNotHeld)

	require.NoError(t, second.Release(context.Background()))
	assert.Equal(t, 1, freed)
	assert.ErrorIs(t, context.Cause(h.Context()), recipes.ErrReleased)
	assert.Nil(t, HeldBy[*countFree](second.Context(), o), "an ended holding is not re-entered")
	assert.Nil(t, h.Reenter())
	assert.ErrorIs(t, second.Release(nilCtx), recipes.ErrInvalidArgument, "a nil context is refused")
}

func TestHoldingLost(t *testing.T) {
	freed := false
	h, first := New(context.Background(), &owner{}, 0, false, FreeFunc(func(context.Context) error { freed = true; return nil }))
	second := h.Reenter()
	cause := errors.Join(recipes.ErrLockLost, errors.New("session expired"))
	h.Lose(cause)
	for _, l := range []*Lease{first, second} {
		select {
		case <-l.Done():
		case <-time.After(time.Second):
			t.Fatal("a lease of a lost holding did not end")
		}
		assert.ErrorIs(t, l.Err(), recipes.ErrLockLost)
		assert.ErrorIs(t, l.Release(context.Background()), recipes.ErrLockLost, "Release reports the loss")
	}
	assert.False(t, freed, "a lost holding is not freed by Release: the implementation cleans up")
	token, ok := first.Token()
	assert.False(t, ok, "no token: the backend said it has none")
	assert.Zero(t, token)
}

// A loss whose cause wraps recipes.ErrReleased (a member released on its own,
// ending a holding built on it) is a loss, not a release.
func TestHoldingLostWithAReleasedCause(t *testing.T) {
	freed := false
	h, l := New(context.Background(), &owner{}, 1, true, FreeFunc(func(context.Context) error { freed = true; return nil }))
	h.Lose(fmt.Errorf("%w: member gone: %w", recipes.ErrLockLost, recipes.ErrReleased))
	assert.ErrorIs(t, l.Release(context.Background()), recipes.ErrLockLost)
	assert.False(t, freed)
}

func TestHoldingFreeErrorIsReturned(t *testing.T) {
	boom := errors.New("delete failed")
	_, l := New(context.Background(), &owner{}, 1, true, FreeFunc(func(context.Context) error { return boom }))
	assert.ErrorIs(t, l.Release(context.Background()), boom)
	assert.ErrorIs(t, l.Err(), recipes.ErrReleased, "the lease ends even when freeing fails")
}

// countFree counts its Frees.
type countFree struct{ n *int }

func (c *countFree) Free(context.Context) error { *c.n++; return nil }

// HeldBy gives back the implementation's own type, and nothing for a
// holding of another type stored under the same key.
func TestHeldByIsTyped(t *testing.T) {
	o := &owner{}
	impl := &countFree{n: new(int)}
	_, first := New(context.Background(), o, 1, true, impl)
	h := HeldBy[*countFree](first.Context(), o)
	require.NotNil(t, h)
	assert.Same(t, impl, h.Impl(), "the implementation's state, with no type assertion")
	assert.Nil(t, HeldBy[FreeFunc](first.Context(), o), "a holding of another type")
	require.NoError(t, first.Release(context.Background()))
}
