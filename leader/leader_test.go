package leader_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// An election is a lock: the contract suite holds for it, with either
// flavour of nodes.
func TestContract(t *testing.T) {
	for _, flavour := range []struct {
		name string
		new  func(*session.Client, string, string) (*leader.Election, error)
	}{{"latch", leader.NewLatch}, {"selector", leader.NewSelector}} {
		t.Run(flavour.name, func(t *testing.T) {
			servers := sharedServers(t)
			observer := connect(t, servers)
			var mu sync.Mutex
			proxies := map[int64]*harness.Proxy{}
			n := 0
			locktest.Run(t, locktest.Backend{
				New: func(t *testing.T, name string) recipes.Locker {
					p := harness.NewProxy(t, servers[0])
					c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
					s, err := c.Session(ctxT(t))
					require.NoError(t, err)
					mu.Lock()
					proxies[s.ID()] = p
					n++
					id := fmt.Sprintf("participant-%d", n)
					mu.Unlock()
					e, err := flavour.new(c, "/election-contract/"+flavour.name+"/"+name, id)
					require.NoError(t, err)
					return e
				},
				Lose: func(t *testing.T, name string, lease recipes.Lease) {
					mu.Lock()
					p := proxies[lease.(znode.Lease).SessionID()]
					mu.Unlock()
					p.Blackhole(t)
				},
				Leftovers: func(t *testing.T, name string) []string {
					kids, _, err := observer.Children(ctxT(t), "/election-contract/"+flavour.name+"/"+name)
					if err != nil {
						return nil
					}
					return kids
				},
				Reentrant: true,
			})
		})
	}
}

// Curator's node names and data: the participant id.
func TestNodesAreCurators(t *testing.T) {
	c := connect(t, sharedServers(t))
	ctx := ctxT(t)
	for _, tc := range []struct {
		new  func(*session.Client, string, string) (*leader.Election, error)
		name string
	}{{leader.NewLatch, "-latch-"}, {leader.NewSelector, "-lock-"}} {
		e, err := tc.new(c, "/election-nodes"+tc.name, "me")
		require.NoError(t, err)
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		base := l.Node()[strings.LastIndexByte(l.Node(), '/')+1:]
		assert.Regexp(t, `^_c_[0-9a-f-]{36}`+tc.name+`\d{10}$`, base)
		data, _, err := c.Get(ctx, l.Node())
		require.NoError(t, err)
		assert.Equal(t, "me", string(data))
		assert.Positive(t, zktest.Token(t, l))
		require.NoError(t, l.Release(ctx))
		require.ErrorIs(t, l.Release(ctx), recipes.ErrNotHeld, "a leadership ends like a lease")
	}
}

// Observe shows no leader, a leader, each change, and no leader again.
func TestObserve(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/election-observe"
	watcher := newLatch(t, connect(t, servers), path, "watcher")
	seen := watcher.Observe(ctx)
	next := func(want string) leader.Leader {
		t.Helper()
		select {
		case l := <-seen:
			assert.Equal(t, want, l.ID)
			assert.Equal(t, want == "", l.None())
			return l
		case <-time.After(waitLimit):
			t.Fatalf("no leader %q observed", want)
			return leader.Leader{}
		}
	}
	next("") // the path does not exist yet

	a := newLatch(t, connect(t, servers), path, "a")
	la, err := a.Campaign(ctx)
	require.NoError(t, err)
	got := next("a")
	assert.Equal(t, la.Node(), got.Node)

	b := newLatch(t, connect(t, servers), path, "b")
	lbc := make(chan *leader.Leadership, 1)
	go func() {
		l, err := b.Campaign(ctx)
		assert.NoError(t, err)
		lbc <- l
	}()
	require.Eventually(t, func() bool {
		ps, err := a.Participants(ctx)
		return err == nil && len(ps) == 2
	}, waitLimit, 10*time.Millisecond)
	now, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", now.ID, "a participant sees the leader too")

	require.NoError(t, la.Release(ctx))
	next("b")
	lb := <-lbc
	require.NoError(t, lb.Release(ctx))
	next("")
}

// Release hands leadership over at once: the successor leads long before
// the resigned leader's session could have expired (60s here).
func TestReleaseHandsOverAtOnce(t *testing.T) {
	servers := sharedServers(t)
	const path = "/election-resign"
	first := newLatch(t, connect(t, servers, session.WithSessionTimeout(60*time.Second)), path, "first")
	second := newLatch(t, connect(t, servers), path, "second")
	ctx := ctxT(t)
	l1, err := first.Campaign(ctx)
	require.NoError(t, err)
	won := make(chan *leader.Leadership, 1)
	go func() {
		l, err := second.Campaign(ctx)
		assert.NoError(t, err)
		won <- l
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, l1.Release(ctx))
	select {
	case l2 := <-won:
		assert.Greater(t, zktest.Token(t, l2), zktest.Token(t, l1))
		require.NoError(t, l2.Release(ctx))
	case <-time.After(20 * time.Second):
		t.Fatal("the successor did not lead after the resignation")
	}
}

