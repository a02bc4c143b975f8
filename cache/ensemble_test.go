package cache_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/session"
)

// watcher is a cache on one member of an ensemble, through a client of
// its own that reaches that member only.
type watcher struct {
	name   string
	c      *session.Client
	x      *cache.Cache
	first  []cache.Event // up to Initialized
	events *recorder     // the rest
}

// watchOn starts a cache on root through a client of member m alone; the
// client is connected with t, so that it shares t's namespace.
func watchOn(t *testing.T, name string, m *harness.ZKMember, root string, opts ...session.Option) *watcher {
	t.Helper()
	c := connect(t, []string{m.Addr()}, opts...)
	x := start(t, c, root)
	return &watcher{name: name, c: c, x: x, first: readUntil(t, x, cache.Initialized), events: record(x.Events())}
}

// An ensemble of 3 voters and an observer loses its leader (killed) while
// a writer on a follower changes the tree: a cache on the other follower
// and one on the observer, each through that member alone, say Stale (a
// member that loses its leader closes its clients' connections), then,
// once a leader is elected and the writer is quiet, Fresh, and their
// views and the folds of their events are the server's tree.
func TestLeaderLost(t *testing.T) {
	t.Parallel()
	z := harness.StartZKObserved(t, 3, 1)
	lead := z.Leader(t)
	followers := z.Followers(t)
	const root = "/leader-lost"
	// Session timeouts far longer than an election: the sessions live on.
	writerClient := connect(t, []string{followers[1].Addr()}, session.WithSessionTimeout(20*time.Second))
	mkTree(t, writerClient, root, root+"/still-1=s", root+"/still-1/under=u", root+"/n1=x", root+"/n1/k1=y")
	var watchers []*watcher
	for _, w := range []struct {
		name string
		m    *harness.ZKMember
	}{{"on a follower", followers[0]}, {"on the observer", z.Observers()[0]}} {
		watchers = append(watchers, watchOn(t, w.name, w.m, root, session.WithSessionTimeout(20*time.Second)))
	}
	sessions := make([]int64, len(watchers))
	for i, w := range watchers {
		sessions[i] = w.c.CurrentSession().ID()
	}
	w := startWriter(t, writerClient, root, 30)
	w.waitWrites(t, 20)

	killed := time.Now()
	lead.Kill(t)
	for _, wa := range watchers {
		// The event, not Freshness: the cache may be fresh again before
		// a poll would see it stale.
		awaitRead(t, wa.events, cache.Stale, killed)
	}
	w.waitWrites(t, 20) // under the new leader
	t.Logf("the writer made %d writes", w.halt())
	t.Logf("new leader: %s", z.Leader(t))

	for i, wa := range watchers {
		t.Run(wa.name, func(t *testing.T) {
			resynced(t, wa.x, writerClient, root, wa.first, wa.events)
			// The session outlives an election (20 s against about a
			// second): the cache read its view again in the same
			// session, whose watches the client re-armed.
			assert.Equal(t, sessions[i], wa.c.CurrentSession().ID(), "the same session")
		})
	}
}

// cutTimeout is the session timeout of the caches' clients on the cut
// members: a cut member answers its clients for syncLimit × tickTime =
// 10 s (ZooKeeper's default timing), the leader expires their sessions
// 6 s after it last heard of them.
const cutTimeout = 6 * time.Second

