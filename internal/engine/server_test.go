package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// The engine on a real ZooKeeper, under real faults (server_*_test.go):
// what the fakes of the package's own tests cannot show. The lock is the
// engine's simplest, built as the mutex recipe builds it (mutex.New), so
// these tests need no recipe; the mutex package tests only its shell.

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	connect       = zktest.Connect
	ctxT          = zktest.Ctx
	children      = zktest.Children
	waitForNodes  = zktest.WaitForNodes
)

// lockName is the mutex's node name (mutex.LockName, Curator's).
const lockName = "lock-"

// testMutex is an exclusive engine.Lock with the Locker's methods.
type testMutex struct{ l *engine.Lock }

var _ recipes.Locker = testMutex{}

func (m testMutex) Acquire(ctx context.Context) (recipes.Lease, error) {
	return m.l.Acquire(ctx, false)
}

func (m testMutex) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return m.l.Acquire(ctx, true)
}

func (m testMutex) Participants(ctx context.Context) ([]znode.Participant, error) {
	return m.l.Participants(ctx)
}

// newMutex is the lock mutex.New(c, path) makes: one holder, lock-
// nodes, the mutex's default lookahead.
func newMutex(t testing.TB, c *session.Client, path string) testMutex {
	t.Helper()
	return newMutexWithData(t, c, path, nil)
}

// newMutexWithData is newMutex with data in its nodes
// (mutex.New(c, path, mutex.WithData(data))).
func newMutexWithData(t testing.TB, c *session.Client, path string, data []byte) testMutex {
	t.Helper()
	require.NoError(t, engine.CheckPath(c, path))
	driver := engine.LeaseDriver{Leases: 1, Kind: lockName, Lookahead: true}
	return testMutex{engine.NewLock(engine.Client(c), "mutex", "mutex "+path, path, lockName, []string{lockName}, driver, data)}
}
