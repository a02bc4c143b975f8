package queue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) { zktest.Main(m) }

const waitLimit = zktest.WaitLimit

var ctxT = zktest.Ctx

// run tells this test process's nodes from an earlier process's on a
// shared server; runs numbers the roots of one process (go test -count=N
// runs a test N times under one name).
var (
	run  = time.Now().UnixNano()
	runs atomic.Int64
)

// root is a path of t's own (of this run of it) on the shared server.
func root(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/queue-test-%d-%d-%s", run, runs.Add(1), name)
}

// consumer runs q.Consume on a goroutine of its own and records what its
// handler is given; handle, when set, decides the handler's error.
type consumer struct {
	mu     sync.Mutex
	items  []string
	cancel context.CancelFunc
	done   chan error
}

func consume(t testing.TB, q *queue.Queue, handle func(ctx context.Context, item []byte) error) *consumer {
	ctx, cancel := context.WithCancel(ctxT(t))
	c := &consumer{cancel: cancel, done: make(chan error, 1)}
	go func() {
		c.done <- q.Consume(ctx, func(ctx context.Context, item []byte) error {
			c.mu.Lock()
			c.items = append(c.items, string(item))
			c.mu.Unlock()
			if handle != nil {
				return handle(ctx, item)
			}
			return nil
		})
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop ends the consumer and waits for Consume to return.
func (c *consumer) stop(t testing.TB) {
	c.cancel()
	select {
	case <-c.done:
		c.done <- nil // for a second stop
	case <-time.After(waitLimit):
		t.Errorf("Consume did not return within %v", waitLimit)
	}
}

func (c *consumer) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.items...)
}

// await waits until the consumer was given n items and returns them.
func (c *consumer) await(t testing.TB, n int) []string {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := c.got()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer got %d of %d items: %q", len(got), n, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitItems waits until got returns at least n items, and returns them.
func awaitItems(t testing.TB, n int, got func() []string) []string {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var all []string
	for {
		all = append(all, got()...)
		if len(all) >= n {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d of %d items: %q", len(all), n, all)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// children is path's children (none when it is gone).
func children(t testing.TB, c *session.Client, path string) []string {
	t.Helper()
	return zktest.Children(t, c, path)
}

func newQueue(t testing.TB, c *session.Client, path string, opts ...queue.Option) *queue.Queue {
	t.Helper()
	q, err := queue.New(c, path, opts...)
	require.NoError(t, err)
	return q
}
