package rwlock_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) {
	zktest.RunHolderIfChild(newHolderLocker) // a child process of TestHolderKilled
	zktest.Main(m)
}

// newHolderLocker builds the half ("read" or "write") a holder child takes.
func newHolderLocker(c *session.Client, path, kind string) (recipes.Locker, error) {
	l, err := rwlock.New(c, path)
	if err != nil {
		return nil, err
	}
	if kind == "read" {
		return l.ReadLock(), nil
	}
	return l.WriteLock(), nil
}

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	connect       = zktest.Connect
	ctxT          = zktest.Ctx
)

func newRW(t testing.TB, c *session.Client, path string) *rwlock.RWLock {
	t.Helper()
	l, err := rwlock.New(c, path)
	require.NoError(t, err)
	return l
}