// Run leads, requeues after each term, and never lets two participants
// lead at once; it returns when ctx ends.
func TestRunRequeuesWithOneLeaderAtATime(t *testing.T) {
	servers := sharedServers(t)
	const path = "/election-run"
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var leading, terms atomic.Int32
	var overlap atomic.Bool
	var wg sync.WaitGroup
	for i := range 3 {
		e := newLatch(t, connect(t, servers), path, fmt.Sprint("p", i))
		wg.Go(func() {
			err := e.Run(ctx, func(ctx context.Context) error {
				if leading.Add(1) > 1 {
					overlap.Store(true)
				}
				time.Sleep(leader.ShortTerm) // not short: Run requeues at once
				leading.Add(-1)
				if terms.Add(1) >= 15 {
					cancel()
				}
				return errors.New("a term's error does not stop Run")
			})
			assert.ErrorIs(t, err, context.Canceled)
		})
	}
	wg.Wait()
	assert.False(t, overlap.Load(), "two leaders at once")
	assert.GreaterOrEqual(t, terms.Load(), int32(15))
	ps, err := newLatch(t, connect(t, servers), path, "x").Participants(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, ps, "every node removed")
}

// fn's errors never stop Run, also those that wrap recipes.ErrNotAcquired
// (fn waiting on another lock, or a TryAcquire of one that is held): Run
// tells its own campaign's failure from fn's. Terms that end at once are
// followed by a pause (requeuePause's test), not a storm of campaigns.
func TestRunGoesOnAfterFnsNotAcquired(t *testing.T) {
	e := newLatch(t, connect(t, sharedServers(t)), "/election-run-fn-errors", "p")
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var terms atomic.Int32
	err := e.Run(ctx, func(ctx context.Context) error {
		if terms.Add(1) == 3 {
			cancel()
		}
		return fmt.Errorf("another lock: %w", recipes.ErrLocked)
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(3), terms.Load(), "Run went on after fn's errors")
}

// Run stops, with the error, when its campaign cannot go on.
func TestRunStopsWhenTheClientCloses(t *testing.T) {
	c := connect(t, sharedServers(t))
	e := newLatch(t, c, "/election-run-closed", "p")
	var terms atomic.Int32
	err := e.Run(ctxT(t), func(ctx context.Context) error {
		if terms.Add(1) == 1 {
			c.Close()
		}
		return nil
	})
	assert.ErrorIs(t, err, session.ErrClosed)
	assert.Equal(t, int32(1), terms.Load())
}

// Observe ends, its channel closed, when the client is closed, even with a
// context that never ends.
func TestObserveEndsWithTheClient(t *testing.T) {
	c := connect(t, sharedServers(t))
	seen := newLatch(t, c, "/election-observe-close", "watcher").Observe(context.Background())
	select {
	case <-seen:
	case <-time.After(waitLimit):
		t.Fatal("no first observation")
	}
	c.Close()
	deadline := time.After(waitLimit)
	for {
		select {
		case _, ok := <-seen:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("Observe's channel still open %v after Close", waitLimit)
		}
	}
}

func TestBadInput(t *testing.T) {
	c := connect(t, sharedServers(t))
	e := newLatch(t, c, "/election-bad", "id")
	for _, tc := range []struct {
		why string
		err func() error
	}{
		{"latch: nil client", func() error { _, err := leader.NewLatch(nil, "/x", "id"); return err }},
		{"latch: relative path", func() error { _, err := leader.NewLatch(c, "x", "id"); return err }},
		{"latch: the root", func() error { _, err := leader.NewLatch(c, "/", "id"); return err }},
		{"selector: nil client", func() error { _, err := leader.NewSelector(nil, "/x", "id"); return err }},
		{"selector: relative path", func() error { _, err := leader.NewSelector(c, "x", "id"); return err }},
		{"Run: nil function", func() error { return e.Run(ctxT(t), nil) }},
		{"Lead: nil function", func() error { return e.Lead(ctxT(t), nil) }},
	} {
		assert.ErrorIs(t, tc.err(), recipes.ErrInvalidArgument, tc.why)
	}
}

func TestString(t *testing.T) {
	c := connect(t, sharedServers(t))
	assert.Equal(t, "leader /election/orders", newLatch(t, c, "/election/orders", "id").String())
	s, err := leader.NewSelector(c, "/election/orders", "id")
	require.NoError(t, err)
	assert.Equal(t, "leader /election/orders", s.String())
}
