package shared_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
)

func TestCount(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	ctx := ctxT(t)
	path := pathOf(t, "count")
	count, err := shared.NewCount(c, path, -7)
	require.NoError(t, err)
	n, version, err := count.Get(ctx) // created with the seed
	require.NoError(t, err)
	assert.Equal(t, -7, n)
	data, _, err := c.Get(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xf9}, data, "Curator's bytes: 4, big-endian, signed")

	ok, err := count.TrySet(ctx, 3, version)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = count.TrySet(ctx, 4, version) // that version is gone
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, count.Set(ctx, math.MaxInt32))
	n, _, err = count.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, math.MaxInt32, n)

	require.NoError(t, c.Delete(ctx, path, -1))
	require.NoError(t, count.Set(ctx, 9)) // creates it
	n, _, err = count.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, 9, n)

	_, err = c.Set(ctx, path, []byte("abc"), -1)
	require.NoError(t, err)
	_, _, err = count.Get(ctx)
	assert.ErrorIs(t, err, shared.ErrNotCount)
}

func TestValue(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	ctx := ctxT(t)
	v, err := shared.NewValue(c, pathOf(t, "value"), []byte("seed"))
	require.NoError(t, err)
	got, err := v.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "seed", string(got.Value))
	ok, err := v.TrySet(ctx, []byte("one"), got.Version)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = v.TrySet(ctx, []byte("two"), got.Version)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, v.Set(ctx, nil))
	got, err = v.Get(ctx)
	require.NoError(t, err)
	assert.Empty(t, got.Value)
	assert.Equal(t, int32(2), got.Version)
}

// Changes delivers the current value, then each write another client
// makes; a write of other than 4 bytes to a count is an error in the
// stream, which goes on.
func TestChanges(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	writer := zktest.Connect(t, sharedServers(t))
	ctx := ctxT(t)
	path := pathOf(t, "count")
	count, err := shared.NewCount(c, path, 1)
	require.NoError(t, err)
	other, err := shared.NewCount(writer, path, 1)
	require.NoError(t, err)
	changes, err := count.Changes(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, next(t, changes).Value)
	for i := 2; i <= 5; i++ {
		require.NoError(t, other.Set(ctx, i))
		ch := next(t, changes)
		require.NoError(t, ch.Err)
		assert.Equal(t, i, ch.Value)
		assert.Equal(t, int32(i-1), ch.Version)
	}
	_, err = writer.Set(ctx, path, []byte("x"), -1)
	require.NoError(t, err)
	assert.ErrorIs(t, next(t, changes).Err, shared.ErrNotCount)
	require.NoError(t, other.Set(ctx, 6))
	assert.Equal(t, 6, next(t, changes).Value)
}

// Changes ends, and closes its channel, when its context ends or the
// client is closed.
func TestChangesEnd(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	v, err := shared.NewValue(c, pathOf(t, "v"), nil)
	require.NoError(t, err)
	ctx, cancel := contextT(t)
	changes, err := v.Changes(ctx)
	require.NoError(t, err)
	next(t, changes)
	cancel()
	closed(t, changes)

	changes, err = v.Changes(ctxT(t))
	require.NoError(t, err)
	next(t, changes)
	c.Close()
	closed(t, changes)
	_, err = v.Changes(ctxT(t))
	assert.ErrorIs(t, err, session.ErrClosed)
}

// A write made while the watcher was cut off is delivered once it is
// back: to the same session (whose watch the client sets again), and to a
// new one after its session expired, under which no watch of it was left
// (CURATOR-311: Curator's SharedValue kept the stale value until the next
// write).
func TestChangesAcrossFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		lost bool
	}{
		{"cut", false},
		{"session expired", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := sharedServers(t)
			p := harness.NewProxy(t, servers[0])
			c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			writer := zktest.Connect(t, servers)
			ctx := ctxT(t)
			path := pathOf(t, "value")
			v, err := shared.NewValue(c, path, []byte("first"))
			require.NoError(t, err)
			states, err := c.Subscribe(ctx)
			require.NoError(t, err)
			changes, err := v.Changes(ctx)
			require.NoError(t, err)
			assert.Equal(t, "first", string(next(t, changes).Value))
			before := c.CurrentSession().ID()

			if tc.lost {
				p.Blackhole(t)
				zktest.AwaitState(t, states, session.Lost)
			} else {
				p.Cut(t)
				zktest.AwaitState(t, states, session.Suspended)
			}
			_, err = writer.Set(ctx, path, []byte("while away"), -1)
			require.NoError(t, err)
			p.Restore(t)
			ch := next(t, changes)
			assert.Equal(t, "while away", string(ch.Value))
			assert.Equal(t, int32(1), ch.Version)
			if tc.lost {
				assert.NotEqual(t, before, c.CurrentSession().ID(), "a new session")
			}

			_, err = writer.Set(ctx, path, []byte("after"), -1)
			require.NoError(t, err)
			assert.Equal(t, "after", string(next(t, changes).Value))
		})
	}
}

func TestBadInput(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	for _, tc := range []struct {
		why string
		err func() error
	}{
		{"NewCount: nil client", func() error { _, err := shared.NewCount(nil, "/x", 1); return err }},
		{"NewCount: relative path", func() error { _, err := shared.NewCount(c, "x", 1); return err }},
		{"NewCount: seed past 32 bits", func() error { _, err := shared.NewCount(c, "/x", 1<<31); return err }},
		{"NewValue: nil client", func() error { _, err := shared.NewValue(nil, "/x", nil); return err }},
		{"NewValue: trailing slash", func() error { _, err := shared.NewValue(c, "/x/", nil); return err }},
		{"TrySet: past 32 bits", func() error {
			count, err := shared.NewCount(c, "/x", 1)
			if err != nil {
				return err
			}
			_, err = count.TrySet(ctxT(t), -1<<31-1, 0)
			return err
		}},
		{"Set: past 32 bits", func() error {
			count, err := shared.NewCount(c, "/x", 1)
			if err != nil {
				return err
			}
			return count.Set(ctxT(t), 1<<31)
		}},
	} {
		err := tc.err()
		require.Error(t, err, tc.why)
		assert.True(t, errors.Is(err, recipes.ErrInvalidArgument), "%s: %v", tc.why, err)
	}
}
