package mutex_test

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Interoperability with Apache Curator's InterProcessMutex, run in a JVM by
// package curator, on the same lock paths of a real ZooKeeper.
//
// Each test has a lock path of its own right under the root.

// interopNodeName is the name of an InterProcessMutex node (protected mode);
// ours must have the same shape.
var interopNodeName = regexp.MustCompile(`^_c_[0-9a-f-]{36}-lock-\d{10}$`)

// interopCurator starts a Curator agent with an InterProcessMutex on lockPath.
func interopCurator(t *testing.T, servers []string, lockPath string) *curator.Agent {
	t.Helper()
	a := curator.Start(t, servers)
	a.DoExpect(t, "mutex "+lockPath, "ok")
	return a
}

// interopMutex is a Go mutex on lockPath over a session of its own.
func interopMutex(t *testing.T, servers []string, lockPath string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(connect(t, servers), lockPath)
	require.NoError(t, err)
	return m
}

// interopAcquireAsync runs m.Acquire(ctx) in a goroutine; ctx ends at t's
// cleanup, so the goroutine cannot outlive the test.
func interopAcquireAsync(ctx context.Context, m *mutex.Mutex) *zktest.Pending {
	return zktest.AcquireAsync(func() (recipes.Lease, error) { return m.Acquire(ctx) })
}

// interopWaitQueue polls the participants of m until there are n, and returns them.
func interopWaitQueue(t *testing.T, m *mutex.Mutex, n int) []znode.Participant {
	t.Helper()
	var ps []znode.Participant
	deadline := time.Now().Add(waitLimit)
	for {
		var err error
		ps, err = m.Participants(ctxT(t))
		require.NoError(t, err)
		if len(ps) == n {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock queue: %d participants after %v, want %d: %s", len(ps), waitLimit, n, interopDescribe(ps))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func interopDescribe(ps []znode.Participant) string {
	s := ""
	for i, p := range ps {
		s += fmt.Sprintf("\n  %d: %s session=0x%x holder=%v", i, p.Name, p.SessionID, p.Holder)
	}
	return s
}

// interopRequireQueue checks the queue: node names (with holder first), owners and
// the Curator name shape of every node.
func interopRequireQueue(t *testing.T, ps []znode.Participant, nodes []string, sessions []int64) {
	t.Helper()
	require.Len(t, ps, len(nodes), interopDescribe(ps))
	for i, p := range ps {
		require.Regexp(t, interopNodeName, p.Name, "participant %d", i)
		require.Equal(t, nodes[i], p.Name, "participant %d:%s", i, interopDescribe(ps))
		require.Equal(t, sessions[i], p.SessionID, "owner of participant %d:%s", i, interopDescribe(ps))
		require.Equal(t, i == 0, p.Holder, "holder flag of participant %d:%s", i, interopDescribe(ps))
		require.Equal(t, "lock-", p.Kind)
	}
}

// interopLeaseNode is the name (no path) of a Go lease's lock node.
func interopLeaseNode(t *testing.T, l recipes.Lease) string {
	t.Helper()
	nl, ok := l.(znode.Lease)
	require.True(t, ok, "lease %T has no node", l)
	return path.Base(nl.Node())
}

func interopLeaseSession(t *testing.T, l recipes.Lease) int64 {
	t.Helper()
	return l.(znode.Lease).SessionID()
}
