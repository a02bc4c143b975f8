package leader_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/leader"
)

// Interoperability with Curator's LeaderLatch and LeaderSelector (Debian's
// 5.4 jars, in JVMs driven by package curator): Go and Java participants in
// one election on a real ZooKeeper.

// interopRounds is how many times leadership changes hands in a test.
const interopRounds = 12

// interopParticipant is one participant of a mixed election, Go or Java,
// driven from the test's goroutine.
type interopParticipant interface {
	ID() string
	// Leading reports whether the participant claims leadership now.
	Leading(t *testing.T) bool
	// Session is the session that owns the participant's node (0 when it
	// is not known).
	Session() int64
	// LeaderSeen is the leader's id as this participant sees it ("" none).
	LeaderSeen(t *testing.T) string
	// Queue is the ids of the election's participants, leader first, as
	// this participant sees them.
	Queue(t *testing.T) []string
	// StepDown ends the participant's leadership and queues it again.
	StepDown(t *testing.T)
}

// goLatch is a Go participant: Campaign in a goroutine, Release and
// Campaign again.
type goLatch struct {
	id   string
	e    *leader.Election
	ctx  context.Context
	won  chan *leader.Leadership
	errs chan error
	cur  *leader.Leadership
}

func newGoLatch(t *testing.T, servers []string, path, id string) *goLatch {
	g := &goLatch{id: id, e: newLatch(t, connect(t, servers), path, id), ctx: ctxT(t),
		won: make(chan *leader.Leadership, 1), errs: make(chan error, 1)}
	g.campaign()
	return g
}

// campaign campaigns in a goroutine that ends with the test's context.
func (g *goLatch) campaign() {
	go func() {
		l, err := g.e.Campaign(g.ctx)
		if err != nil {
			g.errs <- err
			return
		}
		g.won <- l
	}()
}

func (g *goLatch) ID() string { return g.id }

func (g *goLatch) Leading(t *testing.T) bool {
	t.Helper()
	select {
	case l := <-g.won:
		g.cur = l
	case err := <-g.errs:
		t.Fatalf("Go %s: Campaign: %v", g.id, err)
	default:
	}
	if g.cur == nil {
		return false
	}
	require.NoError(t, g.cur.Err(), "Go %s lost its leadership", g.id)
	return true
}

func (g *goLatch) Session() int64 {
	if g.cur == nil {
		return 0
	}
	return g.cur.Lease().SessionID()
}

func (g *goLatch) LeaderSeen(t *testing.T) string { return goLeader(t, g.e) }

func (g *goLatch) Queue(t *testing.T) []string { return goQueue(t, g.e) }

func (g *goLatch) StepDown(t *testing.T) {
	t.Helper()
	require.NotNil(t, g.cur, "Go %s steps down without leading", g.id)
	require.NoError(t, g.cur.Release(ctxT(t)))
	g.cur = nil
	g.campaign()
}

// goQueue is e's participants' ids, leader first.
// goLeader is the id of e's leader as e sees it.
func goLeader(t *testing.T, e *leader.Election) string {
	t.Helper()
	l, err := e.Leader(ctxT(t))
	require.NoError(t, err)
	return l.ID
}

func goQueue(t *testing.T, e *leader.Election) []string {
	t.Helper()
	ps, err := e.Participants(ctxT(t))
	require.NoError(t, err)
	ids := []string{}
	for _, p := range ps {
		ids = append(ids, string(p.Data))
	}
	return ids
}

// javaLatch is a Curator LeaderLatch: latch-close and a new latch to step
// down.
type javaLatch struct {
	id, path string
	a        *curator.Agent
}

func newJavaLatch(t *testing.T, servers []string, path, id string) *javaLatch {
	j := &javaLatch{id: id, path: path, a: curator.Start(t, servers, curator.WithName("curator "+id))}
	j.a.DoExpect(t, "latch "+path+" "+id, "ok")
	return j
}

func (j *javaLatch) ID() string                { return j.id }
func (j *javaLatch) Session() int64            { return j.a.Session() }
func (j *javaLatch) Leading(t *testing.T) bool { return javaBool(t, j.a, "latch-has", "leadership") }
func (j *javaLatch) Queue(t *testing.T) []string {
	return j.a.List(t, "latch-participants", "participants")
}

func (j *javaLatch) LeaderSeen(t *testing.T) string {
	return javaLeader(t, j.a, "latch-leader")
}

