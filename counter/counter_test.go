package counter_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/counter"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
)

func TestLong(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	ctx := ctxT(t)
	path := pathOf(t, "long")
	l, err := counter.NewLong(c, path)
	require.NoError(t, err)
	n, err := l.Get(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "absent reads as 0")
	_, err = c.Create(ctx, path, nil, session.Persistent)
	require.NoError(t, err)
	n, err = l.Get(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "empty reads as 0")

	r, err := l.Add(ctx, 1<<40)
	require.NoError(t, err)
	assert.Equal(t, counter.Result[int64]{Pre: 0, Post: 1 << 40}, r)
	data, _, err := c.Get(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 1, 0, 0, 0, 0, 0}, data, "Curator's bytes: 8, big-endian")
	r, err = l.Decrement(ctx)
	require.NoError(t, err)
	assert.Equal(t, counter.Result[int64]{Pre: 1 << 40, Post: 1<<40 - 1}, r)
	r, err = l.TrySet(ctx, -5)
	require.NoError(t, err)
	assert.Equal(t, counter.Result[int64]{Pre: 1<<40 - 1, Post: -5}, r)

	r, err = l.CompareAndSet(ctx, 7, 8)
	require.ErrorIs(t, err, counter.ErrNotApplied)
	assert.Equal(t, counter.Result[int64]{Pre: -5, Post: 8}, r)
	r, err = l.CompareAndSet(ctx, -5, 8)
	require.NoError(t, err)
	assert.Equal(t, counter.Result[int64]{Pre: -5, Post: 8}, r)

	require.NoError(t, l.Set(ctx, math.MaxInt64))
	r, err = l.Increment(ctx) // wraps, as Java's long
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt64), r.Post)

	ok, err := l.Initialize(ctx, 3)
	require.NoError(t, err)
	assert.False(t, ok, "it exists")
	require.NoError(t, c.Delete(ctx, path, -1))
	ok, err = l.Initialize(ctx, 3)
	require.NoError(t, err)
	assert.True(t, ok)
	n, err = l.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)

	_, err = c.Set(ctx, path, []byte{1, 2, 3}, -1)
	require.NoError(t, err)
	_, err = l.Get(ctx)
	assert.ErrorIs(t, err, counter.ErrBadData)
	_, err = l.Increment(ctx)
	assert.ErrorIs(t, err, counter.ErrBadData)
	data, _, err = c.Get(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2, 3}, data, "left as it was")
}

// Int holds a shared.Count's bytes: both read one node.
func TestInt(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	ctx := ctxT(t)
	path := pathOf(t, "int")
	i, err := counter.NewInt(c, path)
	require.NoError(t, err)
	r, err := i.CompareAndSet(ctx, 0, 41) // absent holds 0: created
	require.NoError(t, err)
	assert.Equal(t, counter.Result[int32]{Pre: 0, Post: 41}, r)
	r, err = i.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, counter.Result[int32]{Pre: 41, Post: 42}, r)
	count, err := shared.NewCount(c, path, 0)
	require.NoError(t, err)
	n, _, err := count.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, 42, n)
	require.NoError(t, count.Set(ctx, math.MaxInt32))
	r, err = i.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, counter.Result[int32]{Pre: math.MaxInt32, Post: math.MinInt32}, r)
}

func TestValue(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	ctx := ctxT(t)
	v, err := counter.NewValue(c, pathOf(t, "value"), counter.WithLock(pathOf(t, "lock")))
	require.NoError(t, err)
	got, err := v.Get(ctx)
	require.NoError(t, err)
	assert.Nil(t, got)
	r, err := v.CompareAndSet(ctx, []byte("x"), []byte("y"))
	require.ErrorIs(t, err, counter.ErrNotApplied)
	assert.Nil(t, r.Pre)
	r, err = v.CompareAndSet(ctx, nil, []byte("one"))
	require.NoError(t, err)
	assert.Equal(t, "one", string(r.Post))
	r, err = v.TrySet(ctx, []byte("two"))
	require.NoError(t, err)
	assert.Equal(t, counter.Result[[]byte]{Pre: []byte("one"), Post: []byte("two")}, r)
	require.NoError(t, v.Set(ctx, []byte("three")))
	got, err = v.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "three", string(got))
}

