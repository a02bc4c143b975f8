package cache_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// writer changes the tree at root from another client (create, write,
// delete, delete and create again, nodes with children among them) until
// stopped; the nodes named still-* it never touches.
type writer struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	ops  int
}

func startWriter(t *testing.T, c *session.Client, root string, seed uint64) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	rnd := rand.New(rand.NewPCG(seed, seed))
	ctx := ctxT(t)
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			p := fmt.Sprintf("%s/n%d", root, rnd.IntN(8))
			if rnd.IntN(3) == 0 {
				p = fmt.Sprintf("%s/n%d/k%d", root, rnd.IntN(8), rnd.IntN(3))
			}
			data := []byte(fmt.Sprint(rnd.Uint32()))
			var err error
			switch rnd.IntN(4) {
			case 0:
				_, err = c.Create(ctx, p, data, session.Persistent)
			case 1:
				_, err = c.Set(ctx, p, data, -1)
			case 2:
				err = c.Delete(ctx, p, -1)
			case 3:
				if err = c.Delete(ctx, p, -1); err == nil {
					_, err = c.Create(ctx, p, data, session.Persistent)
				}
			}
			switch {
			case err == nil:
				w.mu.Lock()
				w.ops++
				w.mu.Unlock()
			case errors.Is(err, session.ErrNoNode), errors.Is(err, session.ErrNodeExists), errors.Is(err, session.ErrNotEmpty):
			case ctx.Err() != nil:
				return
			default:
				t.Errorf("writer: %v", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return w
}

// halt stops the writer and returns how many writes it made.
func (w *writer) halt() int {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ops
}

// waitWrites waits until the writer has made n more writes than it had.
func (w *writer) waitWrites(t *testing.T, n int) {
	t.Helper()
	w.mu.Lock()
	target := w.ops + n
	w.mu.Unlock()
	deadline := time.Now().Add(waitLimit)
	for {
		w.mu.Lock()
		ops := w.ops
		w.mu.Unlock()
		if ops >= target {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer made %d of %d writes", ops-target+n, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The cache through a fault, with a writer at work meanwhile: once quiet,
// the cache's view and the fold of its events are the server's tree; the
// cache said Stale, then Fresh; a node nobody touched got no event after
// the first load.
func TestFaults(t *testing.T) {
	z := harness.StartZK(t, 1)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange)
		heal  func(t *testing.T, p *harness.Proxy)
		lost  bool
	}{
		{name: "cut", fault: func(t *testing.T, p *harness.Proxy, _ <-chan session.StateChange) { p.Cut(t) },
			heal: func(t *testing.T, p *harness.Proxy) { p.Restore(t) }},
		{name: "blackhole past the session timeout", lost: true,
			fault: func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange) {
				p.Blackhole(t)
				zktest.AwaitState(t, states, session.Lost)
			},
			heal: func(t *testing.T, p *harness.Proxy) { p.Restore(t) }},
		{name: "server restart",
			fault: func(t *testing.T, _ *harness.Proxy, _ <-chan session.StateChange) { z.Members()[0].Stop(t) },
			heal:  func(t *testing.T, _ *harness.Proxy) { z.Members()[0].Start(t); z.WaitReady(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := "/fault-" + strings.ReplaceAll(tc.name, " ", "-")
			p := harness.NewProxy(t, z.Servers()[0])
			c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			writerClient := connect(t, z.Servers(), session.WithSessionTimeout(20*time.Second))
			mkTree(t, writerClient, root, root+"/still-1=s", root+"/still-1/under=u", root+"/n1=x", root+"/n1/k1=y")
			states, err := c.Subscribe(ctxT(t))
			require.NoError(t, err)
			before := c.CurrentSession().ID()

			x := start(t, c, root)
			first := readUntil(t, x, cache.Initialized)
			events := record(x.Events())
			w := startWriter(t, writerClient, root, uint64(len(tc.name)))
			w.waitWrites(t, 20)

			tc.fault(t, p, states)
			awaitStale(t, x)
			if tc.name != "server restart" { // the writer needs the server
				w.waitWrites(t, 20)
			}
			tc.heal(t, p)
			if tc.name == "server restart" {
				w.waitWrites(t, 20)
			}
			w.halt()

			resynced(t, x, c, root, first, events)
			if tc.lost {
				assert.NotEqual(t, before, c.CurrentSession().ID(), "a new session")
			}
		})
	}
}

// resynced checks a cache on root (the tree of a writer, now halted) after
// a fault, once quiet: its view and the fold of its events (first, then
// those events recorded) are the tree that reader reads; it is connected
// and fresh; it said Stale, and its last word on freshness was Fresh; a
// node nobody touched (still-*) got no event after the first load.
func resynced(t *testing.T, x *cache.Cache, reader *session.Client, root string, first []cache.Event, events *recorder) {
	t.Helper()
	want := settle(t, x, reader, root, -1)
	awaitFold(t, events, first, want)
	f := x.Freshness()
	assert.True(t, f.Connected)
	assert.True(t, f.StaleSince.IsZero())
	var kinds []cache.EventType
	for _, ev := range events.all() {
		if strings.Contains(ev.Node.Path, "/still-") {
			t.Errorf("event %v for %s, which nobody touched", ev.Type, ev.Node.Path)
		}
		if ev.Type == cache.Stale || ev.Type == cache.Fresh {
			kinds = append(kinds, ev.Type)
		}
	}
	require.NotEmpty(t, kinds, "no Stale and no Fresh")
	assert.Equal(t, cache.Stale, kinds[0])
	assert.Equal(t, cache.Fresh, kinds[len(kinds)-1])
}

// awaitFold waits until the events recorded after first fold into want
// (the recorder may lag behind the view), bounded by waitLimit.
func awaitFold(t *testing.T, r *recorder, first []cache.Event, want map[string]cache.Node) map[string]cache.Node {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := fold(t, append(append([]cache.Event(nil), first...), r.all()...))
		d := same(want, got)
		if d == "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the events never told the server's tree: %s", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func awaitStale(t *testing.T, x *cache.Cache) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for x.Freshness().StaleSince.IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the cache never said it was stale")
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.False(t, x.Freshness().Connected)
}