func (j *javaLatch) StepDown(t *testing.T) {
	t.Helper()
	j.a.DoExpect(t, "latch-close", "closed")
	j.a.DoExpect(t, "latch-has", "leadership false")
	j.a.DoExpect(t, "latch "+j.path+" "+j.id, "ok")
}

func javaBool(t *testing.T, a *curator.Agent, cmd, prefix string) bool {
	t.Helper()
	switch v := a.Value(t, cmd, prefix); v {
	case "true":
		return true
	case "false":
		return false
	default:
		t.Fatalf("%s: %s: %q", a.Name(), cmd, v)
		return false
	}
}

func javaLeader(t *testing.T, a *curator.Agent, cmd string) string {
	t.Helper()
	id := a.Value(t, cmd, "leader")
	if id == "none" {
		return ""
	}
	return id
}

// interopOneLeader polls every participant until exactly one claims
// leadership, and returns it. Two claiming at once, at any poll, fails t.
func interopOneLeader(t *testing.T, parts []interopParticipant) int {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var leading []string
		idx := -1
		for i, p := range parts {
			if p.Leading(t) {
				leading = append(leading, p.ID())
				idx = i
			}
		}
		switch {
		case len(leading) > 1:
			t.Fatalf("%d leaders at once: %q", len(leading), leading)
		case len(leading) == 1:
			return idx
		case time.Now().After(deadline):
			t.Fatalf("no leader within %v", waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// interopWaitQueue polls until the election's queue (as e sees it) is want.
func interopWaitQueue(t *testing.T, e *leader.Election, want []string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := goQueue(t, e)
		if strings.Join(got, " ") == strings.Join(want, " ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("election queue %q after %v, want %q", got, waitLimit, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// interopRotate is ids from i on, then the ones before.
func interopRotate(parts []interopParticipant, i int) []string {
	var ids []string
	for k := range parts {
		ids = append(ids, parts[(i+k)%len(parts)].ID())
	}
	return ids
}

// interopElection runs a mixed election: the participants join in order
// (so that the queue alternates languages), then, round after round, the
// leader must be the head of the queue, the only one claiming leadership,
// and the leader every participant sees (Go's Leader, Curator's getLeader),
// with the same queue on both sides; then it steps down and queues again at
// the back, so that leadership passes to the other language every time.
func interopElection(t *testing.T, observer *leader.Election, parts []interopParticipant, join func(i int)) {
	t.Helper()
	var joined []string
	for i := range parts {
		join(i)
		joined = append(joined, parts[i].ID())
		interopWaitQueue(t, observer, joined)
	}
	var leaders []string
	defer func() { t.Logf("leaders in turn: %s", strings.Join(leaders, " ")) }()
	for round := range interopRounds {
		want := round % len(parts)
		queue := interopRotate(parts, want)
		idx := interopOneLeader(t, parts)
		lead := parts[idx]
		leaders = append(leaders, lead.ID())
		require.Equal(t, parts[want].ID(), lead.ID(), "round %d: the head of the queue leads", round)

		seen, err := observer.Leader(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, lead.ID(), seen.ID, "round %d: the observer's leader", round)
		require.Equal(t, lead.Session(), seen.SessionID, "round %d: the leader's node's owner", round)
		for _, p := range parts {
			require.Equal(t, lead.ID(), p.LeaderSeen(t), "round %d: the leader as %s sees it", round, p.ID())
			require.Equal(t, queue, p.Queue(t), "round %d: the queue as %s sees it", round, p.ID())
		}
		require.Equal(t, idx, interopOneLeader(t, parts), "round %d: still the one leader", round)

		lead.StepDown(t)
		interopWaitQueue(t, observer, interopRotate(parts, want+1))
	}
}

// TestInteropLeaderLatch: two Go latches and two Curator LeaderLatches, in
// turn, in one election: one leader at a time through every change of
// leader, the same leader and queue seen from both languages.
func TestInteropLeaderLatch(t *testing.T) {
	if err := curator.Available(); err != nil {
		harness.Unavailable(t, "%v; %s", err, curator.Hint)
	}
	servers := sharedServers(t)
	const path = "/interop-leader-latch"
	observer := newLatch(t, connect(t, servers), path, "observer") // never campaigns
	parts := make([]interopParticipant, 4)
	interopElection(t, observer, parts, func(i int) {
		id := fmt.Sprintf("latch-%d", i)
		if i%2 == 0 {
			parts[i] = newGoLatch(t, servers, path, "go-"+id)
		} else {
			parts[i] = newJavaLatch(t, servers, path, "java-"+id)
		}
	})
}