// A cache whose only server is a member cut off from the quorum (3 voters
// and an observer, ZooKeeper's default timing; a follower and the observer
// cut at once), under each error policy: it says Stale (Freshness: not connected, stale since the suspension) no
// later than a mutex lease held through its client is told, and so
// before a client on the majority side is granted that lock; while the
// cut lasts, through the member's dropping its clients, the writes of a
// writer on the majority side are not shown as current: the cache keeps
// its last view, marked stale, and says no Fresh. Once the member is back,
// the cache reads its view again: Fresh, and its view and the fold of its
// events are the server's tree.
func TestMemberCutOffFromTheQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-member ensemble with ZooKeeper's default timing")
	}
	t.Parallel()
	z := harness.StartZKCuttable(t, 3, 1, harness.DefaultTiming)
	follower := z.Followers(t)[0]
	majority := slices.DeleteFunc(z.VoterServers(), func(addr string) bool { return addr == follower.Addr() })
	cut := map[string]*harness.ZKMember{"follower": follower, "observer": z.Observers()[0]}
	const root = "/cut"
	writerClient := connect(t, majority, session.WithSessionTimeout(20*time.Second))
	successors := connect(t, majority)
	mkTree(t, writerClient, root, root+"/still-1=s", root+"/still-1/under=u", root+"/n1=x", root+"/n1/k1=y")

	type side struct {
		*watcher
		race *holdertest.Race
	}
	var sides []side
	for _, what := range []string{"follower", "observer"} {
		for _, p := range []struct {
			name   string
			policy session.ErrorPolicy
		}{{"SuspendedIsLost", session.SuspendedIsLost}, {"OnlyLostIsLost", session.OnlyLostIsLost}} {
			wa := watchOn(t, "on a cut "+what+", "+p.name, cut[what], root,
				session.WithSessionTimeout(cutTimeout), session.WithErrorPolicy(p.policy))
			require.Equal(t, cutTimeout, wa.c.SessionTimeout(), "the server granted another timeout")
			lock := fmt.Sprintf("/lock-%s-%d", what, p.policy)
			h, err := mutex.New(wa.c, lock)
			require.NoError(t, err)
			s, err := mutex.New(successors, lock)
			require.NoError(t, err)
			sides = append(sides, side{wa, holdertest.Queue(t, h, s)})
		}
	}
	w := startWriter(t, writerClient, root, 31)
	w.waitWrites(t, 20)

	cutAt := time.Now()
	for _, m := range cut {
		z.CutMember(t, m)
	}
	for _, s := range sides {
		t.Run(s.name+": stale no later than the lease is told", func(t *testing.T) {
			margin := s.race.Finish(t, 0)
			told := s.race.Told()
			granted := told.Add(margin)
			f := s.x.Freshness()
			assert.False(t, f.Connected, "connected, when the lease was told")
			require.False(t, f.StaleSince.IsZero(), "fresh, when the lease was told")
			assert.False(t, f.StaleSince.After(told), "stale since %v, after the lease was told (%v)",
				f.StaleSince.Sub(cutAt), told.Sub(cutAt))
			staleRead := awaitRead(t, s.events, cache.Stale, cutAt)
			assert.True(t, staleRead.Before(granted), "Stale read %v after the successor's grant",
				staleRead.Sub(granted))
			t.Logf("after the cut: stale since %v, lease told %v, Stale read %v, successor granted %v",
				f.StaleSince.Sub(cutAt).Round(time.Millisecond), told.Sub(cutAt).Round(time.Millisecond),
				staleRead.Sub(cutAt).Round(time.Millisecond), granted.Sub(cutAt).Round(time.Millisecond))
		})
	}

	// The majority's writes go on; a cut member drops its clients once
	// its read of the leader times out. Until then, and after, each cache
	// keeps the view it had when its lease was told, marked stale.
	kept := make([]map[string]cache.Node, len(sides))
	for i, s := range sides {
		kept[i] = keyed(s.x.Snapshot())
	}
	w.waitWrites(t, 20)
	serving := func() bool {
		for what, m := range cut {
			if mode, err := m.Mode(); err == nil && mode == what {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(waitLimit)
	for serving() {
		if time.Now().After(deadline) {
			t.Fatalf("a cut member still serves %v after the cut", waitLimit)
		}
		for i, s := range sides {
			notCurrent(t, s.watcher, kept[i], cutAt)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the cut members stopped serving %v after the cut", time.Since(cutAt).Round(time.Millisecond))
	w.waitWrites(t, 20)
	current := tree(t, writerClient, root, -1)
	for i, s := range sides {
		notCurrent(t, s.watcher, kept[i], cutAt)
		assert.NotEmpty(t, same(current, kept[i]), "%s: the majority's writes since the cut are in the view", s.name)
	}

	for _, m := range cut {
		z.RestoreMember(t, m)
	}
	z.WaitReady(t)
	w.waitWrites(t, 20) // with the member back
	t.Logf("the writer made %d writes", w.halt())
	for _, s := range sides {
		t.Run(s.name+": resynchronised", func(t *testing.T) {
			resynced(t, s.x, writerClient, root, s.first, s.events)
		})
	}
}

// notCurrent checks that wa's cache keeps the view kept, says it is
// stale, and has said no Fresh since from.
func notCurrent(t *testing.T, wa *watcher, kept map[string]cache.Node, from time.Time) {
	t.Helper()
	if d := same(kept, keyed(wa.x.Snapshot())); d != "" {
		t.Errorf("%s: the view changed while its member is cut off: %s", wa.name, d)
	}
	f := wa.x.Freshness()
	assert.False(t, f.Connected, "%s: connected while its member is cut off", wa.name)
	assert.False(t, f.StaleSince.IsZero(), "%s: fresh while its member is cut off", wa.name)
	evs, _ := wa.events.since(from)
	for _, ev := range evs {
		if ev.Type == cache.Fresh {
			t.Fatalf("%s: Fresh while its member is cut off", wa.name)
		}
	}
}

// awaitRead waits until r has read an event of type typ at or after from,
// bounded by waitLimit, and returns when it read the first.
func awaitRead(t *testing.T, r *recorder, typ cache.EventType, from time.Time) time.Time {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		evs, at := r.since(from)
		for i, ev := range evs {
			if ev.Type == typ {
				return at[i]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %v within %v", typ, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
