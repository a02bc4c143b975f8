package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestSimpleQueue(t *testing.T) {
	c := zktest.Connect(t, zktest.Shared(t))
	ctx := ctxT(t)
	path := root(t)
	q, err := queue.NewSimple(c, path)
	require.NoError(t, err)

	_, err = q.Poll(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty, "a queue whose path is not there yet")
	for _, s := range []string{"a", "", "c"} {
		p, err := q.Offer(ctx, []byte(s))
		require.NoError(t, err)
		assert.Regexp(t, `/qn-\d{10}$`, p)
	}
	// A foreign node is left alone.
	_, err = c.Create(ctx, path+"/other", nil, session.Persistent)
	require.NoError(t, err)
	head, err := q.Peek(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", string(head))
	for _, want := range []string{"a", "", "c"} {
		got, err := q.Poll(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	_, err = q.Poll(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	_, err = q.Peek(ctx)
	require.ErrorIs(t, err, queue.ErrEmpty)
	assert.Equal(t, []string{"other"}, children(t, c, path))

	// Take waits for an offer.
	got := make(chan []byte, 1)
	go func() {
		b, err := q.Take(ctx)
		assert.NoError(t, err)
		got <- b
	}()
	time.Sleep(zktest.StillWaiting)
	select {
	case b := <-got:
		t.Fatalf("Take returned %q from an empty queue", b)
	default:
	}
	_, err = q.Offer(ctx, []byte("late"))
	require.NoError(t, err)
	select {
	case b := <-got:
		assert.Equal(t, "late", string(b))
	case <-time.After(waitLimit):
		t.Fatal("Take never returned")
	}

	// Take ends with its context, with its cause.
	cause := errors.New("enough")
	cctx, cancel := context.WithCancelCause(ctx)
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	_, err = q.Take(cctx)
	require.ErrorIs(t, err, cause)
}

// Each kind, a Go producer and Go consumers (one with a lock path, one
// without): every item delivered once, in the kind's order; nothing left
// under the lock path.
func TestConsumeOrder(t *testing.T) {
	c := zktest.Connect(t, zktest.Shared(t))
	for _, locked := range []bool{true, false} {
		t.Run(fmt.Sprintf("lock=%v", locked), func(t *testing.T) {
			for _, tc := range orderCases() {
				t.Run(tc.kind.String(), func(t *testing.T) {
					path := root(t)
					var opts []queue.Option
					opts = append(opts, queue.WithKind(tc.kind))
					if locked {
						opts = append(opts, queue.WithLockPath(path+"-locks"))
					}
					q := newQueue(t, c, path, opts...)
					start := time.Now()
					tc.put(t, goProducer{q})
					cons := consume(t, q, nil)
					got := cons.await(t, len(tc.want))
					assert.Equal(t, tc.want, got)
					if tc.kind == queue.Delay {
						assert.True(t, time.Since(start) >= tc.notBefore, "a delayed item came before it was due")
					}
					zktest.WaitForNodes(t, c, path, 0)
					cons.stop(t) // it deletes a lock node after its item: wait for it
					if locked {
						assert.Empty(t, children(t, c, path+"-locks"))
					}
					assert.Len(t, cons.got(), len(tc.want), "an item delivered twice")
				})
			}
		})
	}
}

// producer puts on a queue: the Go one or Curator's.
type producer interface {
	put(t testing.TB, kind queue.Kind, arg string, items ...string)
}

type goProducer struct{ q *queue.Queue }

func (p goProducer) put(t testing.TB, kind queue.Kind, arg string, items ...string) {
	t.Helper()
	var bs [][]byte
	for _, it := range items {
		bs = append(bs, []byte(it))
	}
	ctx := ctxT(t)
	var err error
	switch kind {
	case queue.FIFO:
		_, err = p.q.Put(ctx, bs...)
	case queue.Priority:
		var prio int32
		_, err = fmt.Sscan(arg, &prio)
		require.NoError(t, err)
		_, err = p.q.PutPriority(ctx, prio, bs...)
	case queue.Delay:
		var ms int64
		_, err = fmt.Sscan(arg, &ms)
		require.NoError(t, err)
		_, err = p.q.PutDelayed(ctx, time.UnixMilli(ms), bs...)
	case queue.ID:
		_, err = p.q.PutID(ctx, arg, bs...)
	}
	require.NoError(t, err)
}

type orderCase struct {
	kind      queue.Kind
	put       func(t testing.TB, p producer)
	want      []string
	notBefore time.Duration // Delay: the last item's delay
}

// orderCases are the puts of each kind before a consumer starts, and the
// order a single consumer must take them in.
func orderCases() []orderCase {
	delay := 700 * time.Millisecond
	return []orderCase{
		{kind: queue.FIFO, put: func(t testing.TB, p producer) {
			p.put(t, queue.FIFO, "", "1")
			p.put(t, queue.FIFO, "", "2", "3", "4") // putMulti: one node
			p.put(t, queue.FIFO, "", "")
		}, want: []string{"1", "2", "3", "4", ""}},
		{kind: queue.Priority, put: func(t testing.TB, p producer) {
			p.put(t, queue.Priority, "5", "p5")
			p.put(t, queue.Priority, "-3", "n3a", "n3b")
			p.put(t, queue.Priority, "0", "p0")
			p.put(t, queue.Priority, "-3", "n3c")
			p.put(t, queue.Priority, "-2147483648", "min")
		}, want: []string{"min", "n3a", "n3b", "n3c", "p0", "p5"}},
		{kind: queue.Delay, notBefore: delay, put: func(t testing.TB, p producer) {
			now := time.Now()
			p.put(t, queue.Delay, fmt.Sprint(now.Add(delay).UnixMilli()), "late")
			p.put(t, queue.Delay, fmt.Sprint(now.Add(-time.Hour).UnixMilli()), "past1", "past2")
			p.put(t, queue.Delay, fmt.Sprint(now.Add(delay/2).UnixMilli()), "soon")
		}, want: []string{"past1", "past2", "soon", "late"}},
		{kind: queue.ID, put: func(t testing.TB, p producer) {
			p.put(t, queue.ID, "z", "z1")
			p.put(t, queue.ID, "a/b", "ab")
			p.put(t, queue.ID, "z", "z2")
		}, want: []string{"z1", "ab", "z2"}},
	}
}

// A handler's error puts the item back (Requeue) and it comes again; with
// Drop it is gone.
func TestErrorModes(t *testing.T) {
	c := zktest.Connect(t, zktest.Shared(t))
	for _, tc := range []struct {
		mode queue.ErrorMode
		want []string
	}{
		{queue.Requeue, []string{"a", "bad", "b", "bad"}},
		{queue.Drop, []string{"a", "bad", "b"}},
	} {
		t.Run(fmt.Sprint(tc.mode), func(t *testing.T) {
			path := root(t)
			q := newQueue(t, c, path, queue.WithKind(queue.Priority), queue.WithLockPath(path+"-locks"), queue.WithErrorMode(tc.mode))
			for i, s := range []string{"a", "bad", "b"} {
				_, err := q.PutPriority(ctxT(t), int32(i), []byte(s))
				require.NoError(t, err)
			}
			failed := false
			cons := consume(t, q, func(_ context.Context, item []byte) error {
				if string(item) == "bad" && !failed {
					failed = true
					return errors.New("not now")
				}
				return nil
			})
			cons.await(t, len(tc.want))
			zktest.WaitForNodes(t, c, path, 0)
			cons.stop(t)
			// A requeued item keeps its priority: it comes back behind b
			// only because b was taken before the requeue.
			assert.Equal(t, tc.want, cons.got())
		})
	}
}

func TestRemove(t *testing.T) {
	c := zktest.Connect(t, zktest.Shared(t))
	for _, lockPath := range []string{"", "-locks"} {
		t.Run("lock="+lockPath, func(t *testing.T) {
			path := root(t)
			opts := []queue.Option{queue.WithKind(queue.ID)}
			if lockPath != "" {
				opts = append(opts, queue.WithLockPath(path+lockPath))
			}
			q := newQueue(t, c, path, opts...)
			ctx := ctxT(t)
			for _, id := range []string{"x", "y", "x", "a/b"} {
				_, err := q.PutID(ctx, id, []byte(id))
				require.NoError(t, err)
			}
			n, err := q.Remove(ctx, "x")
			require.NoError(t, err)
			assert.Equal(t, 2, n)
			n, err = q.Remove(ctx, "a/b")
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			n, err = q.Remove(ctx, "none")
			require.NoError(t, err)
			assert.Zero(t, n)
			assert.Len(t, children(t, c, path), 1)
		})
	}
}

func TestBadInput(t *testing.T) {
	c := zktest.Connect(t, zktest.Shared(t))
	ctx := ctxT(t)
	for name, err := range map[string]error{
		"nil client": func() error { _, err := queue.New(nil, "/q"); return err }(),
		"nil option": func() error { _, err := queue.New(c, "/q", nil); return err }(),
		"bad path":   func() error { _, err := queue.New(c, "q"); return err }(),
		"bad lock":   func() error { _, err := queue.New(c, "/q", queue.WithLockPath("x/")); return err }(),
		"bad kind":   func() error { _, err := queue.New(c, "/q", queue.WithKind(9)); return err }(),
		"bad mode": func() error {
			_, err := queue.New(c, "/q", queue.WithLockPath("/l"), queue.WithErrorMode(7))
			return err
		}(),
		"mode no lock": func() error { _, err := queue.New(c, "/q", queue.WithErrorMode(queue.Drop)); return err }(),
		"nil state":    func() error { _, err := queue.New(c, "/q", queue.WithStateFunc(nil)); return err }(),
		"simple nil":   func() error { _, err := queue.NewSimple(nil, "/q"); return err }(),
		"simple path":  func() error { _, err := queue.NewSimple(c, ""); return err }(),
		"wrong kind": func() error {
			_, err := newQueue(t, c, "/q").PutPriority(ctx, 1, []byte("x"))
			return err
		}(),
		"no item": func() error { _, err := newQueue(t, c, "/q").Put(ctx); return err }(),
		"empty id": func() error {
			_, err := newQueue(t, c, "/q", queue.WithKind(queue.ID)).PutID(ctx, "", []byte("x"))
			return err
		}(),
		"old due": func() error {
			_, err := newQueue(t, c, "/q", queue.WithKind(queue.Delay)).PutDelayed(ctx, time.Time{}, []byte("x"))
			return err
		}(),
		"remove fifo": func() error { _, err := newQueue(t, c, "/q").Remove(ctx, "x"); return err }(),
		"nil handler": newQueue(t, c, "/q").Consume(ctx, nil),
		"nil ctx": func() error {
			_, err := newQueue(t, c, "/q").Put(nil, []byte("x")) //lint:ignore SA1012 a nil context is the bad input under test
			return err
		}(),
	} {
		assert.ErrorIs(t, err, queue.ErrInvalidArgument, name)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, name)
	}
}

// Two consumers with a lock path on one client share its session: the
// lock node one of them holds must not read as the other's (a lost
// create's reply is told apart by whose it is), or both are handed the
// same item at once.
func TestConsumersShareASession(t *testing.T) {
	c := zktest.Connect(t, zktest.Shared(t))
	ctx := ctxT(t)
	path := root(t)
	q := newQueue(t, c, path, queue.WithLockPath(path+"-locks"))
	_, err := q.Put(ctx, []byte("first"))
	require.NoError(t, err)
	_, err = q.Put(ctx, []byte("second"))
	require.NoError(t, err)

	release := make(chan struct{})
	a := consume(t, q, func(ctx context.Context, item []byte) error {
		if string(item) == "first" {
			<-release // holds the first item while the other looks
		}
		return nil
	})
	assert.Equal(t, []string{"first"}, a.await(t, 1))
	b := consume(t, q, nil)
	// b finds the first item locked and goes on to the second: what it
	// is handed first says whether it took the locked one.
	assert.Equal(t, "second", b.await(t, 1)[0], "the second consumer was handed the item the first holds")
	close(release)
	zktest.WaitForNodes(t, c, path, 0)
	a.stop(t) // it deletes a lock node after its item: wait for it
	b.stop(t)
	assert.Empty(t, children(t, c, path+"-locks"))
	assert.Equal(t, []string{"first"}, a.got())
	assert.Equal(t, []string{"second"}, b.got(), "an item delivered twice")
}
