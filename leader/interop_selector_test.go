package leader_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/leader"
)

// goSelector is a Go participant with LeaderSelector's nodes, leading
// through Run (Curator's autoRequeue): its function holds leadership until
// the test says release.
type goSelector struct {
	id      string
	e       *leader.Election
	session int64 // its client's (one session throughout the test)
	leading atomic.Bool
	release chan struct{}
	done    chan error // Run's return
}

func newGoSelector(t *testing.T, servers []string, path, id string) *goSelector {
	c := connect(t, servers)
	sess, err := c.Session(ctxT(t))
	require.NoError(t, err)
	e, err := leader.NewSelector(c, path, id)
	require.NoError(t, err)
	g := &goSelector{id: id, e: e, session: sess.ID(), release: make(chan struct{}), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(ctxT(t))
	t.Cleanup(func() {
		cancel()
		select {
		case <-g.done:
		case <-time.After(waitLimit):
			t.Errorf("Go %s: Run did not return within %v of its context's end", id, waitLimit)
		}
	})
	go func() {
		g.done <- e.Run(ctx, func(ctx context.Context) error {
			g.leading.Store(true)
			defer g.leading.Store(false)
			select {
			case <-g.release:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	return g
}

func (g *goSelector) ID() string { return g.id }

func (g *goSelector) Leading(t *testing.T) bool {
	t.Helper()
	select {
	case err := <-g.done:
		t.Fatalf("Go %s: Run returned: %v", g.id, err)
	default:
	}
	return g.leading.Load()
}

func (g *goSelector) Session() int64 { return g.session }

func (g *goSelector) LeaderSeen(t *testing.T) string { return goLeader(t, g.e) }

func (g *goSelector) Queue(t *testing.T) []string { return goQueue(t, g.e) }

func (g *goSelector) StepDown(t *testing.T) {
	t.Helper()
	select {
	case g.release <- struct{}{}:
	case <-time.After(waitLimit):
		t.Fatalf("Go %s: its leading function did not take the release", g.id)
	}
	deadline := time.Now().Add(waitLimit)
	for g.leading.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("Go %s: still leading %v after the release", g.id, waitLimit)
		}
		time.Sleep(time.Millisecond)
	}
}

// javaSelector is a Curator LeaderSelector whose takeLeadership holds until
// released; with requeue it has autoRequeue, else it requeues when told.
type javaSelector struct {
	id      string
	requeue bool
	a       *curator.Agent
}

func newJavaSelector(t *testing.T, servers []string, path, id string, requeue bool) *javaSelector {
	j := &javaSelector{id: id, requeue: requeue, a: curator.Start(t, servers, curator.WithName("curator "+id))}
	cmd := "selector " + path + " " + id
	if requeue {
		cmd += " requeue"
	}
	j.a.DoExpect(t, cmd, "ok")
	return j
}

func (j *javaSelector) ID() string     { return j.id }
func (j *javaSelector) Session() int64 { return j.a.Session() }
func (j *javaSelector) Leading(t *testing.T) bool {
	return javaBool(t, j.a, "selector-has", "leadership")
}
func (j *javaSelector) Queue(t *testing.T) []string {
	return j.a.List(t, "selector-participants", "participants")
}

func (j *javaSelector) LeaderSeen(t *testing.T) string {
	return javaLeader(t, j.a, "selector-leader")
}

func (j *javaSelector) StepDown(t *testing.T) {
	t.Helper()
	j.a.DoExpect(t, "selector-release", "released")
	if !j.requeue {
		j.a.DoExpect(t, "selector-requeue", "requeued true")
	}
}

// TestInteropLeaderSelector: two Go selectors (Run) and two Curator
// LeaderSelectors (one with autoRequeue, one requeued by hand), in turn, in
// one election: one leader at a time through every change, the same leader
// and queue seen from both languages.
func TestInteropLeaderSelector(t *testing.T) {
	if err := curator.Available(); err != nil {
		harness.Unavailable(t, "%v; %s", err, curator.Hint)
	}
	servers := sharedServers(t)
	const path = "/interop-leader-selector"
	observer, err := leader.NewSelector(connect(t, servers), path, "observer") // never campaigns
	require.NoError(t, err)
	parts := make([]interopParticipant, 4)
	interopElection(t, observer, parts, func(i int) {
		id := fmt.Sprintf("selector-%d", i)
		if i%2 == 0 {
			parts[i] = newGoSelector(t, servers, path, "go-"+id)
		} else {
			parts[i] = newJavaSelector(t, servers, path, "java-"+id, i == 1)
		}
	})
}