// Writers on clients of their own add to one counter at once: no
// increment is lost, none is counted twice. A writer may give up
// (ErrNotApplied, nothing written), except when every writer goes to the
// lock after one optimistic try: then the holder loses at most once to
// each other writer, within DefaultRetry's tries, and every increment
// applies.
func TestConcurrentIncrements(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     func(t *testing.T) []counter.Option
		allApply bool
	}{
		{"optimistic", func(*testing.T) []counter.Option { return nil }, false},
		{"promoted", func(t *testing.T) []counter.Option {
			return []counter.Option{counter.WithRetry(session.NoRetry{}), counter.WithLock(pathOf(t, "lock"))}
		}, true},
		{"optimistic then promoted", func(t *testing.T) []counter.Option {
			return []counter.Option{counter.WithLock(pathOf(t, "lock"))}
		}, false}, // under the lock, still racing others' optimistic retries
	} {
		t.Run(tc.name, func(t *testing.T) {
			const writers, each = 4, 25
			path := pathOf(t, "n")
			var wg sync.WaitGroup
			applied := make([]int64, writers)
			errs := make(chan error, writers*each)
			for w := range writers {
				l, err := counter.NewLong(zktest.Connect(t, sharedServers(t)), path, tc.opts(t)...)
				require.NoError(t, err)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						_, err := l.Increment(ctxT(t))
						if err == nil {
							applied[w]++
						} else {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			var total int64
			for _, n := range applied {
				total += n
			}
			for err := range errs {
				require.ErrorIs(t, err, counter.ErrNotApplied, "the only error without faults")
				require.False(t, tc.allApply, "promoted, every increment applies: %v", err)
			}
			l, err := counter.NewLong(zktest.Connect(t, sharedServers(t)), path)
			require.NoError(t, err)
			n, err := l.Get(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, total, n, "every applied increment, and no other")
			if tc.allApply {
				assert.Equal(t, int64(writers*each), n)
				kids := zktest.Children(t, zktest.Connect(t, sharedServers(t)), pathOf(t, "lock"))
				assert.Empty(t, kids, "no lock node left")
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	l, err := counter.NewLong(c, "/x")
	require.NoError(t, err)
	for _, tc := range []struct {
		why string
		err func() error
	}{
		{"NewLong: nil client", func() error { _, err := counter.NewLong(nil, "/x"); return err }},
		{"NewInt: relative path", func() error { _, err := counter.NewInt(c, "x"); return err }},
		{"NewValue: trailing slash", func() error { _, err := counter.NewValue(c, "/x/"); return err }},
		{"NewLong: nil Option", func() error { _, err := counter.NewLong(c, "/x", nil); return err }},
		{"NewLong: nil retry", func() error { _, err := counter.NewLong(c, "/x", counter.WithRetry(nil)); return err }},
		{"NewLong: bad lock path", func() error { _, err := counter.NewLong(c, "/x", counter.WithLock("y")); return err }},
		{"NewLong: lock path is the counter", func() error { _, err := counter.NewLong(c, "/x", counter.WithLock("/x")); return err }},
		{"Get: nil context", func() error { _, err := l.Get(nilContext()); return err }},
		{"Add: nil context", func() error { _, err := l.Add(nilContext(), 1); return err }},
		{"CompareAndSet: nil context", func() error { _, err := l.CompareAndSet(nilContext(), 1, 2); return err }},
		{"Set: nil context", func() error { return l.Set(nilContext(), 1) }},
	} {
		err := tc.err()
		require.Error(t, err, tc.why)
		assert.True(t, errors.Is(err, recipes.ErrInvalidArgument), "%s: %v", tc.why, err)
		assert.Contains(t, err.Error(), "counter: ", tc.why)
	}
}

// nilContext is a nil context, through a variable so that vet lets it be.
func nilContext() context.Context {
	var ctx context.Context
	return ctx
}
